"""Batched backward (Note [Batched gradients]) through reductions, scans, softmax and norms.

Each case computes ``jacobian(f, x, vectorize=True)`` with the per-row fallback
disabled, so it passes only if the whole graph ran in ONE batched backward, and
compares it with the ordinary row-by-row Jacobian.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import batched
from tapegrad.autograd.functional import hessian, jacobian


@pytest.fixture
def no_fallback(monkeypatch):
    """Make the row-by-row fallback of a vectorized pass raise."""

    def refuse(*args, **kwargs):
        raise AssertionError("the batched backward fell back to one backward per row")

    def install():
        monkeypatch.setattr(batched, "_row_loop", refuse)

    return install


def _rand(shape, seed=0, ties=False, zeros=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-2, 2, shape)
    if ties:  # a few repeated values, so that maxima/minima tie
        a = np.round(a)
    if zeros:
        a.reshape(-1)[rng.choice(a.size, zeros, replace=False)] = 0.0
    return a


LN = tg.linalg
# A one-element output would make a batch of B = 1, which never runs batched: widen it.
W = tg.tensor([1.0, -2.0], dtype=tg.float64)
CASES = [
    # extrema (ties share the gradient; max(dim) picks one index)
    ("amax-dims", lambda x: x.amax(dim=(0, 2)), (2, 3, 4), {}),
    ("amax-keepdim", lambda x: tg.amax(x, 1, keepdim=True), (3, 4), {"ties": True}),
    ("amax-all", lambda x: x.amax() * W, (3, 4), {"ties": True}),
    ("amin-dim", lambda x: x.amin(dim=-1), (3, 4), {"ties": True}),
    ("max-all", lambda x: x.max() * W, (3, 4), {"ties": True}),
    ("max-dim", lambda x: x.max(dim=1).values, (3, 4), {}),
    ("max-dim0-keepdim", lambda x: x.max(dim=0, keepdim=True).values, (3, 4), {"ties": True}),
    ("max-0d-dim", lambda x: x.max(dim=0).values * x * W, (), {}),
    ("min-all", lambda x: x.min() * W, (5,), {"ties": True}),
    ("min-dim", lambda x: x.min(dim=-2).values, (2, 3, 4), {}),
    # spread / soft maximum
    ("var-all", lambda x: x.var() * W, (3, 4), {}),
    ("var-dim", lambda x: x.var(dim=1), (3, 4), {}),
    ("var-dims-keepdim", lambda x: x.var(dim=(0, 2), keepdim=True, correction=0), (2, 3, 2), {}),
    ("std-all", lambda x: x.std() * W, (3, 4), {}),
    ("std-dim-keepdim", lambda x: x.std(dim=0, keepdim=True), (3, 4), {}),
    ("logsumexp-dim", lambda x: x.logsumexp(dim=1), (3, 4), {}),
    ("logsumexp-dims-keepdim", lambda x: tg.logsumexp(x, (0, 1), keepdim=True) * W, (3, 4), {}),
    # softmax
    ("softmax-last", lambda x: x.softmax(dim=-1), (3, 4), {}),
    ("softmax-dim0", lambda x: tg.softmax(x, 0), (3, 4), {}),
    ("softmax-mid", lambda x: x.softmax(dim=1), (2, 3, 2), {}),
    ("softmax-0d", lambda x: x.softmax(dim=0) * x * W, (), {}),
    ("log_softmax-last", lambda x: x.log_softmax(dim=1), (3, 4), {}),
    ("log_softmax-dim0", lambda x: tg.log_softmax(x, 0), (3, 4), {}),
    ("log_softmax-0d", lambda x: x.log_softmax(dim=0) * x * W, (), {}),
    # norms
    ("norm-fro", lambda x: x.norm() * W, (3, 4), {}),
    ("norm-p1-dim", lambda x: x.norm(p=1, dim=1), (3, 4), {}),
    ("norm-p3-keepdim", lambda x: x.norm(p=3, dim=0, keepdim=True), (3, 4), {}),
    ("norm-zero-row", lambda x: x.norm(dim=1), (3, 4), {"zeros": 0, "zero_row": True}),
    ("vector_norm-inf", lambda x: LN.vector_norm(x, math.inf, dim=1), (3, 4), {"ties": True}),
    ("vector_norm--inf", lambda x: LN.vector_norm(x, -math.inf) * W, (3, 4), {}),
    ("vector_norm-p0.5", lambda x: LN.vector_norm(x, 0.5, dim=(0, 1)) * W, (3, 4), {"zeros": 2}),
    ("vector_norm-p0", lambda x: LN.vector_norm(x, 0, dim=0) + x.sum(dim=0), (3, 4), {}),
    ("matrix_norm-fro", lambda x: LN.matrix_norm(x), (2, 3, 4), {}),
    ("matrix_norm-1", lambda x: LN.matrix_norm(x, 1), (2, 3, 4), {}),
    (
        "matrix_norm--inf-keepdim",
        lambda x: LN.matrix_norm(x, -math.inf, keepdim=True) * W,
        (3, 4),
        {},
    ),
    ("linalg_norm-vector", lambda x: LN.norm(x, dim=1), (3, 4), {}),
    ("linalg_norm-matrix-inf", lambda x: LN.norm(x, math.inf) * W, (3, 4), {}),
    ("linalg_norm-dims", lambda x: LN.norm(x, dim=(0, 2)), (2, 3, 2), {}),
    # products and running sums/products
    ("prod-all", lambda x: x.prod() * W, (3, 4), {}),
    ("prod-dim", lambda x: x.prod(dim=1), (3, 4), {}),
    ("prod-dim-keepdim-zeros", lambda x: x.prod(dim=0, keepdim=True), (3, 4), {"zeros": 3}),
    ("prod-all-two-zeros", lambda x: x.prod() * W, (5,), {"zeros": 2}),
    ("cumsum-last", lambda x: x.cumsum(dim=1), (3, 4), {}),
    ("cumsum-dim0", lambda x: tg.cumsum(x, 0), (3, 4), {}),
    ("cumsum-0d", lambda x: x.cumsum(0) * x * W, (), {}),
    ("cumprod-last", lambda x: x.cumprod(dim=-1), (3, 4), {}),
    ("cumprod-dim0-zeros", lambda x: x.cumprod(dim=0), (4, 3), {"zeros": 3}),
    ("cumprod-0d", lambda x: x.cumprod(0) * x * W, (), {}),
]


def _input(shape, opts):
    opts = dict(opts)
    zero_row = opts.pop("zero_row", False)
    a = _rand(shape, **opts)
    if zero_row:
        a[1] = 0.0
    return tg.tensor(a, dtype=tg.float64)


@pytest.mark.parametrize("name,fn,shape,opts", CASES, ids=[c[0] for c in CASES])
def test_vectorized_jacobian_runs_batched(name, fn, shape, opts, no_fallback):
    x = _input(shape, opts)
    expected = jacobian(fn, x, vectorize=False)
    no_fallback()
    got = jacobian(fn, x, vectorize=True)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)


def test_no_fallback_fixture_catches_a_fallback(no_fallback, monkeypatch):
    """The fixture must detect a fallback: force one by making the batched pass fail."""
    monkeypatch.setattr(batched, "_try_batched", lambda *a, **k: None)
    no_fallback()
    with pytest.raises(AssertionError, match="fell back"):
        jacobian(
            lambda x: x.softmax(dim=0), tg.tensor([1.0, 2.0], dtype=tg.float64), vectorize=True
        )


def test_cast_runs_batched(no_fallback):
    """_cast between float dtypes; the whole graph in float32, so the probe's float32
    tolerance applies (a float64 -> float32 -> float64 round trip fails the probe's
    float64 tolerance through rounding alone, see batched._probe_agrees)."""
    x = tg.tensor(_rand((3, 2)), dtype=tg.float32)

    def fn(x):
        return (x.double() * 2.0).float().softmax(dim=1)

    expected = jacobian(fn, x, vectorize=False)
    no_fallback()
    got = jacobian(fn, x, vectorize=True)
    assert got.dtype == tg.float32
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


SECOND_ORDER = [
    ("softmax", lambda x: (x.softmax(dim=1) * x).sum(), (2, 3), {}),
    ("log_softmax", lambda x: (x.log_softmax(dim=0) ** 2).sum(), (3, 2), {}),
    ("std", lambda x: x.std(dim=1).sum(), (2, 3), {}),
    ("logsumexp", lambda x: x.logsumexp(dim=0).sum(), (3, 2), {}),
    ("norm-p3", lambda x: x.norm(p=3), (2, 3), {}),
    ("prod-zeros", lambda x: x.prod(dim=1).sum(), (2, 3), {"zeros": 1}),
    ("cumprod", lambda x: x.cumprod(dim=1).sum(), (2, 3), {}),
    ("cumprod-zeros", lambda x: x.cumprod(dim=0).sum(), (3, 2), {"zeros": 1}),
    ("cumsum", lambda x: (x.cumsum(dim=0) ** 2).sum(), (3, 2), {}),
]


@pytest.mark.parametrize("name,fn,shape,opts", SECOND_ORDER, ids=[c[0] for c in SECOND_ORDER])
def test_vectorized_hessian_runs_batched(name, fn, shape, opts, no_fallback):
    """The outer Jacobian runs batched through the ops recorded by these backward rules."""
    x = _input(shape, opts)
    expected = hessian(fn, x, vectorize=False)
    no_fallback()
    got = hessian(fn, x, vectorize=True)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)


def test_batched_grad_matches_torch():
    """autograd.grad(is_grads_batched=True) through several converted ops, against torch."""
    torch = pytest.importorskip("torch")
    a = _rand((3, 4), seed=1)
    v = np.random.default_rng(2).standard_normal((5, 3))

    def f(m, x):
        return x.softmax(dim=1).cumsum(dim=0).prod(dim=1) + x.std(dim=1) + x.amax(dim=1)

    x = tg.tensor(a, dtype=tg.float64, requires_grad=True)
    (got,) = tg.autograd.grad(f(tg, x), x, tg.tensor(v), is_grads_batched=True)
    xt = torch.tensor(a, requires_grad=True)
    (ref,) = torch.autograd.grad(f(torch, xt), xt, torch.tensor(v), is_grads_batched=True)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-10, atol=1e-12)
