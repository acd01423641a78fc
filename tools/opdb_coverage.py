"""Pass rate of tapegrad against PyTorch's op database (``op_db``).

    PYTHONPATH=src python tools/opdb_coverage.py [--verbose] [--only NAME ...]

Prints one line per considered OpInfo that is not passing (``--verbose``: every one), then
the pass rate over the considered OpInfos: every float64 CPU OpInfo except the internal
aten / jiterator entries and the reviewed SKIP list of tests/test_opdb.py (shown apart).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tests.opdb_harness import full_name, load_op_db, run_opinfo  # noqa: E402
from tests.test_opdb import SKIP  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="print every OpInfo")
    parser.add_argument("--only", nargs="*", help="OpInfo names to run (default: all)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    counts = collections.Counter()
    for op in load_op_db():
        name = full_name(op)
        if args.only and op.name not in args.only and name not in args.only:
            continue
        if op.name in SKIP or name in SKIP:
            status, detail = "skip", SKIP.get(name, SKIP.get(op.name))
        else:
            status, detail = run_opinfo(op)
        counts[status] += 1
        if args.verbose or status in ("fail", "missing"):
            print(f"{status:8} {name:45} {detail}")
    considered = counts["pass"] + counts["fail"] + counts["missing"]
    rate = counts["pass"] / considered if considered else 0.0
    print(
        f"\nconsidered {considered}: pass {counts['pass']}, fail {counts['fail']}, "
        f"missing {counts['missing']}; skipped (reviewed) {counts['skip']}, "
        f"internal {counts['internal']}"
    )
    print(f"pass rate: {rate:.1%}  ({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
