"""Batching rules for tg.func.vmap, one per op family (Note [vmap levels] in _batched.py).

A rule ``rule(name, fn, level, args, kwargs)`` sees the logical call, in which some
arguments are BatchedTensors of ``level`` (their physical value ``_bval`` has the
batch in dim 0), and makes one physical call, or returns NotImplemented so that the
op runs once per batch element. The families, and what their rule does:

* elementwise (every row of the op tables, the arithmetic and activation ops): align
  logical ranks (a batched ``(N, *s)`` value of a lower logical rank gets size-1 dims
  after the batch dim) and call the op: broadcasting does the rest;
* reductions, scans, sorts and shape ops with a ``dim``: shift ``dim`` by one (``None``
  becomes "every logical dim" or a flatten, as the op means it);
* views with a shape (reshape, view, expand, repeat): put the batch size in front;
* matmul/mm/bmm/mv/dot/linear: batched matmul with logical batch ranks aligned;
* basic indexing: a leading ``slice(None)``.
Rules only call ops (through ``_batched.op``), so the graph they record is ordinary.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from ._batched import RULES, BatchedTensor, VmapUnsupported, op, wrap, wrap_out
from ._batched import dispatch as _dispatch
from .ops._registry import OPS
from .ops._table import ROWS
from .tensor import Tensor

__all__: list = []


@functools.cache
def _signature(fn):
    return inspect.signature(fn)


def _bind(fn, args, kwargs) -> dict:
    """A rule's call as ``{parameter: value}``, defaults applied (the signature cached)."""
    bound = _signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _at(x, level) -> bool:
    return type(x) is BatchedTensor and x._blevel == level


def _any_at(items, level) -> bool:
    for a in items:
        if _at(a, level):
            return True
        if type(a) in (list, tuple) and any(_at(x, level) for x in a):
            return True
    return False


def _pad(v, extra: int):
    """Physical value ``v`` (batch first) with ``extra`` size-1 dims after the batch dim."""
    if extra <= 0:
        return v
    shape = tuple(v.shape)
    return v.reshape(shape[:1] + (1,) * extra + shape[1:])


# -- elementwise --------------------------------------------------------------------------


def elementwise(name, fn, level, args, kwargs):
    if kwargs or name[-1] == "_" or name == "masked_fill":  # in place (or a dunder)
        return _elementwise(name, fn, level, args, kwargs)
    # The common case (positional arguments, not in place): the general rule below with
    # each logical rank read once and the physical call made without a second dispatch
    # when no argument is batched at a lower level.
    ranks = [a.ndim if isinstance(a, Tensor) else -1 for a in args]
    rank = max(ranks, default=0)
    phys = []
    lower = False  # an argument batched at a lower level (or a nest): dispatch again
    for a, r in zip(args, ranks):
        t = type(a)
        if t is BatchedTensor and a._blevel == level:
            a = a._bval
            if r != rank:
                a = _pad(a, rank - r)
            if type(a) is BatchedTensor:
                lower = True
        elif t is BatchedTensor or t is list or t is tuple:
            lower = True
        phys.append(a)
    out = _dispatch(name, fn, phys, {}) if lower else fn(*phys)
    return wrap(out, level) if isinstance(out, Tensor) else wrap_out(out, level)


def _elementwise(name, fn, level, args, kwargs):
    rank = 0
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor) and a.ndim > rank:
            rank = a.ndim
    if name == "masked_fill" and _at(args[2] if len(args) > 2 else kwargs.get("value"), level):
        return NotImplemented  # a batched fill value: per element
    inplace = name.endswith("_") and not name.endswith("__")
    if inplace and not (_at(args[0], level) and args[0].ndim == rank):
        return NotImplemented  # the loop raises or writes per element

    def phys(a):
        if _at(a, level):
            return _pad(a._bval, rank - a.ndim)
        return a

    out = _call(name, fn, [phys(a) for a in args], {k: phys(v) for k, v in kwargs.items()})
    if inplace:
        return args[0]
    return wrap_out(out, level)


def _call(name, fn, args, kwargs):
    return _dispatch(name, fn, args, kwargs)


