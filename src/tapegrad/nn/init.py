"""Parameter initialisation, in place, with PyTorch's formulas and a seedable generator.

Each function writes into ``tensor._data`` (no graph is recorded), bumps the
tensor's version counter, and returns the tensor. Random ones draw from
``generator`` (a ``tg.Generator``), by default ``tg.default_generator``, so
``tg.manual_seed`` makes model construction reproducible.
"""

from __future__ import annotations

import math

import numpy as np

from .._warn import warn
from ..creation import default_generator

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "constant_",
    "zeros_",
    "ones_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
]


def _rng(generator):
    return (generator or default_generator).numpy


def _write(tensor, values, op):
    tensor._data[...] = values
    tensor._vc.bump(op)
    return tensor


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity`` (PyTorch's table).

    >>> round(calculate_gain('relu'), 4)
    1.4142
    """
    linear = (
        "linear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "sigmoid",
    )
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _fans(tensor):
    shape = tensor._data.shape
    if len(shape) < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with samples of U(a, b)."""
    values = _rng(generator).uniform(a, b, size=tensor._data.shape)
    return _write(tensor, values, "uniform_")


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with samples of N(mean, std²)."""
    values = _rng(generator).normal(mean, std, size=tensor._data.shape)
    return _write(tensor, values, "normal_")


def constant_(tensor, val):
    return _write(tensor, val, "constant_")


def zeros_(tensor):
    return _write(tensor, 0, "zeros_")


def ones_(tensor):
    return _write(tensor, 1, "ones_")


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(−a, a) with a = gain·√(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std²) with std = gain·√(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    if 0 in tuple(tensor.shape):  # torch's check and warning, before the mode's
        warn("Initializing zero-element tensors is a no-op")
        return None
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _fans(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(−b, b) with b = gain·√(3 / fan) (He et al.); PyTorch's Linear/Conv use a = √5."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor  # zero-element tensor: nothing to fill
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std²) with std = gain / √fan."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)
