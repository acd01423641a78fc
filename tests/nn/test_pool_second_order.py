"""Pooling's double backward (issue 18): gradgradcheck and PyTorch's HVP for every path.

Pooling is piecewise linear, so its second derivative in x is zero and only the
derivative of its backward with respect to the upstream gradient tests the
double-backward rules (_scatter/_gather, their tiled forms, the average-pooling
adjoint). Both checks below differentiate with respect to that gradient.
"""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F
from tapegrad.autograd import gradgradcheck

from .._second_order import check_against_torch

rng = np.random.default_rng(18)

MAX_CASES = [
    # (kernel, stride, padding, dilation, ceil_mode): (2,) tiles the input (Note [Tiled
    # max pooling]), the others take the general gather/scatter path
    ((2,), {}),
    (((2, 3),), {}),
    ((3, 2, 1), {}),
    ((2, 1, 0, 2), {}),
    ((3, 2, 1), {"ceil_mode": True}),
]


def _fm(m):
    return m.nn.functional if m.__name__ == "torch" else F


def _distinct(shape):
    """Values with no ties within any window (the max is unique, so torch agrees)."""
    return rng.permutation(int(np.prod(shape))).reshape(shape) / 10.0 - 2.0


@pytest.mark.parametrize(("args", "kw"), MAX_CASES, ids=[str(c) for c in MAX_CASES])
def test_max_pool2d_double_backward(args, kw, torch_mod):
    x = _distinct((1, 2, 5, 6))
    fn = lambda m, x: _fm(m).max_pool2d(x, *args, **kw)  # noqa: E731
    check_against_torch(fn, [x], torch_mod)
    # gradgradcheck differentiates w.r.t. the upstream gradient as well (issue 18)
    xt = tg.tensor(x, requires_grad=True)
    assert gradgradcheck(lambda a: F.max_pool2d(a, *args, **kw), (xt,))


AVG_CASES = [
    # (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    (2,),
    (3, 2, 1, False, False),
    ((3, 2), (2, 1), (1, 1), True, True),
    (2, 1, 1, False, True, 3),
]


@pytest.mark.parametrize("args", AVG_CASES, ids=[str(c) for c in AVG_CASES])
def test_avg_pool2d_double_backward(args, torch_mod):
    x = rng.standard_normal((1, 2, 5, 6))
    check_against_torch(lambda m, x: _fm(m).avg_pool2d(x, *args), [x], torch_mod)
    assert gradgradcheck(lambda a: F.avg_pool2d(a, *args), (tg.tensor(x, requires_grad=True),))


def test_max_pool2d_third_order(torch_mod):
    """The gather/scatter pair closes under differentiation: a third derivative in v."""
    x, w = _distinct((1, 2, 5, 5)), rng.standard_normal((1, 2, 2, 2))
    got = []
    for m in (tg, torch_mod):
        xs = m.tensor(x, requires_grad=True)
        v = m.tensor(w, requires_grad=True)
        (g,) = m.autograd.grad(_fm(m).max_pool2d(xs, 3, 2), xs, v, create_graph=True)
        (gv,) = m.autograd.grad((g * g).sum(), v, create_graph=True)
        (gvv,) = m.autograd.grad((gv**2).sum(), v)
        got.append(gvv.detach().numpy())
    np.testing.assert_allclose(got[0], got[1], rtol=1e-9)


def test_max_pool2d_windows_inside_the_padding_send_nothing():
    """A dilated window can hold only padding (width 2, taps at -1 and 2): its -inf output
    depends on no input, so the gradient and the double backward through it are zero (the
    gather of the double backward reads the padding as 0). torch 2.13 is no oracle here: it
    reports index 2, a position outside the window, sends the gradient there, and its double
    backward fails with "index 4 is out of bounds"."""
    x = tg.tensor(_distinct((1, 2, 3, 2)), requires_grad=True)
    fn = lambda a: F.max_pool2d(a, (1, 2), 1, (0, 1), (1, 3))  # noqa: E731
    out = fn(x)
    assert np.isneginf(out.detach().numpy()).all()
    v = tg.tensor(rng.standard_normal(out.shape), requires_grad=True)
    (g,) = tg.autograd.grad(out, x, v, create_graph=True)
    assert not g.detach().numpy().any()
    (gv,) = tg.autograd.grad(g, v, tg.ones_like(g))
    assert not gv.numpy().any()
    assert gradgradcheck(fn, (x,))
