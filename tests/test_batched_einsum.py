"""Batched backward (Note [Batched gradients]) through einsum, solve and solve_triangular.

Every case runs the vectorized Jacobian / ``is_grads_batched`` gradient with the
per-row fallback disabled, so a rule that cannot run batched (or disagrees with the
unbatched probe) fails the test instead of silently looping; the result must equal
the ordinary one-backward-per-row answer.
"""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import batched


def _no_row_loop(*args, **kwargs):
    raise AssertionError("the batched backward fell back to one backward per row")


def _inputs(shapes, square=False, seed=0):
    """float64 leaves; with ``square`` the first one gets a boosted diagonal (solvable)."""
    rng = np.random.default_rng(seed)
    out = []
    for k, shape in enumerate(shapes):
        x = rng.uniform(-1, 1, size=shape)
        if square and k == 0:
            x = x + 2.5 * np.eye(shape[-1])
        out.append(tg.tensor(x, dtype=tg.float64, requires_grad=True))
    return tuple(out)


def _check_batched(monkeypatch, f, xs):
    """Vectorized Jacobian and batched grads equal the row-loop ones, without fallback."""
    out = f(*xs)
    B = 3
    v = tg.tensor(np.random.default_rng(1).standard_normal((B,) + tuple(out.shape)))
    loop_jac = tg.autograd.functional.jacobian(f, xs, vectorize=False)
    loop_rows = [tg.autograd.grad(f(*xs), xs, v[b], allow_unused=True) for b in range(B)]
    with monkeypatch.context() as mp:
        mp.setattr(batched, "_row_loop", _no_row_loop)
        got = tg.autograd.grad(f(*xs), xs, v, is_grads_batched=True, allow_unused=True)
        # A Jacobian has one batched pass only when the output has more than one element.
        jac = tg.autograd.functional.jacobian(f, xs, vectorize=True) if out.numel() > 1 else None
    for i, x in enumerate(xs):
        ref = np.stack([r[i].numpy() for r in loop_rows])
        assert got[i].shape == (B,) + tuple(x.shape)
        np.testing.assert_allclose(got[i].numpy(), ref, rtol=1e-10, atol=1e-12)
        if jac is not None:
            assert jac[i].shape == loop_jac[i].shape
            np.testing.assert_allclose(jac[i].numpy(), loop_jac[i].numpy(), rtol=1e-10, atol=1e-12)


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ii->", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("iij->ji", [(3, 3, 2)]),
    ("...ij,...jk", [(2, 1, 2, 3), (4, 3, 2)]),
    ("...ij,...jk->...ik", [(2, 3), (3, 2)]),
    ("ab,b->a", [(2, 1), (3,)]),
    ("ai,bi->ab", [(1, 3), (2, 1)]),
    ("...ij->j", [(2, 3, 4)]),
    ("bi,bij,bj->b", [(2, 3), (2, 3, 4), (2, 4)]),
    ("i,j", [(2,), (3,)]),
    ("ij,jk", [(2, 3), (3, 2)]),
    ("ij,j->j", [(0, 3), (3,)]),
    ("ij,j->i", [(2, 0), (0,)]),
    (",->", [(), ()]),
    ("i,->i", [(3,), ()]),
]


@pytest.mark.parametrize("equation,shapes", EINSUM_CASES, ids=[e for e, _ in EINSUM_CASES])
def test_einsum_batched(monkeypatch, equation, shapes):
    xs = _inputs(shapes)
    _check_batched(monkeypatch, lambda *ts: tg.einsum(equation, *ts), xs)


def test_einsum_same_operand_twice(monkeypatch):
    (x,) = _inputs([(3,)])
    _check_batched(monkeypatch, lambda t: tg.einsum("i,i->i", t, t), (x,))
    _check_batched(monkeypatch, lambda t: tg.einsum("ij,jk->ik", t, t), _inputs([(3, 3)]))


def test_einsum_partial_requires_grad(monkeypatch):
    a, b = _inputs([(2, 3), (3, 4)])
    b.requires_grad_(False)
    _check_batched(monkeypatch, lambda t: tg.einsum("ij,jk->ik", t, b), (a,))


def test_einsum_batched_hessian(monkeypatch):
    """Second order: the batched pass runs through the einsums of einsum's backward."""
    a, v = _inputs([(3, 3), (3,)])

    def f(x):
        return tg.einsum("i,ij,j->", x, a, x) + tg.einsum("ii->", tg.einsum("i,j->ij", x, x))

    ref = tg.autograd.functional.hessian(f, v, vectorize=False)
    with monkeypatch.context() as mp:
        mp.setattr(batched, "_row_loop", _no_row_loop)
        got = tg.autograd.functional.hessian(f, v, vectorize=True)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-10, atol=1e-12)
    an = a.detach().numpy()
    np.testing.assert_allclose(got.numpy(), an + an.T + 2 * np.eye(3))


SOLVE_CASES = [
    ("matrix", [(3, 3), (3, 2)], {}),
    ("vector", [(3, 3), (3,)], {}),
    ("batch-vectors", [(2, 3, 3), (2, 3)], {}),
    ("vector-broadcast", [(2, 3, 3), (3,)], {}),
    ("broadcast", [(2, 1, 2, 2), (3, 2, 1)], {}),
    ("right", [(3, 3), (2, 3)], {"left": False}),
]


@pytest.mark.parametrize("name,shapes,kw", SOLVE_CASES, ids=[c[0] for c in SOLVE_CASES])
def test_solve_batched(monkeypatch, name, shapes, kw):
    xs = _inputs(shapes, square=True)
    _check_batched(monkeypatch, lambda a, b: tg.linalg.solve(a, b, **kw), xs)


TRIANGULAR_CASES = [
    ("upper", [(3, 3), (3, 2)], {"upper": True}),
    ("lower-unit", [(2, 3, 3), (3, 2)], {"upper": False, "unitriangular": True}),
    ("broadcast", [(3, 3), (2, 3, 2)], {"upper": True}),
    ("right", [(3, 3), (2, 3)], {"upper": False, "left": False}),
]


@pytest.mark.parametrize("name,shapes,kw", TRIANGULAR_CASES, ids=[c[0] for c in TRIANGULAR_CASES])
def test_solve_triangular_batched(monkeypatch, name, shapes, kw):
    xs = _inputs(shapes, square=True)
    _check_batched(monkeypatch, lambda a, b: tg.linalg.solve_triangular(a, b, **kw), xs)


class _Unbatched(tg.autograd.Function):
    """Doubles x; its backward reshapes to x's plain shape, so it cannot run batched."""

    @staticmethod
    def forward(ctx, x):
        ctx.shape = tuple(x.shape)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return (g * 2).reshape(ctx.shape)


def test_fallback_is_detected(monkeypatch):
    """The harness itself: a rule without batch support must trip the patched row loop."""
    (x,) = _inputs([(2, 3)])
    with pytest.raises(AssertionError, match="fell back"):
        _check_batched(monkeypatch, lambda t: tg.einsum("ij->ji", _Unbatched.apply(t)), (x,))
