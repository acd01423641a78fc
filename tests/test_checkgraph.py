"""check_graph / gradcheck(localize=True): name the one Node whose backward is wrong."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import GradcheckError

RNG = np.random.default_rng(5)
W = RNG.standard_normal((3, 3))


class WrongSquare(tg.autograd.Function):
    """x² with a backward that forgets the factor 2."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x


class RightSquare(WrongSquare):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2.0 * x


def ten_ops(x, square=WrongSquare):
    w = tg.tensor(W, dtype=x.dtype)
    h = (x @ w).tanh()  # 1 matmul, 2 tanh
    h = h * x.sigmoid() + 0.5  # 3 sigmoid, 4 mul, 5 add
    h = square.apply(h)  # 6 the custom Function
    h = h.exp().reshape(3, 2).transpose(0, 1)  # 7 exp, 8 reshape, 9 transpose
    return h.sum(dim=0).mean()  # 10 sum, 11 mean


def _x():
    return tg.tensor(RNG.uniform(-1, 1, (2, 3)), dtype=tg.float64, requires_grad=True)


def test_gradcheck_localize_names_the_function():
    x = _x()
    with pytest.raises(GradcheckError) as err:
        tg.autograd.gradcheck(ten_ops, (x,), localize=True)
    msg = str(err.value)
    assert "WrongSquareBackward" in msg
    assert "test_checkgraph.py" in msg and "square.apply(h)" in msg
    assert "[2, 3]" in msg  # its input/output shapes
    for other in ("TanhBackward", "ExpBackward", "MatmulBackward"):
        assert other not in msg


def test_check_graph_direct():
    with tg.autograd.checkable():
        y = ten_ops(_x())
    report = tg.autograd.check_graph(y, raise_exception=False)
    assert report is not None and report.name == "WrongSquareBackward"
    assert report.input_shapes == [(2, 3)] and report.output_shapes == [(2, 3)]
    assert abs(report.numeric - 2 * report.analytic) < 1e-3 * abs(report.numeric)
    with pytest.raises(GradcheckError, match="WrongSquareBackward"):
        tg.autograd.check_graph(y)


def test_correct_graph_passes_every_node_float32_too():
    with tg.autograd.checkable():
        y = ten_ops(_x(), square=RightSquare)
        y32 = ten_ops(tg.tensor(RNG.uniform(-1, 1, (2, 3)), requires_grad=True), square=RightSquare)
    assert tg.autograd.check_graph(y) is None
    assert tg.autograd.check_graph(y32) is None
    assert tg.autograd.gradcheck(lambda x: ten_ops(x, RightSquare), (_x(),), localize=True)


def test_finds_a_wrong_builtin_rule(monkeypatch):
    """A broken op rule (not a Function) is found by replaying the registered op."""
    from tapegrad.ops import elementwise

    monkeypatch.setattr(elementwise, "_tanh_backward", lambda g, out: (g * out,))
    with tg.autograd.checkable():
        y = ten_ops(_x(), square=RightSquare)
    report = tg.autograd.check_graph(y, raise_exception=False)
    assert report.name == "TanhBackward"


def test_graph_without_records_is_refused():
    y = ten_ops(_x(), square=RightSquare)
    with pytest.raises(RuntimeError, match="checkable"):
        tg.autograd.check_graph(y)
