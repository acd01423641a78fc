"""The activation functions of ``torch.nn.functional`` beyond relu/gelu/silu/softplus, with
torch's signatures. The pointwise ones are ops of ``ops.activation_rows``; glu, softmin,
prelu and rrelu are composed here. ``inplace=True`` writes the result into ``input`` and
returns it, as PyTorch does: the ``_`` forms at the end of this file, each made by
:func:`~tapegrad.ops._table.make_inplace` (Note [In-place activations]).
"""

from __future__ import annotations

import numpy as np

from ..creation import default_generator
from ..ops import activation_rows as rows
from ..ops import softmax as _softmax_ops
from ..ops._registry import exported_namespace
from ..ops._table import make_inplace
from ..ops.elementwise import where
from ..tensor import Tensor

rows = exported_namespace(rows)  # vmap dispatch and torch-like TypeErrors

__all__ = [
    "elu",
    "selu",
    "celu",
    "leaky_relu",
    "hardtanh",
    "relu6",
    "hardsigmoid",
    "hardswish",
    "mish",
    "softsign",
    "softshrink",
    "hardshrink",
    "tanhshrink",
    "threshold",
    "logsigmoid",
    "glu",
    "softmin",
    "prelu",
    "rrelu",
]


def elu(input, alpha=1.0, inplace=False):
    """x for x > 0, α(eˣ − 1) otherwise."""
    if inplace:
        return elu_(input, alpha)
    return rows.elu(input, alpha)


def selu(input, inplace=False):
    """scale · elu(x, α) with PyTorch's constants (self-normalising)."""
    if inplace:
        return selu_(input)
    return rows.selu(input)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, α(e^(x/α) − 1))."""
    if inplace:
        return celu_(input, alpha)
    return rows.celu(input, alpha)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x for x > 0, ``negative_slope``·x otherwise."""
    if inplace:
        return leaky_relu_(input, negative_slope)
    return rows.leaky_relu(input, negative_slope)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clipped to [min_val, max_val]."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return hardtanh_(input, min_val, max_val)
    return rows.hardtanh(input, min_val, max_val)


def relu6(input, inplace=False):
    """min(max(0, x), 6)."""
    if inplace:
        return _relu6_(input)
    return rows.relu6(input)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6."""
    if inplace:
        return _hardsigmoid_(input)
    return rows.hardsigmoid(input)


def hardswish(input, inplace=False):
    """x · relu6(x + 3) / 6."""
    if inplace:
        return _hardswish_(input)
    return rows.hardswish(input)


def mish(input, inplace=False):
    """x · tanh(softplus(x))."""
    if inplace:
        return _mish_(input)
    return rows.mish(input)


def softsign(input):
    """x / (1 + |x|)."""
    return rows.softsign(input)


def softshrink(input, lambd=0.5):
    """x − λ above λ, x + λ below −λ, 0 between."""
    if lambd < 0:
        top = np.finfo(input.dtype).max if input.is_floating_point() else float("inf")
        raise RuntimeError(
            f"softshrink: lambda must be in range [0, {top:g}] for input dtype {input.dtype}, "
            f"but found {lambd}"
        )
    return rows.softshrink(input, lambd)


def hardshrink(input, lambd=0.5):
    """x where |x| > λ, else 0."""
    return rows.hardshrink(input, lambd)


def tanhshrink(input):
    """x − tanh x."""
    return rows.tanhshrink(input)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else ``value``."""
    if inplace:
        return threshold_(input, threshold, value)
    return rows.threshold(input, threshold, value)


def logsigmoid(input):
    """log σ(x) = −softplus(−x), computed stably."""
    return rows.logsigmoid(input)


def glu(input, dim=-1):
    """a ⊙ σ(b), where a and b are the halves of ``input`` along ``dim``."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    n = input.shape[dim]
    if n % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {dim % input.ndim} is size {n}"
        )
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(−x) along ``dim``."""
    from .functional import _softmax_dim  # noqa: PLC0415 - functional imports this module

    x = input.to(dtype) if dtype is not None else input
    return _softmax_ops.softmax(-x, _softmax_dim(x, dim, "softmin"))


