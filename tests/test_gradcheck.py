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


# -- issue 18: as strict as PyTorch's gradcheck -----------------------------------------------


def test_defaults_are_pytorchs(torch_mod):
    """eps, atol and rtol default to PyTorch's, for gradcheck and gradgradcheck alike."""
    import inspect

    for ours, theirs in (
        (gradcheck, torch_mod.autograd.gradcheck),
        (gradgradcheck, torch_mod.autograd.gradgradcheck),
    ):
        mine, ref = inspect.signature(ours).parameters, inspect.signature(theirs).parameters
        for name in ("eps", "atol", "rtol"):
            assert mine[name].default == ref[name].default, (ours.__name__, name)


def _scaled_exp(x, factor, second=1.0):
    """exp(x) whose derivative is ``factor``·exp(x); its second derivative is ``second``x."""

    def backward(g):
        return (g * _scaled_exp(x, second) * factor,)

    return make_result(np.exp(x._data), (x,), backward, "ScaledExpBackward", saved=(x,))


def test_default_tolerances_catch_a_one_percent_error():
    x = tg.tensor([0.3, -1.2, 1.7], dtype=tg.float64, requires_grad=True)
    assert gradcheck(lambda a: _scaled_exp(a, 1.0), (x,))
    with pytest.raises(GradcheckError, match="input 0"):
        gradcheck(lambda a: _scaled_exp(a, 1.01), (x,))
    assert gradgradcheck(lambda a: _scaled_exp(a, 1.0), (x,))
    with pytest.raises(GradcheckError):
        gradgradcheck(lambda a: _scaled_exp(a, 1.0, second=1.01), (x,))


def test_numeric_derivative_is_a_central_difference():
    """At eps=1e-2 a one-sided difference is off by f''·eps/2 (0.5% for exp); central passes."""
    x = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
    assert gradcheck(lambda a: a.exp(), (x,), eps=1e-2)
    assert gradcheck(lambda a: a.exp(), (x,), eps=1e-2, rtol=1e-4, atol=1e-4)


def test_lower_precision_inputs_warn():
    x = tg.tensor([0.5, 1.0], requires_grad=True)  # float32
    with pytest.warns(UserWarning, match="float32, not float64"):
        gradcheck(lambda a: a * 2.0, (x,), eps=1e-2, atol=1e-2)


def _linear_with_bad_double_backward(x):
    """y = 2x; its backward g -> 2g is itself a Node whose own backward says 3v (wrong)."""

    def backward(g):
        def backward_of_backward(v):
            return (v * 3.0,)

        return (make_result(2.0 * g._data, (g,), backward_of_backward, "TwiceBackward"),)

    return make_result(2.0 * x._data, (x,), backward, "TwiceForward")


def test_gradgradcheck_checks_the_upstream_gradient():
    """The second derivative in x of a linear op is zero; only d(grad)/d(upstream) can fail."""
    x = tg.tensor([0.5, 1.5, -0.4], dtype=tg.float64, requires_grad=True)
    assert gradcheck(_linear_with_bad_double_backward, (x,))
    with pytest.raises(GradcheckError, match=r"input 1 \(shape \[3\]"):
        gradgradcheck(_linear_with_bad_double_backward, (x,))
    assert gradgradcheck(lambda a: a * 2.0, (x,))


def test_gradgradcheck_upstream_of_several_outputs():
    x = tg.tensor([0.5, 1.5], dtype=tg.float64, requires_grad=True)
    assert gradgradcheck(lambda a: (a.exp(), _scaled_exp(a, 1.0)), (x,))
    with pytest.raises(GradcheckError, match="input 2"):
        gradgradcheck(lambda a: (a.exp(), _linear_with_bad_double_backward(a)), (x,))
