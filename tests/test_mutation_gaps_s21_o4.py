"""Tests for surviving mutants (session 21, list o4), each seen to fail on its mutant:
autograd/graph.py:507 (where a stale view's base was modified, in the error),
autograd/profiler.py:130 and :220 (__exit__ returns False, as torch's), _spatial_mean.py:48
(the size of the ones cache), linalg.py:138 (_gemm_rows returns one GEMM's array when one
block holds every row), lowrank.py:33 (the power iteration subtracts M), sorting.py:337
(searchsorted's side=) and sorting.py:347 (3-D searchsorted), _int_scalars.py:65
(check_fill_value leaves non-int/float values alone). Equivalent: profiler.py:109 (_origin = 0
is never read: _build reads it only for ranges _add records while the profiler is active, after
__enter__ set it), arithmetic.py:174 '0' -> '1' (a shape tuple never equals a dtype, so the
early return is skipped, and sum_to returns g itself when its shape already fits) and
shape.py:438 '-1' -> '(1)' (BATCH.prefix is () or one dim, so dim 1 of the (B, -1) flat
gradient is dim -1)."""

import types

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import profiler
from tapegrad.ops import _int_scalars, _spatial_mean, linalg


def test_stale_view_error_says_which_op_modified_the_base_and_where():
    """graph.py:507 [compare] 'counter.where is not None' -> '(counter.where is None)': the
    error for a view whose base changed in place names the in-place op and its line."""
    x = tg.ones(4, requires_grad=True)
    y = x * 2
    v = y[:2]
    y.detach_()  # the base no longer requires grad: the view cannot be recorded again
    y.mul_(3)
    with pytest.raises(RuntimeError, match=r"modified in place by mul_ at .*test_mutation_gaps"):
        v.sum()


def test_profile_and_emit_itt_exit_return_false_like_torch(torch_mod):
    """profiler.py:130 and :220 [drop] 'return False' -> 'pass': torch's profile.__exit__ and
    (enabled) emit_itt.__exit__ return False, not None."""
    for lib in (torch_mod.autograd.profiler, profiler):
        p = lib.profile()
        p.__enter__()
        assert p.__exit__(None, None, None) is False
        e = lib.emit_itt()
        e.__enter__()
        assert e.__exit__(None, None, None) is False


def test_spatial_mean_ones_cache_holds_65_vectors_before_it_clears(monkeypatch):
    """_spatial_mean.py:48 [compare] 'len(_ONES) > 64' -> '(len(_ONES) >= 64)': the cache of
    ones vectors is cleared when it holds more than 64, so it reaches 65."""
    monkeypatch.setattr(_spatial_mean, "_ONES", {})
    for n in range(1, 66):
        _spatial_mean._ones(n, np.float32)
    assert len(_spatial_mean._ONES) == 65
    _spatial_mean._ones(66, np.float32)
    assert len(_spatial_mean._ONES) == 1


def test_gemm_rows_returns_the_single_gemm_result_when_one_block_holds_all_rows(monkeypatch):
    """linalg.py:138 [drop] 'return np.matmul(a2, b2)' -> 'pass': with m <= step the one GEMM's
    array is the result (not copied into a fresh array, the same values, only slower)."""
    results = []

    def matmul(a, b, **kwargs):
        results.append(np.matmul(a, b, **kwargs))
        return results[-1]

    proxy = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
    proxy.matmul = matmul
    monkeypatch.setattr(linalg, "np", proxy)
    a2, b2 = np.ones((3, 2)), np.ones((2, 4))
    out = linalg._gemm_rows(a2, b2, 3)
    assert len(results) == 1 and out is results[0]
    np.testing.assert_array_equal(out, np.full((3, 4), 2.0))


def test_svd_lowrank_with_m_approximates_a_minus_m_in_every_power_iteration():
    """lowrank.py:33 [drop] 'X = X - matmul(M.mT, Q)' -> 'pass': svd_lowrank(A, q, niter, M)
    runs the power iteration on A - M (as torch), so with one seed it gives what
    svd_lowrank(A - M) gives; the mutant iterates with A.mT there."""
    rng = np.random.default_rng(0)
    A = tg.tensor(rng.standard_normal((8, 6)) * 3 + 5)
    M = tg.tensor(rng.standard_normal((8, 6)) + 5)

    def approx(*args):
        tg.manual_seed(0)
        U, S, V = tg.svd_lowrank(*args)
        return (U * S) @ V.mT

    np.testing.assert_allclose(
        approx(A, 2, 2, M).numpy(), approx(A - M, 2, 2).numpy(), rtol=1e-9, atol=1e-9
    )


def test_searchsorted_side_and_3d_boundaries_match_torch(torch_mod):
    """sorting.py:337 [compare] 'side == "right"' -> '(side != 'right')' and sorting.py:347
    [binop] '-1' -> '(1)' (either '-1' of 'seq.shape[:-1] != values.shape[:-1]'): side= picks
    the end, and 3-D boundaries with matching leading dims are accepted."""
    seq = [[[1.0, 2, 2, 3], [0, 1, 1, 1]], [[5, 5, 6, 7], [1, 2, 3, 4]]]
    vals = [[[2.0, 1, 3], [1, 0, 2]], [[5, 9, 6], [2, 2, 0]]]
    for side in ("left", "right"):
        ours = tg.searchsorted(tg.tensor(seq), tg.tensor(vals), side=side)
        ref = torch_mod.searchsorted(torch_mod.tensor(seq), torch_mod.tensor(vals), side=side)
        np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    for side in ("left", "right"):
        ours = tg.searchsorted(tg.tensor([1.0, 2, 2, 3]), tg.tensor([2.0, 0]), side=side)
        ref = torch_mod.searchsorted(
            torch_mod.tensor([1.0, 2, 2, 3]), torch_mod.tensor([2.0, 0]), side=side
        )
        np.testing.assert_array_equal(ours.numpy(), ref.numpy())


@pytest.mark.parametrize(
    ("value", "dtype"), [(1j, np.float16), (True, np.int8), (1e300, np.complex64)]
)
def test_check_fill_value_leaves_other_values_and_dtypes_alone(value, dtype):
    """_int_scalars.py:65 [boolop] 'value.__class__ not in (int, float) or dtype.kind not in
    "iufV"' -> '(... and ...)': only an int or float checked against an integer, float or
    bfloat16 dtype; a complex value (or a float for a complex dtype) passes unchecked (the
    mutant compares 1j with a float and raises TypeError, or finds 1e300 over complex64's
    range). fill_number, the one caller, passes only ints and floats today."""
    assert _int_scalars.check_fill_value(value, np.dtype(dtype)) is None