def prelu(input, weight):
    """x for x > 0, a·x otherwise, ``a`` (``weight``) one value or one per channel (dim 1)."""
    if not isinstance(weight, Tensor):
        raise TypeError(f"prelu: weight must be a Tensor, got {type(weight).__name__}")
    n = weight.numel()
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.ndim}")  # fmt: skip
    w = weight
    if n != 1:
        if input.ndim == 0:
            raise RuntimeError("prelu: Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.ndim >= 2 else 1  # a 1-D input is one channel
        if channels != n:
            raise RuntimeError(
                f"prelu: Mismatch of parameter numbers and input channel size. Found parameter "
                f"numbers = {n} and channel size = {channels}."
            )
        if input.ndim >= 2:
            w = weight.reshape((n,) + (1,) * (input.ndim - 2))
    elif weight.ndim == 1:
        w = weight.reshape(())
    return where(input._data > 0, input, w * input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky relu with a slope drawn from U(lower, upper) per element in training, and the
    mean slope (lower + upper) / 2 otherwise."""
    if inplace:
        return rrelu_(input, lower, upper, training)
    if not training:
        return rows.leaky_relu(input, (lower + upper) / 2)
    slope = default_generator.numpy.uniform(lower, upper, size=input.shape)
    slope = Tensor._wrap(np.where(input._data > 0, 1.0, slope).astype(input.dtype))
    return input * slope


# Note [In-place activations]
# ``F.elu(x, inplace=True)`` (and ``nn.ELU(inplace=True)``) is ``elu_(x)``: the out-of-place
# function recorded on an alias of ``x`` and written back by make_inplace (Note [Generated
# in-place twins]), so versions, the leaf check, views and saved-tensor checks are those of
# every in-place op. PyTorch cannot differentiate leaky_relu_/elu_/celu_/rrelu_ (eval) with
# a negative slope or alpha (its backward reads the overwritten input from the output):
# their backward raises its error, so a program that runs here runs there.


_NEGATIVE_SLOPE = (
    "In-place {} backward calculation is triggered with a negative slope which is not "
    "supported. This is caused by calling in-place forward function with a negative slope, "
    "please call out-of-place version instead."
)
_LEAKY_ISSUE = (
    " File an issue at https://github.com/pytorch/pytorch if you do require supporting "
    "in-place leakRelu backward calculation with negative slope"
)


def _refusing(fn, slope_of, message):
    """``fn`` whose recorded backward raises ``message`` when ``slope_of(args)`` < 0."""

    def refuse(*grads):
        raise RuntimeError(message)

    def op(input, *args, **kwargs):
        out = fn(input, *args, **kwargs)
        if out.grad_fn is not None and slope_of(*args, **kwargs) < 0:
            out.grad_fn._backward = refuse
            out.grad_fn._array_backward = None  # (Note [Array backward])
        return out

    op.__name__ = fn.__name__
    return op


def _saves_self(op_):
    """``op_`` whose Node also checks self's version at backward: PyTorch's elu_, selu_,
    celu_, leaky_relu_ and rrelu_ save their result (self), so changing self again in
    place before backward raises "modified by an inplace operation" there, and here."""

    def op(input, *args, **kwargs):
        op_(input, *args, **kwargs)
        node = input.grad_fn
        if node is not None and input._base is None:
            counter = input._vc
            record = (counter, counter.value, input._data.shape)
            node._saved_versions = (node._saved_versions or ()) + (record,)
        return input

    op.__name__ = op.__qualname__ = op_.__name__
    op.__doc__ = op_.__doc__
    return op


_ELU_ERROR = _NEGATIVE_SLOPE.format("elu")
_LEAKY_ERROR = _NEGATIVE_SLOPE.format("leakyReLu") + _LEAKY_ISSUE
elu_ = _saves_self(make_inplace("elu", _refusing(elu, lambda alpha=1.0: alpha, _ELU_ERROR)))
celu_ = _saves_self(make_inplace("celu", _refusing(celu, lambda alpha=1.0: alpha, _ELU_ERROR)))
selu_ = _saves_self(make_inplace("selu", selu))
leaky_relu_ = _saves_self(
    make_inplace(
        "leaky_relu",
        _refusing(leaky_relu, lambda negative_slope=0.01: negative_slope, _LEAKY_ERROR),
    )
)
hardtanh_ = make_inplace("hardtanh", hardtanh)
threshold_ = make_inplace("threshold", threshold)
_relu6_ = make_inplace("relu6", relu6)
_hardsigmoid_ = make_inplace("hardsigmoid", hardsigmoid)
_hardswish_ = make_inplace("hardswish", hardswish)
_mish_ = make_inplace("mish", mish)


def _rrelu_slope(lower=1.0 / 8, upper=1.0 / 3, training=False):
    return 0.0 if training else (lower + upper) / 2


rrelu_ = _saves_self(make_inplace("rrelu", _refusing(rrelu, _rrelu_slope, _LEAKY_ERROR)))
