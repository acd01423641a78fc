"""Shared fixtures: a fixed seed per test and PyTorch when installed."""

import numpy as np
import pytest

try:  # two xdist workers share two cores: BLAS threads would only spin against each other
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")
except ImportError:  # pragma: no cover - threadpoolctl comes with the demo extra
    pass

import tapegrad as tg

try:
    import torch
except ImportError:  # pragma: no cover - CI installs torch; local runs may not
    torch = None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A fixed seed per test: tapegrad's and NumPy's global generators, reseeded before any
    fixture of the test is set up. (A hook, not an autouse fixture: 0.5 ms less per test.)"""
    tg.manual_seed(0)
    np.random.seed(0)


@pytest.fixture
def torch_mod():
    """The torch module, or a visible skip when it is not installed."""
    if torch is None:
        pytest.skip("PyTorch is not installed: reference comparison skipped (pip install torch)")
    return torch


def pytest_collection_modifyitems(config, items):
    """Test ids must not hold object addresses: each xdist worker collects on its own, and
    ids that differ between workers end the run ("Different tests were collected")."""
    bad = [item.nodeid for item in items if " at 0x" in item.nodeid]
    if bad:
        raise pytest.UsageError(f"test ids with object addresses: {bad[:3]}")


@pytest.fixture
def step_mode():
    """TAPEGRAD_INTRA_OP=step (Note [One pool per step]) for one test (tests/test_one_pool.py
    has its own, through monkeypatch)."""
    from tapegrad import _parallel

    prev = _parallel.STEP[0]
    _parallel.STEP[0] = True
    yield
    _parallel.STEP[0] = prev
