"""The pointwise activations of ``torch.nn.functional`` as one table of rows.

A row is ``(name, params, kernel, derivative)``: ``kernel(x, **params)`` computes the
value on a NumPy array; ``derivative(x, **params)`` is dy/dx written in tapegrad ops on
the saved input Tensor ``x`` (so ``create_graph`` gives higher derivatives). Each row
becomes one registered op (``tg.elu``, ...) whose Node is ``<Name>Backward`` and whose
backward is ``g · dy/dx``. At kinks the derivative is PyTorch's choice (noted per row).
Integer inputs compute in the default float dtype.
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import make_result
from ..tensor import Tensor
from ._registry import register
from ._util import float_data, kernel_result
from .elementwise import where

__all__ = ["ROWS"]

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _softplus_array(x):
    return np.logaddexp(0.0, x)  # a Python 0.0 keeps x's dtype (NEP 50)


def _mask(cond, x, value=1.0):
    """A constant derivative: ``value`` where ``cond`` holds, else 0, in x's dtype."""
    return Tensor._wrap(np.where(cond, value, 0.0).astype(x._data.dtype))


def _mish_derivative(x):
    t = x.softplus().tanh()
    return t + x * x.sigmoid() * (1.0 - t * t)


# (name, default params, kernel on arrays, dy/dx in tapegrad ops)
ROWS = [
    (  # at 0: the slope of the left piece (α), as torch
        "elu",
        {"alpha": 1.0},
        lambda x, alpha: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0))),
        lambda x, alpha: where(x._data > 0, 1.0, x.exp() * alpha),
    ),
    (
        "selu",
        {},
        lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0))),
        lambda x: where(x._data > 0, SELU_SCALE, x.exp() * (SELU_SCALE * SELU_ALPHA)),
    ),
    (
        "celu",
        {"alpha": 1.0},
        lambda x, alpha: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0) / alpha)),
        lambda x, alpha: where(x._data > 0, 1.0, (x / alpha).exp()),
    ),
    (  # at 0: the negative slope, as torch
        "leaky_relu",
        {"negative_slope": 0.01},
        lambda x, negative_slope: np.where(x > 0, x, x * negative_slope),
        lambda x, negative_slope: _mask(x._data > 0, x) + _mask(x._data <= 0, x, negative_slope),
    ),
    (  # at min_val and max_val: 0, as torch
        "hardtanh",
        {"min_val": -1.0, "max_val": 1.0},
        lambda x, min_val, max_val: np.clip(x, min_val, max_val),
        lambda x, min_val, max_val: _mask((x._data > min_val) & (x._data < max_val), x),
    ),
    (
        "relu6",
        {},
        lambda x: np.clip(x, 0.0, 6.0),
        lambda x: _mask((x._data > 0) & (x._data < 6), x),
    ),
    (
        "hardsigmoid",
        {},
        lambda x: np.clip(x / 6.0 + 0.5, 0.0, 1.0),
        lambda x: _mask((x._data > -3) & (x._data < 3), x, 1.0 / 6.0),
    ),
    (  # torch: 0 up to −3, x/3 + 1/2 on (−3, 3), 1 from 3 on
        "hardswish",
        {},
        lambda x: x * np.clip(x / 6.0 + 0.5, 0.0, 1.0),
        lambda x: where(x._data <= -3, 0.0, where(x._data < 3, x / 3.0 + 0.5, 1.0)),
    ),
    (
        "mish",
        {},
        lambda x: x * np.tanh(_softplus_array(x)),
        _mish_derivative,
    ),
    (
        "softsign",
        {},
        lambda x: x / (1.0 + np.abs(x)),
        lambda x: (x.abs() + 1.0) ** -2,
    ),
    (
        "softshrink",
        {"lambd": 0.5},
        lambda x, lambd: np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, 0.0)),
        lambda x, lambd: _mask(np.abs(x._data) > lambd, x),
    ),
    (
        "hardshrink",
        {"lambd": 0.5},
        lambda x, lambd: np.where(np.abs(x) > lambd, x, 0.0),
        lambda x, lambd: _mask(np.abs(x._data) > lambd, x),
    ),
    (
        "tanhshrink",
        {},
        lambda x: x - np.tanh(x),
        lambda x: x.tanh() ** 2,
    ),
    (
        "threshold",
        {"threshold": 0.0, "value": 0.0},
        lambda x, threshold, value: np.where(x > threshold, x, value),
        lambda x, threshold, value: _mask(x._data > threshold, x),
    ),
    (
        "logsigmoid",
        {},
        lambda x: -_softplus_array(-x),
        lambda x: (-x).sigmoid(),
    ),
]


def _make(name, defaults, kernel, derivative):
    node = "".join(p.capitalize() for p in name.split("_")) + "Backward"
    keys = tuple(defaults)

    def op(input, *args, **kwargs):
        params = dict(defaults)
        if len(args) > len(keys):
            raise TypeError(f"{name}() takes at most {len(keys) + 1} positional arguments")
        params.update(zip(keys, args))
        unknown = set(kwargs) - set(keys)
        if unknown:
            raise TypeError(f"{name}() got an unexpected keyword argument {sorted(unknown)[0]!r}")
        params.update(kwargs)
        x = float_data(input)
        with np.errstate(over="ignore", invalid="ignore"):
            out = kernel_result(kernel(x, **params), x)

        def backward(g):
            return (g * derivative(input, **params),)

        return make_result(out, (input,), backward, node, saved=(input,))

    op.__name__ = op.__qualname__ = name
    sig = ", ".join(f"{k}={v!r}" for k, v in defaults.items())
    op.__doc__ = f"``{name}(input{', ' + sig if sig else ''})``, as ``torch.nn.functional.{name}``."
    return register(name, method=False)(op)


for _row in ROWS:
    globals()[_row[0]] = _make(*_row)
    __all__.append(_row[0])