_ELEMENTWISE = """
abs add sub mul div pow neg rsub exp log log1p expm1 sqrt rsqrt sin cos tan tanh sigmoid
relu relu6 gelu silu elu selu celu leaky_relu hardtanh hardsigmoid hardswish mish
logsigmoid softplus softshrink hardshrink tanhshrink softsign threshold erf sign floor
ceil round trunc clamp clamp_min clamp_max maximum minimum where eq ne lt le gt ge lerp
addcmul addcdiv float_power floor_divide fmod remainder isclose logit nan_to_num
positive conj conj_physical resolve_conj resolve_neg real clone contiguous _cast
polygamma mvlgamma ldexp masked_fill _sigmoid_backward _tanh_backward
add_ sub_ mul_ div_ clamp_ clamp_min_ clamp_max_ fill_ zero_ copy_ nan_to_num_ lerp_
addcmul_ addcdiv_ float_power_ logit_ ldexp_ mvlgamma_ polygamma_
__rsub__ __rtruediv__ __rdiv__ __pos__ __rpow__ __rfloordiv__ __rmod__ __and__ __or__
__xor__ __invert__ type_as half short byte char
""".split()


# -- dims ---------------------------------------------------------------------------------


def _shift(d, rank: int):
    """Logical dim(s) ``d`` of a rank-``rank`` tensor as physical dims; None if invalid."""
    if isinstance(d, (tuple, list)):
        out = [_shift(x, rank) for x in d]
        return None if any(x is None for x in out) else tuple(out)
    if rank == 0 or not isinstance(d, int) or isinstance(d, bool) or not -rank <= d < rank:
        return None
    return d % rank + 1


def _dim_rule(pos, kw, default, kind="int", out_rank=0):
    """A rule for an op whose ``dim`` is ``args[pos]`` or ``kwargs[kw]``.

    kind: "int" (a dim or dims), "all" (None/() mean every dim), "flat" (None means the
    flattened tensor), "flat0" (the same, and the op then returns only the values).
    out_rank: 1 when ``dim`` indexes the result, one rank higher (unsqueeze).
    """

    def rule(name, fn, level, args, kwargs):
        x = args[0]
        if not kwargs and len(args) <= 2 and pos == 1 and type(x) is BatchedTensor:
            out = _dim_fast(fn, level, args, x, default, kind, out_rank)
            if out is not None:
                return out
        if not _at(x, level) or _any_at(args[1:], level) or _any_at(kwargs.values(), level):
            return NotImplemented
        args, kwargs = list(args), dict(kwargs)
        if "axis" in kwargs:
            kwargs["dim"] = kwargs.pop("axis")
        if "keepdims" in kwargs:
            kwargs["keepdim"] = kwargs.pop("keepdims")
        if len(args) > pos:
            d = args[pos]
        else:
            d = kwargs.get(kw, default)
        v = x._bval
        rank = x.ndim + out_rank
        flat = False
        if d is None or (kind == "all" and d == ()):
            if kind == "all" and rank > 0:
                nd = tuple(range(1, rank + 1))
            elif kind in ("flat", "flat0") and not kwargs.get("keepdim", False):
                if len(args) > pos + 1 and args[pos + 1]:
                    return NotImplemented  # keepdim given positionally
                v = v.reshape(tuple(v.shape)[0], -1)
                nd, flat = 1, True
            else:
                return NotImplemented
        else:
            nd = _shift(d, rank)
            if nd is None:
                return NotImplemented
        if len(args) > pos:
            args[pos] = nd
        else:
            kwargs[kw] = nd
        args[0] = v
        out = _call(name, fn, args, kwargs)
        if flat and kind == "flat0":
            out = out[0]
        return wrap_out(out, level)

    return rule


def _dim_fast(fn, level, args, x, default, kind, out_rank):
    """:func:`_dim_rule`'s common case: ``op(x)`` or ``op(x, dim)`` with one int dim (or
    None meaning every dim, for kind "all") of ``x`` batched at ``level`` over a plain
    tensor; the physical op called directly. None where it does not apply."""
    v = x._bval
    if x._blevel != level or type(v) is BatchedTensor:
        return None
    d = args[1] if len(args) == 2 else default
    rank = v._data.ndim - 1 + out_rank
    if type(d) is int:
        if not -rank <= d < rank:
            return None
        out = fn(v, d % rank + 1)
    elif d is None and kind == "all" and rank > 0:
        out = fn(v, dim=tuple(range(1, rank + 1)))
    else:
        return None
    return wrap(out, level) if isinstance(out, Tensor) else wrap_out(out, level)


