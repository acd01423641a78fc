"""linalg.eig / linalg.eigvals against torch (values, |V|, gradients to second order) for
real and complex input, gradcheck in complex128, and the phase-dependent loss error."""

import numpy as np
import pytest

import tapegrad as tg

R = np.random.default_rng(1)
WEIGHTS = np.array([1 + 2j, 0.5, -1j])


def _loss(m, L, V):
    """A loss that does not depend on the phase of the eigenvectors."""
    w = m.tensor(np.cos(np.arange(V.numel())).reshape(tuple(V.shape)))
    return (V.abs() ** 2 * w).sum() + (L * m.tensor(WEIGHTS)).real.sum()


def _through(m, A):
    a = m.tensor(A, requires_grad=True)
    L, V = m.linalg.eig(a)
    (g,) = m.autograd.grad(_loss(m, L, V), [a], create_graph=True)
    (gg,) = m.autograd.grad((g.abs() ** 2).sum() if g.is_complex() else (g * g).sum(), [a])
    ev = m.linalg.eigvals(a)
    (ge,) = m.autograd.grad((ev * ev).real.sum(), [a])
    arrays = [L, V.abs(), g, gg, ge]
    return str(L.dtype).split(".")[-1], [t.detach().resolve_conj().numpy() for t in arrays]


@pytest.mark.parametrize("kind", ["real", "complex"])
def test_matches_torch_to_second_order(kind, torch_mod):
    A = R.standard_normal((2, 3, 3))
    if kind == "complex":
        A = A + 1j * R.standard_normal((2, 3, 3))
    ours_dtype, ours = _through(tg, A)
    theirs_dtype, theirs = _through(torch_mod, A)
    assert ours_dtype == theirs_dtype == "complex128"
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)


def test_gradcheck_complex128():
    A = tg.tensor(R.standard_normal((3, 3)) + 1j * R.standard_normal((3, 3)), requires_grad=True)

    def fn(a):
        L, V = tg.linalg.eig(a)
        return L, V.abs()

    assert tg.autograd.gradcheck(fn, [A])
    assert tg.autograd.gradgradcheck(lambda a: tg.linalg.eigvals(a), [A])


def test_float32_gives_complex64():
    L, V = tg.linalg.eig(tg.eye(3) * 2)
    assert L.dtype == V.dtype == tg.complex64


def test_a_loss_depending_on_the_eigenvector_phase_raises():
    a = tg.tensor([[1.0, -2.0], [3.0, 1.0]], requires_grad=True)  # complex eigenvectors
    L, V = tg.linalg.eig(a)
    with pytest.raises(RuntimeError, match="ill-defined"):
        V.real.sum().backward()


def test_errors():
    with pytest.raises(RuntimeError, match="square"):
        tg.linalg.eig(tg.ones(2, 3))
    with pytest.raises(RuntimeError, match="infs or NaNs"):
        tg.linalg.eig(tg.tensor([[float("nan"), 0.0], [0.0, 1.0]]))
