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


def test_convolution_splits_its_batch_only_when_large_and_a_core_is_free(monkeypatch):
    # nn/_conv_ops.py _halves: the size rule of Note [Intra-op parallelism], visible only as
    # speed (both ways compute the same values), so checked directly: two halves for a batch
    # of at least 2, at least PAIR_MNK multiply-adds and a free core; one pass otherwise.
    from tapegrad import _parallel
    from tapegrad.nn import _conv_ops

    big = _conv_ops.PAIR_MNK
    monkeypatch.setattr(_parallel, "may_split", lambda: True)
    assert _conv_ops._halves(5, big) == ((0, 2), (2, 5))
    assert _conv_ops._halves(1, big) is None
    assert _conv_ops._halves(4, big - 1) is None
    monkeypatch.setattr(_parallel, "may_split", lambda: False)
    assert _conv_ops._halves(4, 4 * big) is None


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 0), (2, 3, 0), (0, 2, 3)])
@pytest.mark.parametrize("ord", [1, -1, float("inf"), float("-inf"), "fro", "nuc"])
def test_matrix_norm_of_empty_matrices_matches_torch(torch_mod, ord, shape, keepdim):
    # ops/norm.py: the largest column/row sum of an empty matrix is 0 (a sum over the empty
    # dim, keeping it for keepdim); the smallest raises, as torch's.
    torch = torch_mod
    a = np.zeros(shape)
    try:
        want = torch.linalg.matrix_norm(torch.tensor(a), ord, keepdim=keepdim).numpy()
    except (RuntimeError, IndexError) as e:
        with pytest.raises(type(e)):
            tg.linalg.matrix_norm(tg.tensor(a), ord, keepdim=keepdim)
        return
    got = tg.linalg.matrix_norm(tg.tensor(a), ord, keepdim=keepdim).numpy()
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_matrix_exp_of_an_integer_or_bool_matrix_raises_like_torch(torch_mod, dtype):
    # ops/matfun.py: torch refuses them (tapegrad returned exp of the float32 cast)
    a = np.array([[1, 0], [0, 1]]).astype(dtype)
    with pytest.raises(RuntimeError) as want:
        torch_mod.linalg.matrix_exp(torch_mod.tensor(a))
    for fn in (tg.linalg.matrix_exp, tg.matrix_exp):
        with pytest.raises(RuntimeError) as got:
            fn(tg.tensor(a))
        assert str(got.value) == str(want.value)
