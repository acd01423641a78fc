"""One list of ops: binds each op to Tensor and tells the op test table what exists.

``@register("exp")`` records ``exp`` in :data:`OPS` and, unless ``method=False``,
makes it a Tensor method; ``operators=("__add__",)`` binds Python operators too.
The op test table asserts that every registered differentiable op has a row.
"""

from __future__ import annotations

from ..tensor import Tensor

__all__ = ["register", "OPS", "OpInfo"]


class OpInfo:
    """What the registry knows of an op."""

    __slots__ = ("name", "fn", "differentiable", "inplace")

    def __init__(self, name, fn, differentiable, inplace):
        self.name = name
        self.fn = fn
        self.differentiable = differentiable
        self.inplace = inplace

    def __repr__(self):
        return f"OpInfo({self.name!r})"


OPS: dict[str, OpInfo] = {}


def register(name, *, method=True, operators=(), differentiable=True, inplace=False):
    """Decorator: record an op and bind it to Tensor."""

    def deco(fn):
        if name in OPS:
            raise RuntimeError(f"op {name!r} registered twice")
        OPS[name] = OpInfo(name, fn, differentiable, inplace)
        if method:
            setattr(Tensor, name if method is True else method, fn)
        for op in operators:
            setattr(Tensor, op, fn)
        return fn

    return deco
