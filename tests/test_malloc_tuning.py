"""Note [Array memory and page faults]: importing tapegrad keeps freed array memory in the
process, so a loop that allocates and frees a few MiB of arrays stops faulting pages in."""

import os
import subprocess
import sys

import pytest

from tapegrad import _malloc

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not _malloc.TUNED[0],
    reason="glibc malloc tuning applies on Linux with glibc only",
)

# A step's worth of arrays (8 x 1 MiB) allocated and freed 20 times; prints faults per round.
_SCRIPT = """
import resource
import numpy as np
import tapegrad

def rounds(n):
    for _ in range(n):
        arrays = [np.ones(SIZE, np.float32) for _ in range(COUNT)]
        del arrays

rounds(3)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
rounds(20)
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20)
"""


def _faults_per_round(size=1 << 18, count=8, **env):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    environ.update(env)
    out = subprocess.run(
        [sys.executable, "-c", f"SIZE, COUNT = {size}, {count}\n" + _SCRIPT],
        env=environ,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip())


def test_freed_arrays_are_reused_without_page_faults():
    # 8 MiB freed per round would be 2,048 pages faulted in again without the tuning
    assert _faults_per_round() < 50
    assert _faults_per_round(TAPEGRAD_MALLOC_TUNING="0") > 500


def test_arrays_of_16_mib_are_reused_too():
    # The per-sample weight gradients of a 64 x 256 x 256 vmap(grad) are exactly 16 MiB; a
    # 16 MiB mmap threshold mapped and faulted them in afresh on every call (4,096 pages).
    assert _faults_per_round(size=1 << 22, count=2) < 50


def test_tune_respects_the_users_settings():
    assert not _malloc.tune({"TAPEGRAD_MALLOC_TUNING": "0"})
    assert not _malloc.tune({"MALLOC_TRIM_THRESHOLD_": "1000000"})
    assert not _malloc.tune({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1000000"})
    assert _malloc.tune({})  # the import's own settings, set again
