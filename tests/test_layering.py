"""Lower layers never import higher ones (module-level imports; DESIGN.md's arrows).

Lazy imports inside functions are allowed where a lower layer must call up at run
time (Tensor.backward calls the engine; check_graph lists the registered ops).
"""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "src" / "tapegrad"

HIGH = {
    "nn",
    "optim",
    "jit",
    "utils",
    "func",
    "viz",
    "serialization",
    "demo",
    "cli",
    "linalg",
    "distributed",
}
FORBIDDEN = {
    "core": HIGH | {"autograd", "ops"},
    "autograd": HIGH | {"ops"},
    "ops": HIGH,
    "nn": {"jit", "demo", "cli", "utils"},
    "optim": {"nn", "jit", "demo", "cli"},
    "distributed": {"nn", "optim", "jit", "demo", "cli", "utils", "ops"},
}
CORE = {"tensor", "grad_mode", "_dtypes", "_backend", "creation", "_trace"}


def _layer(path: pathlib.Path):
    rel = path.relative_to(PACKAGE).parts
    if len(rel) == 1:
        return "core" if path.stem in CORE else None
    return rel[0] if rel[0] in FORBIDDEN else None


def _top_level_targets(path: pathlib.Path):
    """First package component of every module-level import (relative or absolute)."""
    tree = ast.parse(path.read_text())
    rel = path.relative_to(PACKAGE).parts
    depth = len(rel) - 1  # folders below the package
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                parts = (node.module or "").split(".")
                if parts[0] == "tapegrad" and len(parts) > 1:
                    yield parts[1]
                continue
            up = node.level - 1  # levels above this file's folder
            base = list(rel[:-1])[: max(depth - up, 0)]
            module = base + (node.module.split(".") if node.module else [])
            if module:
                yield module[0]
            else:
                yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "tapegrad" and len(parts) > 1:
                    yield parts[1]


FILES = sorted(p for p in PACKAGE.rglob("*.py") if _layer(p))


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(PACKAGE)) for p in FILES])
def test_no_upward_imports(path):
    layer = _layer(path)
    bad = sorted(set(_top_level_targets(path)) & FORBIDDEN[layer])
    assert not bad, f"{path.relative_to(PACKAGE)} ({layer}) imports higher layers: {bad}"
