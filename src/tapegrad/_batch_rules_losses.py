"""Batching rules for the fused pointwise losses with a reduction (nll_loss shares
cross_entropy's rule in _batch_rules_nn.py).

The functions reach vmap through ``ops._registry.vmap_hooked`` (nn/functional.py). Each
rule computes every element's losses in one call with ``reduction='none'`` on the
physical values (dispatched, so that an outer vmap level runs its own rule), then each
batch element's own reduction over its logical dims: what the loop computes element by
element (Note [vmap levels]).
"""

from __future__ import annotations

from ._batch_rules import _any_at, _at, _bind, _call
from ._batched import op, wrap
from .tensor import Tensor

__all__ = ["install"]


def _batch(a: dict, level: int) -> int:
    return next(v._bval.shape[0] for v in a.values() if _at(v, level))


def _full(t, level, n):
    """The physical value of ``t`` at ``level``: its own, or ``t`` expanded to the batch."""
    if _at(t, level):
        return t._bval
    return op("expand", op("unsqueeze", t, 0), (n, *tuple(t.shape)))


def _reduce(per, reduction: str, logical: tuple):
    """Each batch element's reduction of its per-element losses ``per`` (batch first)."""
    dims = tuple(range(1, len(logical) + 1))
    if reduction == "none" or not dims:  # a 0-d logical input: its one loss
        return per
    if reduction == "mean":
        return op("mean", per, dims)
    total = op("sum", per, dims)
    if reduction == "batchmean":  # kl_div: the sum over the logical input's first dim
        return op("div", total, logical[0])
    return total


def _pointwise(same_shape: tuple, broadcast: tuple = (), reductions=("none", "mean", "sum")):
    """A rule for a pointwise loss ``fn(input, target, ..., reduction=...)``.

    same_shape: tensor arguments with the input's logical shape (batched or expanded to
    the batch); broadcast: tensor arguments that may also be unbatched and broadcast
    against the physical input from the right (a class weight, ``pos_weight``).
    """

    def rule(name, fn, level, args, kwargs):
        a = _bind(fn, args, kwargs)
        if a.get("size_average") is not None or a.get("reduce") is not None:
            return NotImplemented  # the legacy flags: the loop
        reduction = a.get("reduction")
        x = a["input"]
        if reduction not in reductions or not isinstance(x, Tensor):
            return NotImplemented
        shape = tuple(x.shape)
        n = _batch(a, level)
        for k, v in a.items():
            if k in same_shape or k in broadcast:
                if v is None:
                    continue
                if not isinstance(v, Tensor):
                    return NotImplemented
                if tuple(v.shape) == shape:
                    a[k] = _full(v, level, n)
                elif k not in broadcast or _at(v, level) or v.ndim > len(shape):
                    return NotImplemented
            elif _at(v, level) or (type(v) in (list, tuple) and _any_at(v, level)):
                return NotImplemented
        a["reduction"] = "none"
        per = _call(name, fn, (), a)  # dispatched: an outer level's batch is its rule's
        return wrap(_reduce(per, reduction, shape), level)

    return rule


_L1 = _pointwise(("input", "target", "weight"))


def _l1(name, fn, level, args, kwargs):
    a = _bind(fn, args, kwargs)
    if a["weight"] is not None and a["reduction"] == "mean":
        return NotImplemented  # a weighted mean divides by the sum of the weights: the loop
    return _L1(name, fn, level, args, kwargs)


#: The losses hooked in nn/functional.py, by name.
HOOKED = (
    "nll_loss",
    "l1_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
    "gaussian_nll_loss",
)


def install(rules) -> None:
    rules["l1_loss"] = _l1
    rules["binary_cross_entropy"] = _pointwise(("input", "target"), ("weight",))
    rules["binary_cross_entropy_with_logits"] = _pointwise(
        ("input", "target"), ("weight", "pos_weight")
    )
    rules["kl_div"] = _pointwise(("input", "target"), reductions=("none", "sum", "batchmean"))
    rules["gaussian_nll_loss"] = _pointwise(("input", "target", "var"))
