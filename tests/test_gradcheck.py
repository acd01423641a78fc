"""gradcheck / gradgradcheck: they pass correct rules and name the failing element."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import GradcheckError, gradcheck, gradgradcheck
from tapegrad.autograd.graph import make_result


def _wrong_square(x):
    """x² with a deliberately wrong derivative (3x instead of 2x) at element 1 only."""

    def backward(g):
        factor = np.full(x.shape, 2.0)
        factor[1] = 3.0
        return (g * x * factor,)

    return make_result(x._data**2, (x,), backward, "WrongSquareBackward", saved=(x,))


def test_passes_on_correct_rules():
    x = tg.randn(3, 2, dtype=tg.float64, requires_grad=True)
    y = tg.randn(2, dtype=tg.float64, requires_grad=True)
    assert gradcheck(lambda a, b: (a * b).tanh() @ b, (x, y))
    assert gradgradcheck(lambda a, b: (a * b).tanh() @ b, (x, y))


def test_failure_names_input_element_and_values():
    x = tg.tensor([0.5, 1.0, -0.7], dtype=tg.float64, requires_grad=True)
    c = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
    with pytest.raises(GradcheckError) as info:
        gradcheck(lambda a, b: _wrong_square(b).sum() * a, (c, x))
    msg = str(info.value)
    assert "input 1" in msg and "element (1,)" in msg
    assert "analytic" in msg and "numeric" in msg
    assert (
        gradcheck(lambda a, b: _wrong_square(b).sum() * a, (c, x), raise_exception=False) is False
    )


def test_wrt_checks_captured_tensors_and_restores_them():
    w = tg.tensor([[0.3, -0.2], [0.1, 0.4]], dtype=tg.float64, requires_grad=True)
    before = w.detach().numpy().copy()
    x = tg.randn(2, dtype=tg.float64)
    assert gradcheck(lambda inp: (w @ inp).exp(), (x,), wrt=[w])
    np.testing.assert_array_equal(w.detach().numpy(), before)
    bad = tg.tensor([0.5, 1.0, 2.0], dtype=tg.float64, requires_grad=True)
    with pytest.raises(GradcheckError, match=r"wrt\[0\].*element \(1,\)"):
        gradcheck(lambda inp: _wrong_square(bad) * inp, (tg.ones(3, dtype=tg.float64),), wrt=[bad])


def test_gradgradcheck_catches_a_rule_that_is_not_differentiable():
    def detached_square(x):
        # backward built from raw arrays: first order right, second order lost
        return make_result(
            x._data**2, (x,), lambda g: (g * tg.tensor(2 * x._data),), "DetachedBackward"
        )

    x = tg.tensor([0.5, 1.5], dtype=tg.float64, requires_grad=True)
    assert gradcheck(detached_square, (x,))
    with pytest.raises(GradcheckError):
        gradgradcheck(detached_square, (x,))


def test_nothing_to_check_is_an_error():
    with pytest.raises(ValueError, match="nothing to check"):
        gradcheck(lambda a: a * 2.0, (tg.ones(2, dtype=tg.float64),))


def test_weights_are_deterministic():
    from tapegrad.autograd.gradcheck import _weights

    w = _weights((4,), np.float64, 0)
    np.testing.assert_array_equal(w, _weights((4,), np.float64, 0))
    assert w.min() >= -1 and w.max() < 1
