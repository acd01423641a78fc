"""Tests for the gaps that the seed-1807 mutation sample found (docs/mutation-run-seed1807.md):
each fails on its mutant."""

import warnings

import numpy as np
import pytest

import tapegrad as tg


@pytest.mark.parametrize("check_nan", [True, False])
@pytest.mark.parametrize("api", ["detect_anomaly", "set_detect_anomaly"])
def test_anomaly_modes_check_nan_option_matches_torch(torch_mod, api, check_nan):
    # autograd/anomaly.py: with check_nan=False anomaly mode only records where Nodes were
    # made; a NaN gradient (sqrt's at -1) raises only with check_nan=True.
    results = []
    for lib in (torch_mod, tg):
        x = lib.tensor([-1.0, 4.0], requires_grad=True)
        if api == "detect_anomaly":
            ctx = lib.autograd.detect_anomaly(check_nan=check_nan)
        else:
            ctx = lib.autograd.set_detect_anomaly(True, check_nan)
        raised = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with ctx:
                y = x.sqrt().sum()
                try:
                    y.backward()
                except RuntimeError as e:
                    raised = str(e)
        grad = None if x.grad is None else np.asarray(x.grad.numpy())
        results.append((raised, grad))
    (want_err, want_grad), (err, grad) = results
    assert (err is None) == (want_err is None), (err, want_err)
    if want_err is None:
        np.testing.assert_array_equal(grad, want_grad)
    else:
        assert "returned nan values in its 0th output" in err
