"""Tests for more survivors in src/tapegrad/ops of the official mutation sample (seed 2111,
helper h21n, second list): scatter_reduce amax/amin keep a NaN of self or src as torch, a
batched backward of a basic-indexing view keeps the sign of a zero gradient, an in-place
float16 multiply or divide on the general path (inside a dual level) computes the number in
float32 as torch, and linalg.lu_solve takes a NumPy LU as it takes a NumPy B. Each test that
names a mutant was seen to fail on it."""

import numpy as np
import pytest
import torch

import tapegrad as tg

_NAN = float("nan")


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_extremes_keep_nan_as_torch(reduce, include_self):
    """index_ops.py:218 [drop] 'out[nan_in | nan_hit] = np.nan' -> 'pass': amax/amin reduce
    with np.fmax/np.fmin (which drop a NaN), then put NaN back where self or a scattered
    src value held one; as torch, a NaN wins (position 0 from src, position 1 from self)."""
    base = [1.0, _NAN, 3.0, 0.0]
    src = [_NAN, 5.0, 2.0, 7.0]
    idx = [0, 1, 2, 2]
    want = torch.tensor(base).scatter_reduce(
        0, torch.tensor(idx), torch.tensor(src), reduce, include_self=include_self
    )
    got = tg.tensor(base).scatter_reduce(
        0, tg.tensor(idx), tg.tensor(src), reduce, include_self=include_self
    )
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_batched_backward_of_a_slice_keeps_negative_zero():
    """indexing.py:208 [drop] 'return _scatter_node(g, prefix + tuple(shape), lead + key,
    False)' -> 'pass': inside a batched backward (is_grads_batched=True) a basic key scatters
    the gradient by assignment; the mutant falls through to the advanced path, whose
    np.bincount adds each value to 0.0 and so turns a -0.0 gradient into +0.0 (torch keeps
    -0.0)."""
    go = [[[-0.0, 1.0], [2.0, -0.0]], [[-0.0, -0.0], [3.0, 4.0]]]
    x = tg.zeros(4, 3, requires_grad=True)
    (g,) = tg.autograd.grad(x[1:3, ::2], x, tg.tensor(go), is_grads_batched=True)
    got = g.numpy()
    tx = torch.zeros(4, 3, requires_grad=True)
    ty = tx[1:3, ::2]  # torch's own batched call costs a second (vmap): one row at a time
    want = np.stack(
        [torch.autograd.grad(ty, tx, torch.tensor(r), retain_graph=True)[0].numpy() for r in go]
    )
    assert got.shape == want.shape == (2, 4, 3)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize(
    ("op", "number"), [("mul_", 70000.0), ("mul_", 0.1), ("div_", 70000.0), ("div_", 0.1)]
)
def test_half_in_place_mul_div_by_a_number_inside_a_dual_level(op, number):
    """inplace.py:298 [const] '2' -> '3' (in 'if opmath and a.itemsize == 2'): inside a
    forward-AD dual level the in-place op leaves its fast path for the general one, which
    (nothing to record) runs its ``fast`` closure; there a float16 ``mul_``/``div_`` by a
    Python number computes in float32 as torch (Note [Half tensors and numbers]). NumPy's
    rule rounds the number to float16 first: 0 * 70000.0 became 0 * inf = NaN (torch: 0),
    x / 70000.0 became x / inf = 0, and * 0.1 is an ulp off."""
    vals = [0.0, 1.0, 3.0, 0.1, -2.5, 1000.0]
    outs = []
    for lib in (torch, tg):
        with lib.autograd.forward_ad.dual_level():
            y = lib.tensor(vals, dtype=lib.float16)
            getattr(y, op)(number)
        outs.append(y.numpy())
    want, got = outs
    assert got.dtype == want.dtype == np.float16
    np.testing.assert_array_equal(got, want)


def test_lu_solve_takes_a_numpy_lu_as_it_takes_a_numpy_b():
    """lu.py:218 [drop] 'LU = as_tensor(LU, "linalg.lu_solve")' -> 'pass': as every
    tapegrad op (and as lu_solve's B), a NumPy LU is taken as a tensor (the mutant reads
    ``LU._data`` from the array: AttributeError); the solution equals torch's."""
    a = np.array([[4.0, 1.0, 0.5], [2.0, 3.0, 1.0], [0.0, 1.0, 5.0]])
    b = np.array([[1.0, 0.0], [2.0, 1.0], [3.0, -1.0]])
    lu, piv = tg.linalg.lu_factor(tg.tensor(a))
    got = tg.linalg.lu_solve(lu.numpy(), piv, b)
    tlu, tpiv = torch.linalg.lu_factor(torch.tensor(a))
    want = torch.linalg.lu_solve(tlu, tpiv, torch.tensor(b))
    assert got.dtype == tg.float64
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(got.numpy(), tg.linalg.lu_solve(lu, piv, tg.tensor(b)).numpy())
