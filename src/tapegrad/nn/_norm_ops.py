"""Fused normalisation (batch norm in training, layer norm): one Node for stats + affine.

    x̂ = (x − mean) / √(var + eps)   (mean, biased var over ``axes``)
    y  = x̂ ⊙ w + b
    dx = invstd ⊙ (ĝ − mean(ĝ) − x̂ ⊙ mean(ĝ ⊙ x̂)),  ĝ = g ⊙ w   (means over ``axes``)
    dw = Σ g ⊙ x̂,  db = Σ g                                        (sums over ``param_axes``)

The first-order backward reuses the forward's x̂ and invstd. Under ``create_graph``
they are recomputed from ``x`` with differentiable ops, so second derivatives
are exact rather than treating the statistics as constants.
"""

from __future__ import annotations

import numpy as np

from .. import _fpquiet
from ..autograd.graph import make_result
from ..grad_mode import STATE
from ..tensor import Tensor
from . import _norm_split


def normalize(x, weight, bias, axes, param_axes, view, eps):
    """Normalise ``x`` over ``axes`` and apply the affine ``weight``/``bias`` (or None).

    Args:
        axes: axes the statistics are taken over.
        param_axes: axes that ``weight``/``bias`` do not cover (their gradients sum over them).
        view: the shape ``weight``/``bias`` take to broadcast against ``x``.

    Returns:
        ``(y, mean, var)``: the result Tensor and the batch statistics as arrays
        (``mean`` and biased ``var``, with the reduced axes kept).
    """
    xd = x._data
    k = len(axes)
    # Trailing axes (layer norm): means as one GEMV against a vector of 1/n, five times
    # faster than NumPy's reduction over a short contiguous axis.
    trailing = xd.dtype in _GEMV_DTYPES and axes == tuple(range(xd.ndim - k, xd.ndim))
    if not trailing and xd.dtype.kind == "V":
        # bfloat16 (NumPy has no bfloat16 arithmetic: each step would round, and ml_dtypes'
        # means accumulate in bfloat16): torch's kernel computes in float32 and rounds once
        up = [None if t is None else t.float() for t in (x, weight, bias)]
        y, mean, var = normalize(*up, axes, param_axes, view, eps)
        return y.to(xd.dtype), mean, var
    token = _fpquiet.enter()  # inf - inf = NaN silently (Note [No floating-point warnings])
    try:
        split = None
        if _norm_split.STEP[0] and trailing and weight is not None and bias is not None:
            split = _split_forward(xd, weight, bias, view, k, eps)  # Note [One pool per step]
        if split is None:
            split = _normalize_arrays(xd, weight, bias, axes, view, eps, k, trailing)
        out, xhat, invstd, mean, var = split
    finally:
        _fpquiet.leave(token)
    need_x, need_w = x._rg, weight is not None and weight._rg
    need_b = bias is not None and bias._rg
    # dims counted from the right: g may carry a batch prefix (Note [Batched gradients])
    g_axes = tuple(a - xd.ndim for a in axes)
    g_param_axes = tuple(a - xd.ndim for a in param_axes)
    # the array backward: layer norm's layout (weight over the normalised axes)
    fast_backward = trailing and tuple(param_axes) == tuple(range(xd.ndim - k))

    def backward(g):
        if fast_backward and not STATE.enabled and g._data.shape == xhat.shape:
            return _backward_arrays(g._data, xhat, invstd, weight, view, k, need_x, need_w, need_b)
        if STATE.enabled:  # create_graph: statistics as functions of x
            xc_t = x - x.mean(dim=axes, keepdim=True)
            inv = ((xc_t * xc_t).mean(dim=axes, keepdim=True) + eps) ** -0.5
            xh = xc_t * inv
        else:
            xh, inv = Tensor._wrap(xhat), Tensor._wrap(invstd)
        gx = gw = gb = None
        if need_x:
            gh = g * weight.reshape(view) if weight is not None else g
            gx = inv * (
                gh
                - gh.mean(dim=g_axes, keepdim=True)
                - xh * (gh * xh).mean(dim=g_axes, keepdim=True)
            )
        if need_w:
            gw = (g * xh).sum(dim=g_param_axes)
        if need_b:
            gb = g.sum(dim=g_param_axes)
        return gx, gw, gb

    saved = tuple(t for t in (x, weight) if t is not None and (need_x or need_w))
    y = make_result(out, (x, weight, bias), backward, "NativeNormBackward", saved=saved)
    return y, mean, var


def _normalize_arrays(xd, weight, bias, axes, view, eps, k, trailing):
    """``(out, x̂, invstd, mean, var)``: the forward's passes on one thread."""
    avg = (lambda a: _trailing_mean(a, k)) if trailing else None
    mean = avg(xd) if trailing else xd.mean(axis=axes, keepdims=True)
    xc = xd - mean
    var = avg(xc * xc) if trailing else np.mean(xc * xc, axis=axes, keepdims=True)
    invstd = 1.0 / np.sqrt(var + eps)
    xhat = xc * invstd
    out = xhat
    if weight is not None:
        out = out * weight._data.reshape(view)
    if bias is not None:
        out = out + bias._data.reshape(view)
    if out is xhat:
        out = xhat.copy()  # x̂ stays private to the backward
    return out, xhat, invstd, mean, var


