"""Batching rules for fused nn.functional kernels: layer_norm, cross_entropy (see
_batch_rules.py; the functions reach vmap through ``ops._registry.vmap_hooked``)."""

from __future__ import annotations

from ._batch_rules import _at, _bind, _call
from ._batched import op, wrap
from .tensor import Tensor

__all__ = ["install"]


def _layer_norm(name, fn, level, args, kwargs):
    """The normalisation over the trailing dims runs on the physical value; a batched
    weight or bias (per-sample gradients) is applied by the elementwise rules."""
    a = _bind(fn, args, kwargs)
    x, shape, w, b, eps = a["input"], a["normalized_shape"], a["weight"], a["bias"], a["eps"]
    if not _at(w, level) and not _at(b, level):
        return wrap(_call(name, fn, (x._bval, shape, w, b, eps), {}), level)
    base = _call(name, fn, (x._bval if _at(x, level) else x, shape, None, None, eps), {})
    out = wrap(base, level) if _at(x, level) else base
    if w is not None:
        out = op("mul", out, w)
    return out if b is None else op("add", out, b)


def _group_norm(name, fn, level, args, kwargs):
    """The statistics run on the batch folded into the samples, (B·N, C, *); a batched
    weight or bias (per-sample gradients) is applied by the elementwise rules, with the
    channel view the function itself uses."""
    a = _bind(fn, args, kwargs)
    x, groups, w, b, eps = a["input"], a["num_groups"], a["weight"], a["bias"], a["eps"]
    if not isinstance(x, Tensor) or x.ndim < 2 or not isinstance(groups, int):
        return NotImplemented
    shape = tuple(x.shape)
    for t in (w, b):
        if t is not None and (not isinstance(t, Tensor) or tuple(t.shape) != shape[1:2]):
            return NotImplemented  # the loop raises the function's own error
    batched_affine = _at(w, level) or _at(b, level)
    plain = (None, None) if batched_affine else (w, b)
    if _at(x, level):
        n = tuple(x._bval.shape)[0]
        flat = op("reshape", x._bval, (n * shape[0],) + shape[1:])
        out = _call(name, fn, (flat, groups, *plain, eps), {})
        out = wrap(op("reshape", out, (n,) + shape), level)
    else:
        out = _call(name, fn, (x, groups, *plain, eps), {})
    if not batched_affine:
        return out
    view = (shape[1],) + (1,) * (len(shape) - 2)
    if w is not None:
        out = op("mul", out, op("reshape", w, view))
    return out if b is None else op("add", out, op("reshape", b, view))


def _cross_entropy(name, fn, level, args, kwargs):
    """cross_entropy or nll_loss of class-index targets: per-element losses in one call
    with ``reduction='none'`` on the batch folded into the rows, then each element's own
    sum or (weighted) mean."""
    a = _bind(fn, args, kwargs)
    x, t, weight = a["input"], a["target"], a["weight"]
    if a["size_average"] is not None or a["reduce"] is not None or _at(weight, level):
        return NotImplemented
    if x.ndim not in (1, 2) or t.dtype.kind not in "iu" or t.ndim != x.ndim - 1:
        return NotImplemented
    n = next(v._bval.shape[0] for v in (x, t) if _at(v, level))
    xv = x._bval if _at(x, level) else op("expand", op("unsqueeze", x, 0), (n, *x.shape))
    tv = t._bval if _at(t, level) else op("expand", op("unsqueeze", t, 0), (n, *t.shape))
    classes = tuple(xv.shape)[-1]
    rows = op("reshape", xv, (-1, classes))
    targets = op("reshape", tv, (-1,))
    keep = {k: a[k] for k in ("ignore_index", "label_smoothing") if k in a}  # (nll: none)
    # dispatched: under nested vmap the rows are batched at the outer level (its rule)
    per = _call(name, fn, (rows, targets, weight), {"reduction": "none", **keep})
    per = op("reshape", per, (n, -1))
    reduction = a["reduction"]
    if reduction == "none":
        return wrap(op("reshape", per, (n, *t.shape)), level)
    total = op("sum", per, 1)
    if reduction == "sum":
        return wrap(total, level)
    valid = op("ne", targets, a["ignore_index"])
    w_rows = op("_cast", valid, xv.dtype)
    if weight is not None:
        w_rows = op("mul", w_rows, op("index_select", weight, 0, op("mul", targets, valid)))
    denom = op("sum", op("reshape", w_rows, (n, -1)), 1)
    return wrap(op("div", total, denom), level)


def install(rules) -> None:
    rules["layer_norm"] = _layer_norm
    rules["cross_entropy"] = _cross_entropy
    rules["group_norm"] = _group_norm
    from . import _batch_rules_losses  # noqa: PLC0415 - it imports _batch_rules' helpers

    _batch_rules_losses.install(rules)
    rules["nll_loss"] = _cross_entropy  # the same signature, less label_smoothing
