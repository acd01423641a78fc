"""tg.autograd.functional against torch.autograd.functional (values and tuple nesting)."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import engine
from tapegrad.autograd import functional as F

from ._autograd_helpers import assert_close, slice_

RNG = np.random.default_rng(7)
A = RNG.standard_normal((4, 3))
B = RNG.standard_normal((3, 3))


def seed_fn(m):
    return lambda x: slice_(m, x, 0, 2) + slice_(m, x, 1, 3)


def square_sum(m):
    return lambda x: (x**2).sum()


def tanh_net(m):
    a = m.tensor(A)
    return lambda x: (a @ x).tanh() * 2.0


def two_in_two_out(m):
    b = m.tensor(B)

    def f(x, y):
        u = (b @ x) * y.exp()
        return u.sum(dim=0), (x * y).sigmoid().reshape(3, 1).permute(1, 0)

    return f


def scalar2(m):
    b = m.tensor(B)
    return lambda x, y: ((b @ x).tanh() * y * y).sum() + (x * x * x).sum()


def _inputs(m, *arrays):
    return tuple(m.tensor(a, dtype=m.float64) for a in arrays)


X3 = RNG.standard_normal(3)
Y3 = RNG.standard_normal(3)


@pytest.mark.parametrize("vectorize", [False, True])
def test_seed_jacobian(vectorize):
    J = F.jacobian(seed_fn(tg), tg.tensor([1.0, 2.0, 3.0]), vectorize=vectorize)
    np.testing.assert_array_equal(J.numpy(), [[1, 1, 0], [0, 1, 1]])


@pytest.mark.parametrize("vectorize", [False, True])
def test_seed_hessian_is_2I(vectorize):
    H = F.hessian(square_sum(tg), tg.tensor(X3, dtype=tg.float64), vectorize=vectorize)
    np.testing.assert_allclose(H.numpy(), 2 * np.eye(3))


CASES = [
    ("seed", seed_fn, (X3,)),
    ("tanh_net", tanh_net, (X3,)),
    ("two_in_two_out", two_in_two_out, (X3, Y3)),
]


@pytest.mark.parametrize("name,make,arrays", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_matches_torch(torch_mod, name, make, arrays, vectorize):
    ours = F.jacobian(
        make(tg),
        _inputs(tg, *arrays) if len(arrays) > 1 else tg.tensor(arrays[0], dtype=tg.float64),
        vectorize=vectorize,
    )
    theirs = torch_mod.autograd.functional.jacobian(
        make(torch_mod),
        _inputs(torch_mod, *arrays)
        if len(arrays) > 1
        else torch_mod.tensor(arrays[0], dtype=torch_mod.float64),
        vectorize=vectorize,
    )
    assert_close(ours, theirs)


def test_jacobian_tuple_nesting(torch_mod):
    """A 1-tuple of inputs gives a tuple level, as in PyTorch."""
    ours = F.jacobian(tanh_net(tg), _inputs(tg, X3))
    theirs = torch_mod.autograd.functional.jacobian(tanh_net(torch_mod), _inputs(torch_mod, X3))
    assert isinstance(ours, tuple) and len(ours) == 1
    assert_close(ours, theirs)


@pytest.mark.parametrize("vectorize", [False, True])
def test_hessian_matches_torch(torch_mod, vectorize):
    ours = F.hessian(scalar2(tg), _inputs(tg, X3, Y3), vectorize=vectorize)
    theirs = torch_mod.autograd.functional.hessian(
        scalar2(torch_mod), _inputs(torch_mod, X3, Y3), vectorize=vectorize
    )
    assert_close(ours, theirs)


def test_vectorized_uses_few_passes(monkeypatch):
    """vectorize=True: one batched pass plus one check pass, not one pass per row."""
    calls = []
    real = engine.run_backward

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "run_backward", counting)
    x = tg.tensor(RNG.standard_normal(8), dtype=tg.float64)
    a = tg.tensor(RNG.standard_normal((10, 8)))
    J = F.jacobian(lambda x: (a @ x).tanh().reshape(2, 5).transpose(0, 1), x, vectorize=True)
    assert J.shape == (5, 2, 8)
    assert len(calls) == 2
    calls.clear()
    J2 = F.jacobian(lambda x: (a @ x).tanh().reshape(2, 5).transpose(0, 1), x)
    assert len(calls) == 10
    np.testing.assert_allclose(J.numpy(), J2.numpy())


def test_unbatchable_op_falls_back_to_rows():
    """A Function whose backward ignores the batch prefix cannot give a wrong Jacobian."""

    class Flip(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return tg.tensor(x._data[::-1].copy())

        @staticmethod
        def backward(ctx, g):  # raw NumPy on the last axis: right shape, wrong if batched
            return tg.tensor(g._data[..., ::-1].copy().reshape(-1)[: g.shape[-1]])

    x = tg.tensor(RNG.standard_normal(4), dtype=tg.float64)
    J = F.jacobian(lambda x: Flip.apply(x * 2.0), x, vectorize=True)
    np.testing.assert_allclose(J.numpy(), 2 * np.eye(4)[::-1])


def test_silently_wrong_batched_rule_is_caught_by_probe():
    """A rule right unbatched but wrong batched (dim 0 hard-coded) keeps the shape; the
    linearity probe must notice and fall back to the row loop."""

    class ShiftBySum(tg.autograd.Function):  # f(x) = 3x + sum(x)
        @staticmethod
        def forward(ctx, x):
            return x * 3.0 + x.sum()

        @staticmethod
        def backward(ctx, g):
            return g * 3.0 + g.sum(dim=0, keepdim=True).expand(*g.shape)

    x = tg.tensor(RNG.standard_normal(3), dtype=tg.float64)
    c = np.array([1.0, 2.0, 3.0])
    J = F.jacobian(lambda x: ShiftBySum.apply(x) * tg.tensor(c), x, vectorize=True)
    np.testing.assert_allclose(J.numpy(), np.diag(c) @ (3 * np.eye(3) + 1))


def test_vjp_jvp_hvp_vhp_match_torch(torch_mod):
    v_out = (np.array(RNG.standard_normal()), RNG.standard_normal((1, 3)))
    v_in = (RNG.standard_normal(3), RNG.standard_normal(3))
    for fn_name, make, v in [
        ("vjp", two_in_two_out, v_out),
        ("jvp", two_in_two_out, v_in),
        ("hvp", scalar2, v_in),
        ("vhp", scalar2, v_in),
    ]:
        ours = getattr(F, fn_name)(make(tg), _inputs(tg, X3, Y3), _inputs(tg, *v))
        theirs = getattr(torch_mod.autograd.functional, fn_name)(
            make(torch_mod), _inputs(torch_mod, X3, Y3), _inputs(torch_mod, *v)
        )
        assert_close(ours, theirs)


def test_single_tensor_forms_match_torch(torch_mod):
    x = RNG.standard_normal(3)
    v = RNG.standard_normal(4)
    w = RNG.standard_normal(3)
    for fn_name, make, vec in [
        ("vjp", tanh_net, v),
        ("jvp", tanh_net, w),
        ("hvp", square_sum, w),
        ("vhp", square_sum, w),
    ]:
        ours = getattr(F, fn_name)(make(tg), tg.tensor(x), tg.tensor(vec))
        theirs = getattr(torch_mod.autograd.functional, fn_name)(
            make(torch_mod), torch_mod.tensor(x), torch_mod.tensor(vec)
        )
        assert_close(ours, theirs)


def test_v_none_only_for_single_element():
    out, g = F.vjp(lambda x: (x * x).sum(), tg.tensor([1.0, 2.0]))
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])
    with pytest.raises(RuntimeError, match="v can only be None"):
        F.vjp(lambda x: x * x, tg.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="invalid size"):
        F.vjp(lambda x: x * x, tg.tensor([1.0, 2.0]), tg.ones(3))


def test_strict_and_unused_inputs(torch_mod):
    f = lambda x, y: x * 2.0  # noqa: E731 - y unused
    J = F.jacobian(f, (tg.ones(2), tg.ones(3)))
    ref = torch_mod.autograd.functional.jacobian(f, (torch_mod.ones(2), torch_mod.ones(3)))
    for ours, theirs in zip(J, ref, strict=True):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(J[1].numpy(), np.zeros((2, 3)))
    with pytest.raises(RuntimeError, match="independent of input 1"):
        F.jacobian(f, (tg.ones(2), tg.ones(3)), strict=True)
    with pytest.raises(RuntimeError, match="not supported together"):
        F.jacobian(f, (tg.ones(2), tg.ones(3)), strict=True, vectorize=True)
    with pytest.raises(NotImplementedError, match="requires vectorize=True"):  # as torch
        F.jacobian(f, (tg.ones(2), tg.ones(3)), strategy="forward-mode")
    with pytest.raises(RuntimeError, match="does not require gradients"):
        F.jacobian(lambda x: tg.ones(2), tg.ones(2), strict=True)
    np.testing.assert_array_equal(
        F.jacobian(lambda x: tg.ones(2), tg.ones(2)).numpy(), np.zeros((2, 2))
    )


def test_hessian_requires_single_element():
    with pytest.raises(RuntimeError, match="single element"):
        F.hessian(lambda x: x * x, tg.ones(2))
    with pytest.raises(TypeError, match="tuple of Tensors"):
        F.jacobian(lambda x: x, [tg.ones(2)])


def test_create_graph_gives_differentiable_jacobian(torch_mod):
    def make(m):
        return lambda x: (x.tanh() * x).sum(dim=0)

    x = tg.tensor(RNG.standard_normal((2, 2)), requires_grad=True, dtype=tg.float64)
    tx = torch_mod.tensor(x.detach().numpy(), requires_grad=True)
    for vectorize in (False, True):
        J = F.jacobian(make(tg), x, create_graph=True, vectorize=vectorize)
        tJ = torch_mod.autograd.functional.jacobian(
            make(torch_mod), tx, create_graph=True, vectorize=vectorize
        )
        assert J.requires_grad
        (g,) = tg.autograd.grad((J * J).sum(), x)
        (tg_,) = torch_mod.autograd.grad((tJ * tJ).sum(), tx)
        assert_close(g, tg_)
    J = F.jacobian(make(tg), x)
    assert not J.requires_grad


def test_forward_mode_strategy_gives_same_result():
    x = tg.tensor(X3, dtype=tg.float64)
    J1 = F.jacobian(tanh_net(tg), x, vectorize=True, strategy="forward-mode")
    J2 = F.jacobian(tanh_net(tg), x)
    np.testing.assert_allclose(J1.numpy(), J2.numpy())


def test_is_grads_batched_matches_torch(torch_mod):
    a = RNG.standard_normal((4, 3))
    x = tg.tensor(X3, requires_grad=True)
    tx = torch_mod.tensor(X3, requires_grad=True)
    y = (tg.tensor(a) @ x).tanh()
    ty = (torch_mod.tensor(a) @ tx).tanh()
    V = RNG.standard_normal((5, 4))
    (g,) = tg.autograd.grad(y, x, tg.tensor(V), is_grads_batched=True)
    (tg_,) = torch_mod.autograd.grad(ty, tx, torch_mod.tensor(V), is_grads_batched=True)
    assert_close(g, tg_)
    with pytest.raises(RuntimeError, match="second time"):
        tg.autograd.grad(y, x, tg.tensor(V), is_grads_batched=True)