_DIM_OPS = {
    "sum": (1, "dim", None, "all"),
    "mean": (1, "dim", None, "all"),
    "nansum": (1, "dim", None, "all"),
    "nanmean": (1, "dim", None, "all"),
    "amax": (1, "dim", (), "all"),
    "amin": (1, "dim", (), "all"),
    "logsumexp": (1, "dim", None, "all"),
    "var": (1, "dim", None, "all"),
    "std": (1, "dim", None, "all"),
    "var_mean": (1, "dim", None, "all"),
    "std_mean": (1, "dim", None, "all"),
    "count_nonzero": (1, "dim", None, "all"),
    "vector_norm": (2, "dim", None, "all"),
    "prod": (1, "dim", None, "flat"),
    "all": (1, "dim", None, "flat"),
    "any": (1, "dim", None, "flat"),
    "argmax": (1, "dim", None, "flat"),
    "argmin": (1, "dim", None, "flat"),
    "median": (1, "dim", None, "flat0"),
    "nanmedian": (1, "dim", None, "flat0"),
    "softmax": (1, "dim", None),
    "log_softmax": (1, "dim", None),
    "cumsum": (1, "dim", None),
    "cumprod": (1, "dim", None),
    "logcumsumexp": (1, "dim", None),
    "cummax": (1, "dim", None),
    "cummin": (1, "dim", None),
    "sort": (1, "dim", -1),
    "argsort": (1, "dim", -1),
    "topk": (2, "dim", -1),
    "kthvalue": (2, "dim", -1),
    "mode": (1, "dim", -1),
    "unsqueeze": (1, "dim", None, "int", 1),
    "narrow": (1, "dim", None),
    "select": (1, "dim", None),
    "index_select": (1, "dim", None),
    "split": (2, "dim", 0),
    "chunk": (2, "dim", 0),
    "tensor_split": (2, "dim", 0),
    "unbind": (1, "dim", 0),
    "unflatten": (1, "dim", None),
    "flip": (1, "dims", None),
    "roll": (2, "dims", None),
    "rot90": (2, "dims", (0, 1)),
}


def _two_dims(p0, k0, d0, p1, k1, d1):
    """Ops with two dim arguments (transpose, movedim, diagonal, flatten)."""

    def rule(name, fn, level, args, kwargs):
        x = args[0]
        if not _at(x, level) or _any_at(args[1:], level) or _any_at(kwargs.values(), level):
            return NotImplemented
        args, kwargs = list(args), dict(kwargs)
        for p, k, d in ((p0, k0, d0), (p1, k1, d1)):
            val = args[p] if len(args) > p else kwargs.get(k, d)
            new = _shift(val, x.ndim)
            if new is None:
                return NotImplemented
            if len(args) > p:
                args[p] = new
            else:
                kwargs[k] = new
        args[0] = x._bval
        return wrap_out(_call(name, fn, args, kwargs), level)

    return rule


def _squeeze(name, fn, level, args, kwargs):
    x = args[0]
    d = args[1] if len(args) > 1 else kwargs.get("dim")
    if not _at(x, level) or isinstance(d, Tensor):
        return NotImplemented
    if d is None:
        d = tuple(i for i, s in enumerate(x.shape) if s == 1)
        if not d:
            return x
    nd = _shift(d, x.ndim)
    if nd is None:
        return NotImplemented
    return wrap(op("squeeze", x._bval, nd), level)


def _permute(name, fn, level, args, kwargs):
    x = args[0]
    dims = args[1:] if "dims" not in kwargs else (kwargs["dims"],)
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    nd = _shift(tuple(dims), x.ndim)
    if not _at(x, level) or nd is None or len(nd) != x.ndim:
        return NotImplemented
    return wrap(op("permute", x._bval, (0, *nd)), level)


def _t(name, fn, level, args, kwargs):
    x = args[0]
    if not _at(x, level) or x.ndim > 2:
        return NotImplemented
    return x if x.ndim < 2 else wrap(op("transpose", x._bval, 1, 2), level)


def _last_dims(min_rank):
    """Ops that act on the last dims only (tril, triu, pad): pass the value through."""

    def rule(name, fn, level, args, kwargs):
        x = args[0]
        if not _at(x, level) or x.ndim < min_rank or _any_at(args[1:], level):
            return NotImplemented
        if name == "pad" and len(args[1] if len(args) > 1 else kwargs["pad"]) > 2 * x.ndim:
            return NotImplemented
        if name == "diag_embed" and (len(args) > 2 or "dim1" in kwargs or "dim2" in kwargs):
            return NotImplemented
        return wrap_out(_call(name, fn, [x._bval, *args[1:]], kwargs), level)

    return rule


