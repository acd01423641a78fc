"""tapegrad against torch on bfloat16 (or float16) inputs: result dtypes, values, gradients.

    PYTHONPATH=src python tools/half_parity.py [--dtype float16] [--opdb] [--only NAME ...]

Runs every op-table row (tests/optable) through tests/half_harness.py, and with ``--opdb``
the first sample inputs of every OpInfo of torch's op_db that supports the dtype on the CPU
through tests/opdb_harness.py at the dtype's tolerances. Prints one line per mismatch, then
counts by kind (dtype, values, error where torch computes).
"""

from __future__ import annotations

import argparse
import collections
import itertools
import os
import re
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402
from tests import half_harness, opdb_harness  # noqa: E402
from tests.optable import ALL_CASES  # noqa: E402


def _kind(message: str) -> str:
    if "dtype" in message and "values" not in message:
        return "dtype"
    if "values differ" in message or "!= torch's" in message:
        return "values"
    if re.search(r"raises|Error", message):
        return "error"
    return "other"


def optable(dtype, only):
    import torch  # noqa: PLC0415

    counts = collections.Counter()
    for case in ALL_CASES:
        if not case.torch or (only and case.op not in only):
            continue
        try:
            status = half_harness.check_row(case, torch, dtype)
        except half_harness.HalfMismatch as e:
            counts[_kind(str(e))] += 1
            print(f"optable {case.id:40} {e}")
            continue
        counts["ok" if status else "torch-unsupported"] += 1
    return counts


def opdb(dtype, only):
    import torch  # noqa: PLC0415

    tdtype = getattr(torch, dtype)
    opdb_harness.RTOL, opdb_harness.ATOL = half_harness.TOL[dtype]
    counts = collections.Counter()
    for op in opdb_harness.load_op_db():
        name = opdb_harness.full_name(op)
        if only and op.name not in only and name not in only:
            continue
        if opdb_harness.is_internal(op) or tdtype not in op.supported_dtypes("cpu"):
            continue
        fn = opdb_harness.resolve(op)
        if fn is None:
            continue
        kw = {"device": "cpu", "dtype": tdtype, "requires_grad": op.supports_autograd}
        try:
            cases = list(itertools.islice(op.sample_inputs(**kw), opdb_harness.N_SAMPLES))
        except Exception:  # noqa: BLE001 - torch's sample generator
            continue
        cases = [s for s in cases if opdb_harness._small(s)]
        message = None
        for k, sample in enumerate(cases):
            try:
                with np.errstate(all="ignore"):
                    opdb_harness.run_sample(op, fn, sample, seed=k)
            except Exception as e:  # noqa: BLE001
                message = f"sample {k}: {type(e).__name__}: {e}"[:200]
                break
        if message is None:
            counts["ok"] += 1
        else:
            counts[_kind(message)] += 1
            print(f"opdb    {name:40} {message}")
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="bfloat16", choices=sorted(half_harness.TOL))
    parser.add_argument("--opdb", action="store_true", help="also torch's op_db samples")
    parser.add_argument("--only", nargs="*", help="op names to run (default: all)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    print("op table:", dict(optable(args.dtype, args.only)))
    if args.opdb:
        print("op_db:", dict(opdb(args.dtype, args.only)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
