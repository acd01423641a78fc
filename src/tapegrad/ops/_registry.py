"""One list of ops: binds each op to Tensor and tells the op test table what exists.

``@register("exp")`` records ``exp`` in :data:`OPS` and, unless ``method=False``,
makes it a Tensor method; ``operators=("__add__",)`` binds Python operators too.
Unless ``function=False``, the op is also exported as ``tapegrad.<name>`` (``torch.exp``);
in-place ops, names starting with ``_`` and method-only ops pass ``function=False``.
The op test table asserts that every registered differentiable op has a row.
"""

from __future__ import annotations

import functools
import inspect

from ..tensor import Tensor

__all__ = ["register", "OPS", "OpInfo", "exported", "add_alias"]


class OpInfo:
    """What the registry knows of an op."""

    __slots__ = ("name", "fn", "differentiable", "inplace", "function", "aliases")

    def __init__(self, name, fn, differentiable, inplace, function=False):
        self.name = name
        self.fn = fn
        self.differentiable = differentiable
        self.inplace = inplace
        self.function = function
        self.aliases = ()

    def __repr__(self):
        return f"OpInfo({self.name!r})"


OPS: dict[str, OpInfo] = {}

# Set by tapegrad._batched: ``[0](info, args, kwargs)`` runs an op on vmap-batched
# arguments (Note [vmap levels]); reached only through the except clause below.
VMAP_DISPATCH: list = [None]


def register(name, *, method=True, operators=(), differentiable=True, inplace=False, function=None):
    """Decorator: record an op, bind it to Tensor and (by default) export it as ``tg.<name>``."""
    if function is None:
        function = not inplace and not name.startswith("_")

    def deco(fn):
        if name in OPS:
            raise RuntimeError(f"op {name!r} registered twice")
        OPS[name] = OpInfo(name, fn, differentiable, inplace, function)
        if method:
            setattr(Tensor, name if method is True else method, fn)
        for op in operators:
            setattr(Tensor, op, fn)
        return fn

    return deco


def exported(info: OpInfo):
    """``tapegrad.<name>``: the op, with a torch-like TypeError for a non-Tensor ``input``.

    Ops read ``input._data`` directly (no check on the hot path), so ``tg.exp([1.0])``
    would fail with an AttributeError about ``_data``; the function form turns that into
    PyTorch's message. Methods and operators are bound unwrapped.
    """
    fn = info.fn

    if _one_input(fn):  # tg.exp(x): no argument packing on the hot path

        def op(input):
            try:
                return fn(input)
            except AttributeError as exc:
                return _failed(info, (input,), {}, exc)

    else:

        def op(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except AttributeError as exc:
                return _failed(info, args, kwargs, exc)

    functools.update_wrapper(op, fn)
    return op


def _one_input(fn) -> bool:
    """Whether ``fn``'s signature is exactly ``(input)``."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    return (
        len(params) == 1
        and params[0].name == "input"
        and params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        and params[0].default is inspect.Parameter.empty
    )


_NONE = object()


def _failed(info, args, kwargs, exc):
    """An op's AttributeError: vmap dispatch, or torch's TypeError for a non-Tensor."""
    if type(exc).__name__ == "BatchedAccess":  # Note [vmap levels]
        return VMAP_DISPATCH[0](info, args, kwargs)
    values = (*args, *kwargs.values())
    bad = next((a for a in values if not isinstance(a, Tensor) and "_data" in str(exc)), _NONE)
    if bad is _NONE or "'_data'" not in str(exc):  # (the bad argument may be None itself)
        raise exc
    raise TypeError(
        f"{info.name}(): expected Tensor as the argument, but got {type(bad).__name__} "
        f"(use tg.tensor(...) to convert it)"
    ) from None


def add_alias(alias, name):
    """Another public name for a registered op (``arcsin`` for ``asin``): bound as a Tensor
    method when the op is one, and exported as ``tapegrad.<alias>`` when the op is."""
    info = OPS[name]
    info.aliases += (alias,)
    if getattr(Tensor, name, None) is info.fn:
        setattr(Tensor, alias, info.fn)


def exported_namespace(module):
    """``module``'s attributes with its registered ops replaced by their :func:`exported`
    form: for namespaces (``tg.special``, ``nn.functional``'s helpers) whose callers
    should get torch-like TypeErrors and vmap dispatch (Note [vmap levels])."""
    import types  # noqa: PLC0415

    by_fn = {id(info.fn): info for info in OPS.values()}
    attrs = {
        k: exported(by_fn[id(v)]) if id(v) in by_fn else v
        for k, v in vars(module).items()
        if not k.startswith("__")
    }
    return types.SimpleNamespace(**attrs)


def vmap_hooked(name, fn):
    """``fn`` (a function outside the registry, such as ``F.cross_entropy``) with vmap
    dispatch when it reads a batched argument's data (Note [vmap levels]): its batching
    rule ``RULES[name]``, else a per-element loop of ``fn``."""
    info = OpInfo(name, fn, True, False)

    def hooked(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AttributeError as exc:
            if type(exc).__name__ != "BatchedAccess":
                raise
            return VMAP_DISPATCH[0](info, args, kwargs)

    functools.update_wrapper(hooked, fn)
    return hooked
