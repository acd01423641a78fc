"""Issue 15: forward-mode levels as PyTorch 2.13 has them (nested dual levels raise;
the tg.func transforms nest), second-order forward mode, and jacfwd under vmap in true
forward mode (Note [jacfwd under vmap]), against torch.func in float64."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.autograd.forward_ad as fwAD
from tapegrad import _func_fwd, func

F = tg.func
NESTED = "Nested forward mode AD is not supported at the moment"


def _t(a):
    return tg.tensor(np.asarray(a, dtype=np.float64))


def test_nested_dual_levels_raise_as_torch(torch_mod):
    torch = torch_mod
    for m, ad in ((tg, fwAD), (torch, torch.autograd.forward_ad)):
        x = m.tensor([1.0, 2.0], dtype=m.float64)
        with ad.dual_level() as lvl:
            assert lvl == 0
            with pytest.raises(RuntimeError, match=NESTED):
                with ad.dual_level():
                    pass
            with pytest.raises(RuntimeError, match=NESTED):
                ad.enter_dual_level()
            # the outer level survives the refused inner one
            d = ad.make_dual(x, m.ones(2, dtype=m.float64))
            np.testing.assert_allclose(ad.unpack_dual(d * d).tangent.detach().numpy(), [2.0, 4.0])
            with pytest.raises(RuntimeError, match="Invalid level given to _make_dual"):
                ad.make_dual(x, x, level=1)
        level = ad.enter_dual_level()
        with pytest.raises(RuntimeError, match="not the last one that was created"):
            ad.exit_dual_level(level=level + 1)
        ad.exit_dual_level(level=level)
        assert ad.unpack_dual(x).tangent is None


def test_transforms_inside_a_user_dual_level_raise_as_torch(torch_mod):
    torch = torch_mod

    def inner_dual(m, ad):
        def g(x):
            with ad.dual_level():
                d = ad.make_dual(x, m.ones_like(x))
                return ad.unpack_dual(d.sin()).tangent

        return g

    for m, ad, fn in (
        (tg, fwAD, F),
        (torch, torch.autograd.forward_ad, torch.func),
    ):
        x = m.tensor([0.5, -1.0], dtype=m.float64)
        with ad.dual_level():
            with pytest.raises(RuntimeError, match=NESTED):
                fn.jvp(m.sin, (x,), (x,))
            with pytest.raises(RuntimeError, match=NESTED):
                fn.jacfwd(m.sin)(x)
        with pytest.raises(RuntimeError, match=NESTED):
            fn.jvp(inner_dual(m, ad), (x,), (x,))
        # the level of a failed transform is closed again
        with ad.dual_level():
            pass


def _f(m):
    return lambda x: (x.sin() * x**2).sum() + (x[0] * x[1:]).exp().sum()


def test_jvp_of_jvp_is_the_second_directional_derivative(torch_mod):
    torch = torch_mod
    rng = np.random.default_rng(0)
    xa, va, wa = (rng.standard_normal(4) for _ in range(3))
    for m, fn in ((tg, F), (torch, torch.func)):
        x, v, w = (m.tensor(a, dtype=m.float64) for a in (xa, va, wa))
        first = lambda x: fn.jvp(_f(m), (x,), (v,))[1]  # noqa: B023, E731
        out, second = fn.jvp(first, (x,), (w,))
        if m is tg:
            ours = (out.numpy(), second.numpy())
        else:
            theirs = (out.numpy(), second.numpy())
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-10)
    H = F.hessian(_f(tg))(_t(xa)).numpy()
    np.testing.assert_allclose(ours[1], wa @ H @ va, rtol=1e-10)
    # finite differences of the first jvp along w
    h = 1e-6
    fd = (
        F.jvp(_f(tg), (_t(xa + h * wa),), (_t(va),))[1].numpy()
        - F.jvp(_f(tg), (_t(xa - h * wa),), (_t(va),))[1].numpy()
    ) / (2 * h)
    np.testing.assert_allclose(ours[1], fd, rtol=1e-6)

    # third order: jvp of jvp of jvp, against torch.func
    def third(m, fn, v, w, u):
        g1 = lambda x: fn.jvp(_f(m), (x,), (v,))[1]  # noqa: E731
        g2 = lambda x: fn.jvp(g1, (x,), (w,))[1]  # noqa: E731
        return fn.jvp(g2, (x3[m],), (u,))[1]

    x3 = {tg: _t(xa), torch: torch.tensor(xa)}
    ua = rng.standard_normal(4)
    a = third(tg, F, _t(va), _t(wa), _t(ua)).numpy()
    b = third(torch, torch.func, *(torch.tensor(z) for z in (va, wa, ua))).numpy()
    np.testing.assert_allclose(a, b, rtol=1e-10)


def test_jacfwd_of_jvp_and_jvp_of_jacfwd(torch_mod):
    torch = torch_mod
    rng = np.random.default_rng(1)
    xa, va = rng.standard_normal(3), rng.standard_normal(3)

    def g(m):
        return lambda x: x.tanh() * x.sum() + x.exp()

    for build in (
        lambda m, fn, v: fn.jacfwd(lambda x: fn.jvp(g(m), (x,), (v,))[1]),
        lambda m, fn, v: lambda x: fn.jvp(fn.jacfwd(g(m)), (x,), (v,))[1],
        lambda m, fn, v: fn.jacfwd(fn.jacfwd(g(m))),
    ):
        ours = build(tg, F, _t(va))(_t(xa)).numpy()
        theirs = build(torch, torch.func, torch.tensor(va))(torch.tensor(xa)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


# -- jacfwd under vmap -----------------------------------------------------------------------


@pytest.fixture
def forward_only(monkeypatch):
    """jacfwd under vmap must not fall back: reverse mode and the per-direction loop raise."""

    def refuse(*a, **k):
        raise AssertionError("jacfwd under vmap fell back")

    monkeypatch.setattr(_func_fwd, "_loop", refuse)
    return refuse


def _mlp(m, W):
    return lambda x: (x.tanh() @ W).sin() * x.sum()


@pytest.mark.parametrize("in_dim", [0, 1])
def test_vmap_of_jacfwd_is_batched_forward_mode(torch_mod, forward_only, monkeypatch, in_dim):
    torch = torch_mod
    rng = np.random.default_rng(2)
    Xa, Wa = rng.standard_normal((4, 3)), rng.standard_normal((3, 5))
    Xa = Xa if in_dim == 0 else Xa.T.copy()
    monkeypatch.setattr(func, "jacrev", forward_only)
    ours = F.vmap(F.jacfwd(_mlp(tg, _t(Wa))), in_dims=in_dim)(_t(Xa))
    theirs = torch.func.vmap(torch.func.jacfwd(_mlp(torch, torch.tensor(Wa))), in_dims=in_dim)(
        torch.tensor(Xa)
    )
    assert tuple(ours.shape) == tuple(theirs.shape) == (4, 5, 3)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-14)
    # a loop of single jacfwd calls
    cols = Xa if in_dim == 0 else Xa.T
    loop = np.stack([F.jacfwd(_mlp(tg, _t(Wa)))(_t(c)).numpy() for c in cols])
    np.testing.assert_allclose(ours.numpy(), loop, rtol=1e-12, atol=1e-14)


def test_vmap_of_jacfwd_argnums_unmapped_args_and_nesting(torch_mod, forward_only, monkeypatch):
    torch = torch_mod
    monkeypatch.setattr(func, "jacrev", forward_only)
    rng = np.random.default_rng(3)
    Xa, Wa = rng.standard_normal((3, 4)), rng.standard_normal((3, 2))

    def g(m):
        return lambda x, w: ((x @ w).exp().sum(-1, keepdim=True) * x[:1], w.sum())

    ours = F.vmap(F.jacfwd(g(tg), argnums=(0, 1)), in_dims=(1, None))(_t(Xa), _t(Wa))
    theirs = torch.func.vmap(torch.func.jacfwd(g(torch), argnums=(0, 1)), in_dims=(1, None))(
        torch.tensor(Xa), torch.tensor(Wa)
    )
    for row_o, row_t in zip(ours, theirs):
        for a, b in zip(row_o, row_t):
            assert tuple(a.shape) == tuple(b.shape)
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14)
    # nested vmap: a 2 x 2 grid of Jacobians
    Ya = rng.standard_normal((2, 2, 3))
    W2 = rng.standard_normal((3, 5))
    ours = F.vmap(F.vmap(F.jacfwd(_mlp(tg, _t(W2)))))(_t(Ya))
    theirs = torch.func.vmap(torch.func.vmap(torch.func.jacfwd(_mlp(torch, torch.tensor(W2)))))(
        torch.tensor(Ya)
    )
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-14)


def _h(m):
    return lambda x: (x.sin() * x.exp()).sum() * x.cos().sum()


def test_hessians_under_vmap_agree_with_torch_func(torch_mod, forward_only):
    torch = torch_mod
    Xa = np.random.default_rng(4).standard_normal((3, 4))
    want = torch.func.vmap(torch.func.hessian(_h(torch)))(torch.tensor(Xa)).numpy()
    for h in (
        F.hessian(_h(tg)),
        F.jacfwd(F.jacrev(_h(tg))),
        F.jacfwd(F.jacfwd(_h(tg))),
        F.jacrev(F.jacfwd(_h(tg))),
    ):
        np.testing.assert_allclose(F.vmap(h)(_t(Xa)).numpy(), want, rtol=1e-10, atol=1e-12)
    # jacfwd(jacrev(f)) == hessian(f) outside vmap too, and jacfwd of a vmapped function
    x = _t(Xa[0])
    np.testing.assert_allclose(
        F.jacfwd(F.jacrev(_h(tg)))(x).numpy(), F.hessian(_h(tg))(x).numpy(), rtol=1e-12
    )
    Wa = np.random.default_rng(5).standard_normal((4, 2))
    ours = F.jacfwd(F.vmap(_mlp(tg, _t(Wa))))(_t(Xa))
    theirs = torch.func.jacfwd(torch.func.vmap(_mlp(torch, torch.tensor(Wa))))(torch.tensor(Xa))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-14)


def test_grad_of_vmap_of_jacfwd_matches_torch(torch_mod):
    """The Jacobian from forward mode under vmap stays differentiable (reverse over it)."""
    torch = torch_mod
    rng = np.random.default_rng(6)
    Xa, Wa = rng.standard_normal((3, 2)), rng.standard_normal((2, 4))

    def loss(m, fn):
        return lambda W, X: (fn.vmap(fn.jacfwd(lambda x: (x @ W).tanh()))(X) ** 2).sum()

    ours = F.grad(loss(tg, F))(_t(Wa), _t(Xa)).detach().numpy()
    theirs = torch.func.grad(loss(torch, torch.func))(torch.tensor(Wa), torch.tensor(Xa)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