# -- shapes -------------------------------------------------------------------------------


def _sizes(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _reshape(name, fn, level, args, kwargs):
    x = args[0]
    if kwargs or not _at(x, level):
        return NotImplemented
    if name in ("reshape_as", "view_as"):
        shape = tuple(args[1].shape)
    elif name == "ravel":
        shape = (-1,)
    else:
        shape = _sizes(args[1:])
        if not all(isinstance(s, int) for s in shape):
            return NotImplemented  # view(dtype), sizes given as tensors
    v = x._bval
    return wrap(op("reshape", v, (tuple(v.shape)[0], *shape)), level)


def _expand(name, fn, level, args, kwargs):
    x = args[0]
    if kwargs or not _at(x, level) or _any_at(args[1:], level):
        return NotImplemented
    if name == "expand_as":
        sizes = tuple(args[1].shape)
    else:
        sizes = _sizes(args[1:])
    if len(sizes) < x.ndim or not all(isinstance(s, int) for s in sizes):
        return NotImplemented
    v = _pad(x._bval, len(sizes) - x.ndim)
    return wrap(op("expand", v, (tuple(v.shape)[0], *sizes)), level)


def _repeat(name, fn, level, args, kwargs):
    x = args[0]
    if kwargs or not _at(x, level):
        return NotImplemented
    sizes = _sizes(args[1:])
    if name == "tile" and len(sizes) < x.ndim:
        sizes = (1,) * (x.ndim - len(sizes)) + sizes
    if len(sizes) < x.ndim:
        return NotImplemented
    v = _pad(x._bval, len(sizes) - x.ndim)
    return wrap(op("repeat", v, (1, *sizes)), level)


def _join(name, fn, level, args, kwargs):
    tensors = args[0] if args else kwargs.get("tensors")
    d = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    if not isinstance(tensors, (list, tuple)) or not tensors or len(args) > 2:
        return NotImplemented
    first = next(t for t in tensors if _at(t, level))
    n = tuple(first._bval.shape)[0]
    rank = first.ndim
    if any(t.ndim != rank for t in tensors):
        return NotImplemented  # cat's empty-1-D rule, or a shape error: the loop decides
    nd = _shift(d, rank + (name == "stack"))
    if nd is None:
        return NotImplemented
    vals = [
        t._bval if _at(t, level) else op("expand", op("unsqueeze", t, 0), (n, *t.shape))
        for t in tensors
    ]
    return wrap(_call(name, fn, [vals, nd], {}), level)


def _getitem(name, fn, level, args, kwargs):
    x, key = args[0], args[1]
    if not _at(x, level):
        return NotImplemented
    key = key if isinstance(key, tuple) else (key,)
    if not _basic_or_adjacent(key, level):
        return NotImplemented  # batched or separated advanced indices: per element
    return wrap(op("getitem", x._bval, (slice(None), *key)), level)


def _basic_or_adjacent(key, level) -> bool:
    """Basic indexing, or unbatched advanced indices next to each other (NumPy then keeps
    their result dims in place, so a leading ``slice(None)`` stays the batch dim)."""
    arrays = [isinstance(k, (Tensor, list, np.ndarray)) for k in key]
    if any(isinstance(k, bool) or _at(k, level) for k in key):
        return False
    if not any(arrays):
        return all(k is None or k is Ellipsis or isinstance(k, (int, slice)) for k in key)
    adv = [i for i, k in enumerate(key) if arrays[i] or isinstance(k, int)]
    if any(isinstance(k, Tensor) and k.dtype == np.bool_ for k in key):
        return len(adv) == 1
    return adv == list(range(adv[0], adv[-1] + 1))


def _setitem(name, fn, level, args, kwargs):
    x, key, value = args
    if not _at(x, level) or kwargs:
        return NotImplemented
    key = key if isinstance(key, tuple) else (key,)
    for k in key:
        if not (k is None or k is Ellipsis or isinstance(k, (int, slice))) or isinstance(k, bool):
            return NotImplemented
    pkey = (slice(None), *key)
    if _at(value, level):
        target = op("getitem", x._bval, pkey)
        value = _pad(value._bval, target.ndim - 1 - value.ndim)
    op("setitem", x._bval, pkey, value)
    return None


# -- the table ------------------------------------------------------------------------------


def _as_strided(name, fn, level, args, kwargs):
    """as_strided addresses the storage (Note [Storage of a tensor]). As in torch.func, each
    batch element sees the storage from its own start, ``b * batch_stride`` in the batch's
    storage, which needs the batch dim outermost in memory; otherwise this is an error
    (the per-element loop would read the batch's storage: a wrong answer)."""
    names = ("input", "size", "stride", "storage_offset")
    bound = dict(zip(names, args, strict=False)) | kwargs
    x, size, stride = bound["input"], bound["size"], bound["stride"]
    offset = bound.get("storage_offset")
    if not _at(x, level) or any(_any_at([v], level) for v in (size, stride, offset)):
        return NotImplemented
    phys = x._bval
    arr = phys._data
    item = arr.itemsize
    bstride = arr.strides[0] // item if arr.ndim else 0
    rest = max(
        (abs(st) // item * (n - 1) for st, n in zip(arr.strides[1:], arr.shape[1:], strict=True)),
        default=0,
    )
    if arr.shape[0] > 1 and bstride <= rest:
        raise VmapUnsupported(
            f"vmap: {name}: the vmapped dimension is not the outermost one in memory, so the "
            "elements of the batch share their storage (call .contiguous() first)"
        )
    if offset is None:
        from .ops.strided import storage_of  # noqa: PLC0415 - an op module

        offset = storage_of(arr)[1]
    size = (arr.shape[0], *tuple(size))
    stride = (bstride, *tuple(stride))
    out = op("as_strided", phys, size, stride, offset)
    if name == "as_strided_copy":
        out = op("clone", out)
    return wrap(out, level)


def _no_vmap(name, fn, level, args, kwargs):
    raise VmapUnsupported(f"vmap: {name} is not supported under vmap (it addresses the storage)")


def _install():
    RULES["as_strided"] = RULES["as_strided_copy"] = _as_strided
    RULES["as_strided_scatter"] = _no_vmap
    for name in _ELEMENTWISE:
        RULES[name] = elementwise
    for name in ROWS:
        RULES[name] = elementwise
        if name + "_" in OPS:
            RULES[name + "_"] = elementwise
    for name, spec in _DIM_OPS.items():
        RULES[name] = _dim_rule(*spec)
    RULES["transpose"] = RULES["swapaxes"] = RULES["swapdims"] = _two_dims(
        1, "dim0", None, 2, "dim1", None
    )
    RULES["movedim"] = RULES["moveaxis"] = _two_dims(1, "source", None, 2, "destination", None)
    RULES["diagonal"] = _two_dims(2, "dim1", 0, 3, "dim2", 1)
    RULES["flatten"] = _two_dims(1, "start_dim", 0, 2, "end_dim", -1)
    RULES["squeeze"] = _squeeze
    RULES["permute"] = _permute
    RULES["t"] = _t
    for name in ("tril", "triu"):
        RULES[name] = _last_dims(2)
    RULES["pad"] = _last_dims(1)
    for name in ("reshape", "view", "reshape_as", "view_as", "ravel"):
        RULES[name] = _reshape
    for name in ("expand", "expand_as", "broadcast_to"):
        RULES[name] = _expand
    RULES["repeat"] = RULES["tile"] = _repeat
    RULES["cat"] = RULES["concat"] = RULES["concatenate"] = RULES["stack"] = _join
    RULES["getitem"] = _getitem
    RULES["setitem"] = _setitem

    def _max_min(name, fn, level, args, kwargs):
        other = args[1] if len(args) > 1 else kwargs.get("other")
        if isinstance(other, Tensor):
            return elementwise(name, fn, level, args, kwargs)
        if (args[1] if len(args) > 1 else kwargs.get("dim", kwargs.get("axis"))) is None:
            if kwargs.get("keepdim") or kwargs.get("keepdims"):
                return NotImplemented
            return op("amax" if name == "max" else "amin", args[0])
        return _dim_rule(1, "dim", None)(name, fn, level, args, kwargs)

    RULES["max"] = RULES["min"] = _max_min
    from . import _batch_rules_linalg  # noqa: PLC0415 - it imports this module's helpers

    _batch_rules_linalg.install(RULES, _last_dims)
    from . import _batch_rules_nn  # noqa: PLC0415

    _batch_rules_nn.install(RULES)
    from . import _batch_rules_more  # noqa: PLC0415 - pooling, conv, embedding, index ops

    _batch_rules_more.install(RULES)


_install()
