"""Every backward rule the complex guard lets through (ops/complex_guard.py) against torch
and central differences in complex128, to second order (Note [Complex autograd guard])."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd.graph import iter_graph
from tapegrad.ops import complex_guard

R = np.random.default_rng(7)
Z = R.standard_normal((2, 3)) + 1j * R.standard_normal((2, 3))
W = R.standard_normal((2, 3)) + 1j * R.standard_normal((2, 3))
X = np.abs(R.standard_normal((2, 3))) + 0.5

# name -> fn(m, z, w, x): z, w complex128 (2, 3), x float64 (2, 3) positive
CASES = {
    "add_sub": lambda m, z, w, x: z + w * 2 - x - (1 + 2j),
    "add_alpha": lambda m, z, w, x: m.add(z, w, alpha=1 - 1j),
    "mul": lambda m, z, w, x: z * w * x * (0.5 - 1j),
    "div": lambda m, z, w, x: z / w + x / z + (1j / w),
    "neg_exp": lambda m, z, w, x: (-z).exp() * (x * 1j).exp(),
    "matmul": lambda m, z, w, x: z @ w.transpose(0, 1) + m.mm(x.to(m.complex128), w.t()),
    "sum_mean": lambda m, z, w, x: z.sum(0) + w.mean(1).sum() + m.sum(z * x),
    "real_imag": lambda m, z, w, x: z.real * w.imag + m.real(w) * x,
    "conj": lambda m, z, w, x: z.conj() * w + m.conj_physical(w) + m.resolve_conj(z),
    "abs": lambda m, z, w, x: (z * w).abs() + z.abs() * x,
    "angle": lambda m, z, w, x: z.angle() * x + w.angle(),
    "view_as_real": lambda m, z, w, x: m.view_as_real(z * w),
    "view_as_complex": lambda m, z, w, x: m.view_as_complex(m.stack([x, x * x], -1)) * z,
    "complex": lambda m, z, w, x: m.complex(x, x * x) * w,
    "polar": lambda m, z, w, x: m.polar(x, x * x),
    "shape_ops": lambda m, z, w, x: z.reshape(3, 2).t().flatten().view(2, 3)[1:, ::2],
    "index_cat_stack": lambda m, z, w, x: m.cat([z, w])[[0, 3]] + m.stack([z, w]).sum(0),
    "expand_permute": lambda m, z, w, x: z[None].expand(2, 2, 3).permute(2, 0, 1).clone(),
    "select_flip_roll": lambda m, z, w, x: z.select(0, 1).flip(0).roll(1) * w[0],
    "split_unbind": lambda m, z, w, x: z.split(1)[1] * w.unbind(0)[0],
    "to_complex": lambda m, z, w, x: x.to(m.complex128) * z,
    "diagonal": lambda m, z, w, x: m.diag_embed(z[:, :2].diagonal()) @ w[:, 1:],
    "solve": lambda m, z, w, x: m.linalg.solve(z[:, :2] + 2, w),
    "index_repeated": lambda m, z, w, x: z[[0, 0, 1]] * w[[1, 1, 0]],  # complex scatter-add
    "unfold": lambda m, z, w, x: z.unfold(-1, 2, 1) * w[:, :2, None],
    "pad": lambda m, z, w, x: _pads(m, z),
}


def _pads(m, z):
    F = m.nn.functional
    out = [F.pad(z[None], (2, 1), mode=mode)[0] for mode in ("reflect", "replicate", "circular")]
    return m.cat(out + [F.pad(z, (1, 2), value=0.0)], -1)


def _run(m, name):
    z = m.tensor(Z, requires_grad=True)
    w = m.tensor(W, requires_grad=True)
    x = m.tensor(X, requires_grad=True)
    out = CASES[name](m, z, w, x)
    v = np.cos(np.arange(out.numel())).reshape(tuple(out.shape))
    if out.is_complex():
        v = v + 1j * np.sin(np.arange(out.numel())).reshape(tuple(out.shape))
    cot = m.tensor(v, dtype=out.dtype)
    grads = m.autograd.grad(out, [z, w, x], grad_outputs=cot, allow_unused=True)
    return out, grads


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name, torch_mod):
    ours, ours_g = _run(tg, name)
    theirs, theirs_g = _run(torch_mod, name)
    assert str(ours.dtype) == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().resolve_conj().numpy())
    for a, b in zip(ours_g, theirs_g):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a.numpy(), b.resolve_conj().numpy(), atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_complex128(name):
    inputs = (
        tg.tensor(Z, requires_grad=True),
        tg.tensor(W, requires_grad=True),
        tg.tensor(X, requires_grad=True),
    )
    fn = CASES[name]
    assert tg.autograd.gradcheck(lambda z, w, x: fn(tg, z, w, x), inputs)
    assert tg.autograd.gradgradcheck(lambda z, w, x: fn(tg, z, w, x), inputs)


def test_every_admitted_rule_is_exercised():
    """A Node name in the guard's lists is a claim that its rule holds for complex tensors:
    each must appear in a graph checked here, in test_fft.py or in test_eig.py."""
    seen = set()
    for name in CASES:
        z = tg.tensor(Z, requires_grad=True)
        w = tg.tensor(W, requires_grad=True)
        x = tg.tensor(X, requires_grad=True)
        out = CASES[name](tg, z, w, x)
        seen |= {node.name() for node in iter_graph([out])}
    elsewhere = {"FftC2CBackward", "FftR2CBackward", "FftC2RBackward", "FftResizeBackward"}
    # only in second-order graphs (gradgradcheck here and in test_eig.py)
    elsewhere |= {"LinalgEigBackward", "IndexPutAccumulateBackward", "SelectBackward"}
    elsewhere |= {"DiagonalBackwardBackward", "UnfoldBackwardBackward"}
    admitted = complex_guard.SAME | complex_guard.HOLOMORPHIC | set(complex_guard.REPLACED)
    assert admitted - seen - elsewhere == set()


def test_gradcheck_checks_both_directions_of_a_complex_input():
    z = tg.tensor([1 + 2j], dtype=tg.complex128, requires_grad=True)

    # |z|^2 = Re(z conj z), whose gradient is 2z, through a rule that returns 2 conj(z)
    class Bad(tg.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return (t * t.conj()).real

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return g * 2 * t.conj()  # the right rule is g * 2 * t

    assert not tg.autograd.gradcheck(Bad.apply, (z,), raise_exception=False)
