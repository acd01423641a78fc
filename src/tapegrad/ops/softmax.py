"""softmax and log_softmax along a dim, each with its own fused backward rule.

softmax:      d/dx = out ⊙ (g − Σ_dim g ⊙ out)
log_softmax:  d/dx = g − e^out ⊙ Σ_dim g
Both subtract the slice maximum first, so large logits (1e4) do not overflow.
"""

from __future__ import annotations

import numpy as np

from .. import _fpquiet
from ..autograd.graph import make_result
from ..tensor import _check_dim
from ._registry import register
from ._util import float_data

__all__ = ["softmax", "log_softmax"]


def _shifted(input, dim, dtype, op):
    """(x − max over dim, axis); ``dtype`` casts the input first (differentiably)."""
    if dtype is not None:
        input = input.to(dtype)
    x = float_data(input)
    d = _check_dim(dim, x.ndim, op)
    axis = d if x.ndim else None
    x1 = x if x.ndim else x.reshape(1)  # a 0-d input is one slice of one element
    m = np.max(x1, axis=d, keepdims=True, initial=-np.inf)
    # A slice of all −inf is left unshifted (its result is NaN either way); a +inf maximum
    # is subtracted, so its slice is NaN as in PyTorch (softmax([inf, 0]) = [nan, nan]).
    m[m == -np.inf] = 0
    with np.errstate(invalid="ignore"):  # inf - inf
        # C order, as torch lays it out (Note [Torch's result layouts]); the keyword costs
        # ~0.3 us on a small array, the flag test 0.05 us
        z = x1 - m if x1.flags.c_contiguous else np.subtract(x1, m, order="C")
    return input, z if x.ndim else z.reshape(()), axis, d


@register("softmax")
def softmax(input, dim, dtype=None):
    """e^x / Σ_dim e^x along ``dim``, computed stably."""
    input, z, axis, d = _shifted(input, dim, dtype, "softmax")
    out = np.exp(z, out=z)
    out /= np.sum(out, axis=axis, keepdims=True)
    return make_result(
        out,
        (input,),
        lambda g, out: _softmax_backward(g, out, d),
        "SoftmaxBackward",
        save_output=True,
        array_backward=lambda g, out: _softmax_array(g, out, d),
    )


def _slice_sum(t, out, d):
    """Σ over the softmax dim, kept; counted from the right so that a batch prefix in front
    of ``t`` is left alone (Note [Batched gradients]). A 0-d input is one slice of one."""
    nd = out._data.ndim
    return t.sum(dim=d - nd, keepdim=True) if nd else t


def _softmax_backward(g, out, d):
    go = g * out
    return (go - out * _slice_sum(go, out, d),)


# The array rules (Note [Array backward] in autograd/engine.py): the Tensor rules' steps,
# each the ufunc its op calls (the slice sum is np.sum over the same axis, kept).
def _slice_sum_array(t, out, d):
    return np.sum(t, axis=d, keepdims=True) if out.ndim else t


def _softmax_array(g, out, d):
    go = g * out
    return (go - out * _slice_sum_array(go, out, d),)


def _log_softmax_array(g, out, d):
    return (g - np.exp(out) * _slice_sum_array(g, out, d),)


@register("log_softmax")
def log_softmax(input, dim, dtype=None):
    """x − log Σ_dim e^x along ``dim``, computed stably."""
    input, z, axis, d = _shifted(input, dim, dtype, "log_softmax")
    token = _fpquiet.enter()  # log(0) = -inf for an empty slice; -inf - -inf = NaN
    try:
        lse = np.log(np.sum(np.exp(z), axis=axis, keepdims=True))
        out = np.subtract(z, lse, out=z)
    finally:
        _fpquiet.leave(token)
    return make_result(
        out,
        (input,),
        lambda g, out: _log_softmax_backward(g, out, d),
        "LogSoftmaxBackward",
        save_output=True,
        array_backward=lambda g, out: _log_softmax_array(g, out, d),
    )


def _log_softmax_backward(g, out, d):
    return (g - out.exp() * _slice_sum(g, out, d),)
