"""Elementwise activation functions of ``torch.nn.functional``, as a table (Note [Op tables]).

Rows with ``params`` take PyTorch's keyword arguments (``alpha``, ``negative_slope``,
``lambd``...), passed to the kernel and to the derivative. Gradients at the kinks follow
PyTorch (0 at the clamp bounds of hardtanh/relu6/hardsigmoid, the left branch at 0 of
elu/leaky_relu). tapegrad.nn.functional exports :data:`FUNCTIONAL`, whose functions also
take ``inplace=``.
"""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from ._registry import OPS
from ._table import Unary, install, make_unary
from .elementwise import where

__all__ = ["ACTIVATIONS", "FUNCTIONAL"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _mask(array, like):
    return Tensor._wrap(np.asarray(array, like._data.dtype))


def _elu_grad(g, x, o, alpha=1.0):
    return g * where(Tensor._wrap(x._data > 0), 1.0, x.exp() * alpha)


def _celu_grad(g, x, o, alpha=1.0):
    return g * where(Tensor._wrap(x._data > 0), 1.0, (x / alpha).exp())


def _selu_grad(g, x, o):
    return g * where(Tensor._wrap(x._data > 0), _SELU_SCALE, x.exp() * (_SELU_SCALE * _SELU_ALPHA))


def _hardswish_grad(g, x, o):
    d = x._data
    middle = where(Tensor._wrap(d <= 3.0), x / 3.0 + 0.5, 1.0)
    return g * where(Tensor._wrap(d < -3.0), 0.0, middle)


def _mish_grad(g, x, o):
    t = x.softplus().tanh()
    return g * (t + x * x.sigmoid() * (1.0 - t * t))


def _logsigmoid(x):
    return np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))


def _threshold_kernel(x, threshold=None, value=None):
    if threshold is None or value is None:
        raise TypeError("threshold() missing required arguments 'threshold' and 'value'")
    return np.where(x > threshold, x, value)


def _no_bool(name):
    def check(dtype):
        if dtype == np.bool_:
            raise RuntimeError(f"Bool inputs not supported for {name}")

    return check


def _tanhshrink_grad(g, x, o):
    t = x.tanh()
    return g * t * t


ACTIVATIONS = [
    Unary(
        "elu",
        lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(x)),
        _elu_grad,
        params=(("alpha", 1.0),),
        method=False,
        function=False,
        float_only=True,
    ),
    Unary(
        "celu",
        lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(x / alpha)),
        _celu_grad,
        params=(("alpha", 1.0),),
        method=False,
        float_only=True,
    ),
    Unary(
        "selu",
        lambda x: _SELU_SCALE * np.where(x > 0, x, _SELU_ALPHA * np.expm1(x)),
        _selu_grad,
        method=False,
        float_only=True,
    ),
    Unary(
        "leaky_relu",
        lambda x, negative_slope=0.01: np.where(x > 0, x, x * negative_slope),
        lambda g, x, o, negative_slope=0.01: (
            g * _mask(np.where(x._data > 0, 1.0, negative_slope), g)
        ),
        params=(("negative_slope", 0.01),),
        method=False,
        function=False,
        float_only=True,
    ),
    Unary(
        "hardtanh",
        lambda x, min_val=-1.0, max_val=1.0: np.clip(x, min_val, max_val),
        lambda g, x, o, min_val=-1.0, max_val=1.0: (
            g * _mask((x._data > min_val) & (x._data < max_val), g)
        ),
        params=(("min_val", -1.0), ("max_val", 1.0)),
        domain=(-2.0, 2.0),
        method=False,
        function=False,
        check=_no_bool("hardtanh"),
        kind="same",
    ),
    Unary(
        "relu6",
        lambda x: np.clip(x, 0, 6),
        lambda g, x, o: g * _mask((x._data > 0) & (x._data < 6), g),
        domain=(-2.0, 8.0),
        method=False,
        function=False,
        inplace=False,
        check=_no_bool("relu6"),
        kind="same",
    ),
    Unary(
        "hardsigmoid",
        lambda x: np.clip(x / 6.0 + 0.5, 0.0, 1.0),
        lambda g, x, o: g * _mask((x._data > -3) & (x._data < 3), g) / 6.0,
        domain=(-5.0, 5.0),
        method=False,
        function=False,
        float_only=True,
    ),
    Unary(
        "hardswish",
        lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0,
        _hardswish_grad,
        domain=(-5.0, 5.0),
        method=False,
        function=False,
        float_only=True,
    ),
    Unary(
        "hardshrink",
        lambda x, lambd=0.5: np.where(np.abs(x) > lambd, x, 0),
        lambda g, x, o, lambd=0.5: g * _mask(np.abs(x._data) > lambd, g),
        params=(("lambd", 0.5),),
        inplace=False,
        float_only=True,
    ),
    Unary(
        "softshrink",
        lambda x, lambd=0.5: np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, 0)),
        lambda g, x, o, lambd=0.5: g * _mask(np.abs(x._data) > lambd, g),
        params=(("lambd", 0.5),),
        method=False,
        function=False,
        inplace=False,
        float_only=True,
    ),
    Unary(
        "tanhshrink",
        lambda x: x - np.tanh(x),
        _tanhshrink_grad,
        method=False,
        function=False,
        inplace=False,
        check=_no_bool("tanhshrink"),
        kind="float",
    ),
    Unary(
        "logsigmoid",
        _logsigmoid,
        lambda g, x, o: g * (-x).sigmoid(),
        method=False,
        function=False,
        inplace=False,
        float_only=True,
    ),
    Unary(
        "mish",
        lambda x: x * np.tanh(np.logaddexp(0, x)),
        _mish_grad,
        method=False,
        function=False,
        inplace=False,
        float_only=True,
    ),
    Unary(
        "softsign",
        lambda x: x / (1 + np.abs(x)),
        lambda g, x, o: g / ((x.abs() + 1.0) * (x.abs() + 1.0)),
        method=False,
        function=False,
        inplace=False,
        check=_no_bool("softsign"),
        kind="float",
    ),
    Unary(
        "threshold",
        _threshold_kernel,
        lambda g, x, o, threshold=None, value=None: g * _mask(x._data > threshold, g),
        params=(("threshold", None), ("value", None)),
        method=False,
        float_only=True,
    ),
]

for _row in ACTIVATIONS:
    _row.notes = _row.notes or "tg.nn.functional." + _row.name

FUNCTIONS = install(ACTIVATIONS, make_unary)


def _functional(name):
    op = OPS[name].fn
    op_ = OPS[f"{name}_"].fn if f"{name}_" in OPS else None

    def functional(input, *args, inplace=False, **kwargs):
        if inplace and op_ is not None:
            return op_(input, *args, **kwargs)
        return op(input, *args, **kwargs)

    functional.__name__ = name
    functional.__doc__ = op.__doc__ + " ``inplace=True`` writes into ``input``."
    return functional


FUNCTIONAL = {row.name: _functional(row.name) for row in ACTIVATIONS}
FUNCTIONAL["relu6"] = (lambda f: lambda input, inplace=False: f(input))(OPS["relu6"].fn)