def _split_forward(xd, weight, bias, view, k, eps):
    """Layer norm's forward over the pool (nn/_norm_split.py), or None."""
    n = int(np.prod(xd.shape[xd.ndim - k :]))
    if not n:
        return None
    w, b = weight._data.reshape(view), bias._data.reshape(view)
    return _norm_split.forward(xd, w, b, _averager(n, xd.dtype), k, eps)


_GEMV_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_AVERAGERS: dict = {}


def _averager(n, dtype, column=True):
    """A read-only (n, 1) column (or (1, n) row) of 1/n (or of ones for a row), cached."""
    key = (n, dtype, column)
    v = _AVERAGERS.get(key)
    if v is None:
        if len(_AVERAGERS) > 256:
            _AVERAGERS.clear()
        v = np.full((n, 1), 1.0 / n, dtype) if column else np.ones((1, n), dtype)
        v.flags.writeable = False
        _AVERAGERS[key] = v
    return v


def _trailing_mean(a, k):
    """``a.mean(axis=<last k axes>, keepdims=True)`` as a GEMV."""
    lead = a.shape[: a.ndim - k]
    if a.size == 0:
        if not all(a.shape[a.ndim - k :]):  # the mean of nothing: NaN, silently as torch
            return np.full(lead + (1,) * k, np.nan, a.dtype)
        return a.mean(axis=tuple(range(a.ndim - k, a.ndim)), keepdims=True)
    n = a.size // int(np.prod(lead))
    m = np.matmul(a.reshape(lead + (n,)), _averager(n, a.dtype))
    return m.reshape(lead + (1,) * k)


def _leading_sum(a, k):
    """``a.sum(axis=<all but the last k axes>)`` as a GEMV."""
    tail = a.shape[a.ndim - k :]
    rows = a.size // max(int(np.prod(tail)), 1) if a.size else 0
    if rows == 0:
        return a.sum(axis=tuple(range(a.ndim - k)))
    return np.matmul(_averager(rows, a.dtype, column=False), a.reshape(rows, -1)).reshape(tail)


def _backward_arrays(gd, xhat, invstd, weight, view, k, need_x, need_w, need_b):
    """The module docstring's rule on arrays (no graph is recorded without create_graph),
    for statistics over the trailing ``k`` axes and no batch prefix."""
    if weight is not None and gd.size:
        return _backward_arrays_affine(gd, xhat, invstd, weight, view, k, need_x, need_w, need_b)
    gx = gw = gb = None
    if need_x:
        gh = gd
        m2 = _trailing_mean(gh * xhat, k)
        gx = gh - _trailing_mean(gh, k)
        m2 = xhat * m2
        gx -= m2
        gx *= invstd
        gx = Tensor._wrap(gx)
    if need_w:
        gw = Tensor._wrap(_leading_sum(gd * xhat, k).astype(weight._data.dtype, copy=False))
    if need_b:
        gb = Tensor._wrap(_leading_sum(gd, k))
    return gx, gw, gb


def _backward_arrays_affine(gd, xhat, invstd, weight, view, k, need_x, need_w, need_b):
    """:func:`_backward_arrays` with a weight, in six passes over the (…, C) arrays where
    the plain formula takes seven: ``gd ⊙ x̂`` is made once and serves both dw (its column
    sums) and mean(ĝ ⊙ x̂) = (gd ⊙ x̂)·w/n, and mean(ĝ) = gd·w/n: GEMVs against the column
    w/n instead of passes over ĝ = gd ⊙ w."""
    gx = gw = gb = None
    if need_x and _norm_split.STEP[0]:  # Note [One pool per step]
        wd = weight._data
        wcol = (wd.reshape(wd.size, 1) * (1.0 / wd.size)).astype(gd.dtype, copy=False)
        split = _norm_split.grad_input(gd, xhat, invstd, wd.reshape(view), wcol, k)
        if split is not None:
            gx, gdx = split
            if need_w:
                gw = Tensor._wrap(_leading_sum(gdx, k).astype(wd.dtype, copy=False))
            if need_b:
                gb = Tensor._wrap(_leading_sum(gd, k))
            return Tensor._wrap(gx), gw, gb
    gdx = gd * xhat if (need_x or need_w) else None
    if need_w:
        gw = Tensor._wrap(_leading_sum(gdx, k).astype(weight._data.dtype, copy=False))
    if need_b:
        gb = Tensor._wrap(_leading_sum(gd, k))
    if need_x:
        wd = weight._data
        n = wd.size
        wcol = (wd.reshape(n, 1) * (1.0 / n)).astype(gd.dtype, copy=False)
        lead = gd.shape[: gd.ndim - k]
        keep = lead + (1,) * k
        m1 = np.matmul(gd.reshape(lead + (n,)), wcol).reshape(keep)  # mean(ĝ)
        m2 = np.matmul(gdx.reshape(lead + (n,)), wcol).reshape(keep)  # mean(ĝ ⊙ x̂)
        gx = gd * wd.reshape(view)
        gx -= m1
        np.multiply(xhat, m2, out=gdx)
        gx -= gdx
        gx *= invstd
        gx = Tensor._wrap(gx)
    return gx, gw, gb
