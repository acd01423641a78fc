"""docs/ops.md is generated from the registry: the committed file must be up to date."""

import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def test_ops_doc_is_up_to_date():
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        import gen_ops_doc  # noqa: PLC0415
    finally:
        sys.path.pop(0)
    with open(os.path.join(ROOT, "docs", "ops.md"), encoding="utf-8") as f:
        committed = f.read()
    assert committed == gen_ops_doc.render(), (
        "docs/ops.md is out of date: run PYTHONPATH=src python tools/gen_ops_doc.py"
    )


def test_every_registered_op_is_listed():
    from tapegrad.ops import OPS  # noqa: PLC0415

    with open(os.path.join(ROOT, "docs", "ops.md"), encoding="utf-8") as f:
        text = f.read()
    for name in OPS:
        shown = name[len("special_") :] if name.startswith("special_") else name
        assert f"{shown}`" in text, f"{name} is missing from docs/ops.md"
