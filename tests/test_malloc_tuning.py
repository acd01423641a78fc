"""Note [Array memory and page faults]: importing tapegrad keeps freed array memory in the
process, so a loop that allocates and frees a few MiB of arrays stops faulting pages in."""

import functools
import os
import subprocess
import sys

import pytest

from tapegrad import _malloc

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not _malloc.TUNED[0],
    reason="glibc malloc tuning applies on Linux with glibc only",
)

# For each (SIZE, COUNT): COUNT arrays of SIZE float32 allocated and freed 20 times (after 3
# rounds of warm-up); prints the page faults per round. One interpreter measures every size:
# its start and ``import tapegrad`` cost more CPU than the rounds.
_SCRIPT = """
import resource
import sys
import numpy as np
import tapegrad

def rounds(n, size, count):
    for _ in range(n):
        arrays = [np.ones(size, np.float32) for _ in range(count)]
        del arrays

for arg in sys.argv[1:]:
    size, count = map(int, arg.split("x"))
    rounds(3, size, count)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    rounds(20, size, count)
    print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20)
"""

# A step's worth of arrays (8 x 1 MiB), and the 2 x 16 MiB of test_arrays_of_16_mib_...
_SIZES = ((1 << 18, 8), (1 << 22, 2))


@functools.cache
def _faults_per_round(tuning=None):
    """{(size, count): page faults per round} for each of _SIZES, in one fresh interpreter;
    ``tuning`` is TAPEGRAD_MALLOC_TUNING's value there (unset: None)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    environ.pop("TAPEGRAD_MALLOC_TUNING", None)
    if tuning is not None:
        environ["TAPEGRAD_MALLOC_TUNING"] = tuning
    sizes = _SIZES if tuning is None else _SIZES[:1]
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, *(f"{size}x{count}" for size, count in sizes)],
        env=environ,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(zip(sizes, map(float, out.stdout.split())))


def test_freed_arrays_are_reused_without_page_faults():
    # 8 MiB freed per round would be 2,048 pages faulted in again without the tuning
    assert _faults_per_round()[1 << 18, 8] < 50
    assert _faults_per_round(tuning="0")[1 << 18, 8] > 500


def test_arrays_of_16_mib_are_reused_too():
    # The per-sample weight gradients of a 64 x 256 x 256 vmap(grad) are exactly 16 MiB; a
    # 16 MiB mmap threshold mapped and faulted them in afresh on every call (4,096 pages).
    assert _faults_per_round()[1 << 22, 2] < 50


def test_tune_respects_the_users_settings():
    assert not _malloc.tune({"TAPEGRAD_MALLOC_TUNING": "0"})
    assert not _malloc.tune({"MALLOC_TRIM_THRESHOLD_": "1000000"})
    assert not _malloc.tune({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1000000"})
    assert _malloc.tune({})  # the import's own settings, set again
