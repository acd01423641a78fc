"""Every warning tapegrad gives points at the user's line: ``stacklevel`` names the frame of the
code that called tapegrad, neither a tapegrad frame (too small) nor the caller's caller (too
large). Each call below is a one-line lambda of this file, so the warning's filename must be this
file and its line the lambda's."""

import sys
import warnings

import numpy as np
import pytest

import tapegrad as tg

F = tg.nn.functional


def _module_with_list_output():
    class M(tg.nn.Module):
        def forward(self, x):
            return [x * 2]

    m = M()
    m.register_full_backward_hook(lambda *a: None)
    return m


_HOOKED = _module_with_list_output()
_UINT8 = tg.tensor([1, 0], dtype=tg.uint8)
_X2 = tg.ones(2, 3)
_DUAL_X = tg.ones(2, dtype=tg.float64)

CALLS = {
    "cov-dof": lambda: tg.cov(_X2, correction=5),
    "Tensor.H-0d": lambda: tg.tensor(1.0).H,
    "where-uint8": lambda: tg.where(_UINT8, tg.ones(2), tg.zeros(2)),
    "mse_loss-sizes": lambda: F.mse_loss(tg.ones(3, 1), tg.ones(3)),
    "l1_loss-sizes": lambda: F.l1_loss(tg.ones(3, 1), tg.ones(3)),
    "kl_div-mean": lambda: F.kl_div(_X2, _X2),
    "dropout2d-2d": lambda: F.dropout2d(_X2, 0.5),
    "dropout2d-3d": lambda: F.dropout2d(tg.ones(2, 3, 4), 0.5),
    "dropout3d-2d": lambda: F.dropout3d(_X2, 0.5),
    "weight_norm-legacy": lambda: tg.nn.utils.weight_norm(tg.nn.Linear(2, 2)),
    "module-hook-list-output": lambda: _HOOKED(tg.ones(2, requires_grad=True)),
    "gradcheck-float32": lambda: tg.autograd.gradcheck(
        lambda x: x * 2, (tg.ones(2, requires_grad=True),), raise_exception=False
    ),
    "Tensor.resize": lambda: tg.ones(2, 3).resize(6),
    "checkpoint-no-grad": lambda: tg.utils.checkpoint.checkpoint(
        lambda x: x * 2, tg.ones(2), use_reentrant=False
    ),
}


def _line_of(fn):
    return fn.__code__.co_firstlineno


@pytest.mark.parametrize("name", list(CALLS))
def test_a_warning_points_at_the_users_line(name):
    fn = CALLS[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    assert caught, f"{name}: no warning"
    w = caught[0]
    assert (w.filename, w.lineno) == (__file__, _line_of(fn)), (name, str(w.message))


def test_forward_ad_no_grad_warning_points_at_the_users_line():
    fa = tg.autograd.forward_ad
    fa._WARNED[0] = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with fa.dual_level():
            x = fa.make_dual(_DUAL_X, tg.ones(2, dtype=tg.float64))
            y = x * 2
            line = sys._getframe().f_lineno + 1
            with tg.no_grad():
                pass
    assert y is not None
    w = [w for w in caught if "forward-mode AD" in str(w.message)][0]
    assert (w.filename, w.lineno) == (__file__, line)
    assert np.all(np.asarray(y.detach().numpy()) == 2.0)
