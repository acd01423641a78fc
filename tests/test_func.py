"""tg.func transforms against torch.func: grad, value_and_grad, jacrev, jacfwd, hessian."""

import numpy as np
import pytest

import tapegrad as tg

from ._autograd_helpers import assert_close, slice_

RNG = np.random.default_rng(11)
X = RNG.standard_normal(3)
Y = RNG.standard_normal(3)


def f(m):
    return lambda x, y: ((x * y).tanh() * x.exp()).sum() + (y**3).sum()


def vec(m):
    return lambda x, y: (x * y).sigmoid() * x


def _args(m):
    return m.tensor(X), m.tensor(Y)


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_grad_and_value_and_grad(torch_mod, argnums):
    ours = tg.func.grad(f(tg), argnums=argnums)(*_args(tg))
    theirs = torch_mod.func.grad(f(torch_mod), argnums=argnums)(*_args(torch_mod))
    assert_close(ours, theirs)
    (v, g) = tg.func.value_and_grad(f(tg), argnums=argnums)(*_args(tg))
    (tg_, tv) = torch_mod.func.grad_and_value(f(torch_mod), argnums=argnums)(*_args(torch_mod))
    assert_close((v, g), (tv, tg_))
    assert_close(tg.func.grad_and_value(f(tg), argnums=argnums)(*_args(tg)), (tg_, tv))
    assert not v.requires_grad


def test_grad_results_do_not_require_grad():
    g = tg.func.grad(f(tg))(*_args(tg))
    assert not g.requires_grad and g.grad_fn is None


def test_has_aux(torch_mod):
    def h(m):
        return lambda x: ((x * x).sum(), x.exp())

    g, aux = tg.func.grad(h(tg), has_aux=True)(tg.tensor(X))
    tg_, taux = torch_mod.func.grad(h(torch_mod), has_aux=True)(torch_mod.tensor(X))
    assert_close(g, tg_)
    assert_close(aux, taux)


def test_grad_of_grad(torch_mod):
    def g2(m):
        inner = m.func.grad(lambda x: (x.sin() if m is not tg else x.tanh()).mul(x).sum())
        return m.func.grad(lambda x: (inner(x) * inner(x)).sum())

    def g2_same(m):
        inner = m.func.grad(lambda x: (x.tanh() * x).sum())
        return m.func.grad(lambda x: (inner(x) * inner(x)).sum())

    assert_close(g2_same(tg)(tg.tensor(X)), g2_same(torch_mod)(torch_mod.tensor(X)))
    assert g2(tg)(tg.tensor(X)).shape == (3,)


def test_third_order_composition(torch_mod):
    def make(m):
        g = m.func.grad(lambda x: (x.tanh() * x * x).sum())
        gg = m.func.grad(lambda x: g(x).sum())
        return m.func.grad(lambda x: gg(x).sum())

    assert_close(make(tg)(tg.tensor(X)), make(torch_mod)(torch_mod.tensor(X)))


def test_perturbation_confusion(torch_mod):
    def make(m):
        c = m.tensor(1.0, dtype=m.float64)
        return m.func.grad(lambda x: x * m.func.grad(lambda y: x * y * y)(c))

    assert_close(
        make(tg)(tg.tensor(2.0, dtype=tg.float64)),
        make(torch_mod)(torch_mod.tensor(2.0, dtype=torch_mod.float64)),
    )


@pytest.mark.parametrize("argnums", [0, (0, 1)])
def test_jacrev_jacfwd(torch_mod, argnums):
    for ours_t, theirs_t in (("jacrev", "jacrev"), ("jacfwd", "jacfwd")):
        ours = getattr(tg.func, ours_t)(vec(tg), argnums=argnums)(*_args(tg))
        theirs = getattr(torch_mod.func, theirs_t)(vec(torch_mod), argnums=argnums)(
            *_args(torch_mod)
        )
        assert_close(ours, theirs)


def test_jacrev_seed_example():
    J = tg.func.jacrev(lambda x: slice_(tg, x, 0, 2) + slice_(tg, x, 1, 3))(tg.tensor(X))
    np.testing.assert_array_equal(J.numpy(), [[1, 1, 0], [0, 1, 1]])


def test_jacrev_tuple_outputs(torch_mod):
    def two(m):
        return lambda x: (x.exp(), (x * x).sum())

    assert_close(
        tg.func.jacrev(two(tg))(tg.tensor(X)),
        torch_mod.func.jacrev(two(torch_mod))(torch_mod.tensor(X)),
    )


def test_hessian(torch_mod):
    h = tg.func.hessian(lambda x: (x**2).sum())(tg.tensor(X))
    np.testing.assert_allclose(h.numpy(), 2 * np.eye(3))
    ours = tg.func.hessian(f(tg), argnums=(0, 1))(*_args(tg))
    theirs = torch_mod.func.hessian(f(torch_mod), argnums=(0, 1))(*_args(torch_mod))
    assert_close(ours, theirs)


def test_errors():
    with pytest.raises(RuntimeError, match="single element"):
        tg.func.grad(lambda x: x * 2.0)(tg.tensor(X))
    with pytest.raises(ValueError, match="argnums"):
        tg.func.grad(lambda x: x.sum(), argnums=2)(tg.tensor(X))
    with pytest.raises(TypeError, match="Tensor"):
        tg.func.grad(lambda x: x.sum())(3.0)
