"""Indexing: ``x[key]``, index_select, gather, take_along_dim, scatter, scatter_add,
masked_fill, and the index_put behind ``x[key] = v``.

Every gather-like op is ``input[key]`` for some NumPy key, so they share one rule:

    y = x[key]   =>   dx = scatter_back(g): zeros of x's shape with g *added* at key

(repeated indices accumulate). scatter_back's own derivative is ``gg[key]``, so
higher derivatives come for free. Basic keys (ints, slices, None, Ellipsis) give
views that share the input's memory and version counter.
"""

from __future__ import annotations

import numpy as np

from .. import _trace
from .._layout import c_order
from ..autograd.graph import (
    BATCH,
    arrays_of,
    batched_shape,
    fresh_array,
    keeps_arrays,
    make_result,
)
from ..tensor import Tensor, _check_dim
from ._int_scalars import fill_number
from ._registry import register
from ._util import as_tensor_or_scalar, reduce_grad
from .elementwise import where
from .shape import view_result

__all__ = [
    "getitem",
    "index_select",
    "gather",
    "take_along_dim",
    "scatter",
    "scatter_add",
    "masked_fill",
    "index_put",
]


# -- keys --------------------------------------------------------------------------------


def normalize_key(key, op: str = "index", shape=None):
    """``key`` as a tuple NumPy understands, and whether it holds advanced (array) parts.

    Tensors become their arrays; lists become arrays; 0-d integer tensors become ints.
    A basic key gets a trailing Ellipsis so that even ``x[0]`` of a vector is a 0-d view.
    """
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    advanced = False
    for k in key:
        if isinstance(k, Tensor):
            k = k._data
        if isinstance(k, (list, np.ndarray, range)):
            k = np.asarray(k)
            if k.dtype.kind == "f" and k.size == 0:
                k = k.astype(np.intp)
            if k.dtype.kind not in "biu":
                raise IndexError(
                    f"{op}: tensors used as indices must be integer or bool, got dtype {k.dtype}"
                    + ("" if shape is None else f" (indexing a tensor of shape {list(shape)})")
                )
            if k.ndim == 0 and k.dtype.kind != "b":
                k = int(k)
            else:
                advanced = True
        elif isinstance(k, (bool, np.bool_)):
            advanced = True
        elif isinstance(k, (int, np.integer)):
            k = int(k)
        elif not (k is None or k is Ellipsis or isinstance(k, slice)):
            raise IndexError(
                f"{op}: only integers, slices, None, Ellipsis, integer/bool tensors or arrays "
                f"are valid indices, got {type(k).__name__} {k!r}"
                + ("" if shape is None else f" (indexing a tensor of shape {list(shape)})")
            )
        out.append(k)
    if not advanced and not any(k is Ellipsis for k in out):
        out.append(Ellipsis)
    return tuple(out), advanced


def _describe(key) -> str:
    parts = []
    for k in key:
        if isinstance(k, np.ndarray):
            parts.append(
                f"array(shape={list(k.shape)}, dtype={k.dtype})" if k.size > 8 else f"{k.tolist()}"
            )
        elif k is Ellipsis:
            parts.append("...")
        else:
            parts.append(repr(k))
    return "[" + ", ".join(parts) + "]"


def _take(data, key, op):
    try:
        return data[key]
    except IndexError as e:
        raise IndexError(
            f"{op}: index {_describe(key)} is out of range or invalid for a tensor of shape "
            f"{list(data.shape)} ({e})"
        ) from None


# -- x[key] and its adjoint --------------------------------------------------------------


def take_index(input: Tensor, key: tuple, advanced: bool, name: str, op: str = "index"):
    """``input[key]`` for a normalised key, recorded with the scatter-back rule."""
    out = _take(input._data, key, op)
    if advanced and (op == "index_select" or input._data.flags.c_contiguous):
        out = c_order(out)  # torch's layout (Note [Torch's result layouts])
    shape = input._data.shape

    def backward(g):
        return (scatter_back(g, shape, key, advanced),)

    def array_backward(g):  # Note [Array backward] in autograd/engine.py
        return (fresh_array(_scatter_add_array(g, shape, key, advanced)),)

    if advanced:
        return keeps_arrays(
            make_result(out, (input,), backward, name, array_backward=array_backward)
        )
    return view_result(out, input, backward, name, array_backward)


@register("getitem", function=False, method=False, operators=("__getitem__",))
def getitem(input, key):
    """``input[key]`` with NumPy/PyTorch semantics (basic keys give views).

    d/dx: the gradient is added back at the indexed positions; repeated indices add up.
    """
    key, advanced = normalize_key(key, "index", input._data.shape)
    out = take_index(input, key, advanced, "IndexBackward" if advanced else "SliceBackward")
    if advanced:
        moved = _torch_layout(key, input._data.ndim, out._data.ndim)
        if moved is not None:
            out = out.movedim(*moved)
            if input._data.flags.c_contiguous:  # torch's layout (_layout.py)
                out = out.contiguous()
    return out


def _torch_layout(key, ndim, out_ndim):
    """Where PyTorch puts the advanced-index dims when NumPy puts them elsewhere, as
    ``movedim`` arguments (or None when both agree).

    Note [Ints in advanced keys]: PyTorch applies integer indices first (as ``select``), so
    in ``x[1, :, [0, 1]]`` the list is the only advanced index and its dim stays in place:
    shape (5, 2) for x of shape (2, 5, 6). NumPy counts the int as advanced too, finds the
    advanced indices separated by a slice and moves their dims to the front: (2, 5).
    """
    is_int = [isinstance(k, int) for k in key]
    if not any(is_int):
        return None
    arrays = [i for i, k in enumerate(key) if isinstance(k, np.ndarray)]
    if not arrays:
        return None
    advanced = sorted(arrays + [i for i, b in enumerate(is_int) if b])
    if advanced[-1] - advanced[0] + 1 == len(advanced):
        return None  # NumPy keeps them in place, as PyTorch does
    kept = [i for i in range(len(key)) if not is_int[i]]
    pos = [kept.index(i) for i in arrays]
    if pos[-1] - pos[0] + 1 != len(pos):
        return None  # PyTorch moves them to the front too
    consumed = sum(
        (k.ndim if k.dtype == np.bool_ else 1) if isinstance(k, np.ndarray) else 1
        for k in key
        if not (k is None or k is Ellipsis)
    )
    basic = 0  # result dims made by slices, None and the Ellipsis
    front = None
    for i, k in enumerate(key):
        if i == arrays[0]:
            front = basic
        if k is None or isinstance(k, slice):
            basic += 1
        elif k is Ellipsis:
            basic += ndim - consumed
    if not any(k is Ellipsis for k in key):
        basic += ndim - consumed  # the dims the key does not name
    n_adv = out_ndim - basic
    return tuple(range(n_adv)), tuple(range(front, front + n_adv))


def scatter_back(g: Tensor, shape: tuple, key: tuple, advanced: bool) -> Tensor:
    """Zeros of ``shape`` with ``g`` added at ``key`` (the adjoint of ``x[key]``).

    Batch-aware (Note [Batched gradients]): inside a batched backward ``g`` carries the
    batch prefix and so does the result.
    """
    prefix = BATCH.prefix
    if not prefix:
        return _scatter_node(g, shape, key, advanced)
    lead = (slice(None),) * len(prefix)
    if not advanced:
        return _scatter_node(g, prefix + tuple(shape), lead + key, False)
    pos, n = _flat_positions(shape, key)
    flat = _scatter_node(g, prefix + (n,), lead + (pos,), True)
    return flat.reshape(prefix + tuple(shape))


def index_grad(g: Tensor, key: tuple, advanced: bool, name: str = "IndexBackward") -> Tensor:
    """``g[key]`` inside a backward rule: ``key`` indexes the dims after the batch prefix of
    a batched backward (Note [Batched gradients]); plain ``g[key]`` otherwise."""
    prefix = BATCH.prefix
    if not prefix:
        return take_index(g, key, advanced, name)
    p = len(prefix)
    lead = (slice(None),) * p
    if not advanced:
        return take_index(g, lead + key, False, name)
    # Array keys: NumPy moves the indexed dims to the front when the arrays are not
    # adjacent, which a leading batch slice would upset; pick flat positions instead.
    pos, n = _flat_positions(g._data.shape[p:], key)
    return take_index(g.reshape(prefix + (n,)), lead + (pos,), True, name)


def _flat_positions(shape, key):
    """``(positions, n)``: the flat (C-order) positions in a tensor of ``shape`` (n elements)
    that ``x[key]`` picks, shaped like ``x[key]``."""
    n = int(np.prod(shape))
    return np.arange(n).reshape(shape)[key], n


def _scatter_node(g: Tensor, shape: tuple, key: tuple, advanced: bool) -> Tensor:
    out = _scatter_add_array(g._data, shape, key, advanced)

    def backward(gg):
        return (index_grad(gg, key, advanced),)

    return keeps_arrays(make_result(out, (g,), backward, "IndexPutAccumulateBackward"))


def _scatter_add_array(values, shape, key, advanced):
    """NumPy: zeros of ``shape`` with ``values`` added at ``key``, without a Python loop.

    Basic keys and bool masks select each position at most once, so assignment does.
    Integer arrays may repeat positions: they go through one ``np.bincount`` over flat
    indices (faster than ``np.add.at`` except for the 1-D case, where add.at is fastest);
    when many indices pick narrow rows, one bincount per trailing column is faster still.
    """
    dtype = values.dtype
    if not advanced or all(not isinstance(k, np.ndarray) or k.dtype.kind == "b" for k in key):
        out = np.zeros(shape, dtype)
        out[key] = values
        return out
    if dtype.kind == "c":  # np.bincount takes real weights: the two parts apart
        out = _scatter_add_array(values.real, shape, key, advanced).astype(dtype)
        out.imag = _scatter_add_array(values.imag, shape, key, advanced)
        return out
    n = int(np.prod(shape))
    lead = _leading_int_arrays(key)
    if lead is not None and len(shape) == 1:
        out = np.zeros(shape, dtype)
        np.add.at(out, lead[0], values)
        return out
    if lead is not None:
        k = len(lead)
        arrays = [np.where(a < 0, a + shape[i], a) for i, a in enumerate(lead)]
        flat = np.ravel_multi_index(tuple(np.broadcast_arrays(*arrays)), shape[:k]).ravel()
        rows = n // max(int(np.prod(shape[k:])), 1)  # 0 when n is 0
        inner = n // rows if rows else 0
        if inner > 1 and dtype.kind in "fc":
            return _segment_sum_rows(flat, values.reshape(flat.size, inner), rows).reshape(shape)
        if inner > 1 and inner * 64 <= flat.size:
            # many indices, narrow rows: one bincount per trailing column
            cols = values.reshape(flat.size, inner)
            out = np.empty((rows, inner), dtype)
            for c in range(inner):
                out[:, c] = np.bincount(flat, weights=cols[:, c], minlength=rows)
            return out.reshape(shape)
        if inner != 1:
            flat = flat[:, None] * inner + np.arange(inner)
    else:  # a mixture with slices or None: gather the flat positions themselves
        flat = np.arange(n).reshape(shape)[key]
    summed = np.bincount(flat.ravel(), weights=values.ravel(), minlength=n)
    return summed.astype(dtype, copy=False).reshape(shape)


def _segment_sum_rows(rows_idx, values, n_rows):
    """(n_rows, C) zeros with row ``values[i]`` added at row ``rows_idx[i]``: the embedding
    backward. Sort the indices, sum each run of equal ones with ``np.add.reduceat``:
    1.1-6x faster than a bincount over flat positions and 1.4-5.5x faster than
    ``np.add.at`` (1,024 indices, rows of 16-64 floats), and written with traceable NumPy
    calls only (tapegrad.jit records it)."""
    order = np.argsort(rows_idx, kind="stable")
    s = rows_idx[order]
    starts = np.flatnonzero(np.concatenate((s[:1] == s[:1], s[1:] != s[:-1])))
    out = np.zeros_like(values, shape=(n_rows, values.shape[1]))
    if starts.size:
        out[s[starts]] = np.add.reduceat(values[order], starts, axis=0)
    return out


def _leading_int_arrays(key):
    """The index arrays when ``key`` is integer arrays on the leading dims followed only by
    full slices / Ellipsis (the embedding-lookup shape), else None."""
    arrays = []
    for k in key:
        if isinstance(k, np.ndarray):
            if k.dtype.kind not in "iu":
                return None
            arrays.append(k)
        elif k is Ellipsis or (isinstance(k, slice) and k == slice(None)):
            break
        else:
            return None
    rest = key[len(arrays) :]
    if not arrays or any(
        not (k is Ellipsis or (isinstance(k, slice) and k == slice(None))) for k in rest
    ):
        return None
    return arrays


# -- x[key] = v --------------------------------------------------------------------------


def index_put(input: Tensor, key: tuple, advanced: bool, values, out=None) -> Tensor:
    """``input`` with ``values`` written at ``key`` (last write wins for repeated indices).

    ``out``: the array to write into (``input._data`` itself for an in-place op);
    a new copy of ``input`` when None.  d/dinput = g with zeros at key;
    d/dvalues = g[key] summed back to values' shape.
    """
    tv, dv = as_tensor_or_scalar(values, "index_put")
    data = input._data.copy() if out is None else out
    try:
        data[key] = dv
    except IndexError as e:
        raise IndexError(
            f"index_put: index {_describe(key)} is out of range or invalid for a tensor of "
            f"shape {list(input._data.shape)} ({e})"
        ) from None
    except ValueError:
        picked = np.shape(_take(input._data, key, "index_put"))
        raise RuntimeError(
            f"index_put: cannot assign a value of shape {list(np.shape(dv))} to the "
            f"{list(picked)} elements selected by {_describe(key)} of a tensor of shape "
            f"{list(input._data.shape)}"
        ) from None
    na = input._rg
    nv = tv is not None and tv._rg
    keep = None
    if na:
        # A recorded step with array keys makes ``keep`` from the input, so that each
        # replay computes it from its own key (tapegrad._trace).
        traced = advanced and _trace.recording()
        keep = np.ones_like(input._data, bool) if traced else np.ones(data.shape, bool)
        keep[key] = False
    # NOTE: the overwritten history gets zeros, not None, even when every element is
    # overwritten (``b.copy_(src)``: torch's CopyBackwards gives zeros); where(), not
    # g * keep, so a NaN or inf in g does not leak into the overwritten places.
    zero = np.zeros((), input._data.dtype)

    def backward(g):
        gi = where(keep, g, zero) if na else None
        gv = reduce_grad(index_grad(g, key, advanced), tv) if nv else None
        return gi, gv

    return keeps_arrays(make_result(data, (input, tv), backward, "IndexPutBackward"))


# -- named gather/scatter ops ---------------------------------------------------------------


def _int_index(index, op):
    idx = index._data if isinstance(index, Tensor) else np.asarray(index)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"{op}: index must be an integer tensor, got dtype {idx.dtype}")
    return idx


@register("index_select")
def index_select(input, dim, index):
    """The entries of ``input`` along ``dim`` at the positions in the 1-D ``index``."""
    data = input._data
    d = _check_dim(dim, data.ndim, "index_select")
    idx = _int_index(index, "index_select")
    if idx.ndim > 1:
        raise IndexError(f"index_select: index must be 0-d or 1-D, got shape {list(idx.shape)}")
    size = data.shape[d] if data.ndim else 1
    _check_range(idx, size, "index_select", d, data.shape, IndexError)
    if data.ndim == 0:
        if idx.size != 1:
            raise RuntimeError(
                f"index_select: the index into a 0-d tensor must hold one value, got {idx.size}"
            )
        return take_index(input, (Ellipsis,), False, "IndexSelectBackward")
    key = (slice(None),) * d + (idx.reshape(-1),)
    return take_index(input, key, True, "IndexSelectBackward", "index_select")


def _check_range(idx, size, op, dim, shape, error=RuntimeError):
    """An index out of range: torch's RuntimeError (gather, scatter, take_along_dim);
    index_select's is an IndexError."""
    if idx.size and (idx.min() < 0 or idx.max() >= size):
        bad = idx[(idx < 0) | (idx >= size)].ravel()[0]
        raise error(
            f"{op}: index {int(bad)} is out of range for dimension {dim} with size {size} "
            f"(tensor of shape {list(shape)})"
        )


def _dim_key(idx, dim, sizes):
    """An open-mesh key picking ``idx`` along ``dim`` and position i along every other dim."""
    nd = idx.ndim
    key = []
    for d in range(nd):
        if d == dim:
            key.append(idx)
        else:
            shape = [1] * nd
            shape[d] = idx.shape[d]
            key.append(np.arange(idx.shape[d]).reshape(shape) % max(sizes[d], 1))
    return tuple(key)


def _gather_key(data, dim, idx, op):
    if idx.ndim != data.ndim and not (data.ndim == 0 and idx.ndim <= 1):
        raise RuntimeError(
            f"{op}: index must have the same number of dims as input; got index shape "
            f"{list(idx.shape)} for input shape {list(data.shape)}"
        )
    d = _check_dim(dim, data.ndim, op)
    for i in range(data.ndim):
        if i != d and idx.shape[i] > data.shape[i]:
            raise RuntimeError(
                f"{op}: index shape {list(idx.shape)} is larger than input shape "
                f"{list(data.shape)} in dimension {i}"
            )
    _check_range(idx, data.shape[d] if data.ndim else 1, op, d, data.shape)
    if data.ndim == 0:
        return (Ellipsis,), False
    return _dim_key(idx, d, data.shape), True


@register("gather")
def gather(input, dim, index):
    """``out[i][j] = input[index[i][j]][j]`` for dim=0 (and likewise for other dims).

    d/dinput: scatter_add of g at the same positions.
    """
    idx = _int_index(index, "gather")
    if idx.size == 0 and idx.ndim != input._data.ndim:  # PyTorch: an empty result, any rank
        _check_dim(dim, max(input._data.ndim, 1), "gather")
        return input.reshape(-1)[:0].reshape(idx.shape)
    key, advanced = _gather_key(input._data, dim, idx, "gather")
    if input._data.ndim == 0 and idx.ndim == 1:  # the result has the index's shape (1,)
        return take_index(input.reshape(1), (idx,), True, "GatherBackward", "gather")
    return take_index(input, key, advanced, "GatherBackward", "gather")


def _wrap_negative(idx, size):
    """Indices in [-size, 0) count from the end, as in PyTorch's take_along_dim."""
    if idx.size and idx.min() < 0:
        idx = np.where((idx < 0) & (idx >= -size), idx + size, idx)
    return idx


@register("take_along_dim")
def take_along_dim(input, indices, dim=None):
    """Pick values along ``dim`` with ``indices``, broadcasting the other dims (flattened
    input when ``dim`` is None), as ``torch.take_along_dim``."""
    idx = _int_index(indices, "take_along_dim")
    if dim is None:
        flat = input.reshape(-1)
        idx = _wrap_negative(idx, flat._data.shape[0])
        _check_range(idx, flat._data.shape[0], "take_along_dim", 0, input._data.shape)
        return take_index(flat, (idx.reshape(-1),), True, "TakeAlongDimBackward", "take_along_dim")
    data = input._data
    d = _check_dim(dim, data.ndim, "take_along_dim")
    if idx.ndim != data.ndim:
        raise RuntimeError(
            f"take_along_dim: input and indices need the same number of dims, got shapes "
            f"{list(data.shape)} and {list(idx.shape)}"
        )
    try:
        out_shape = np.broadcast_shapes(
            data.shape[:d] + (1,) + data.shape[d + 1 :], idx.shape[:d] + (1,) + idx.shape[d + 1 :]
        )
    except ValueError:
        raise RuntimeError(
            f"take_along_dim: shapes {list(data.shape)} and {list(idx.shape)} cannot be "
            f"broadcast outside dim {d}"
        ) from None
    idx = _wrap_negative(idx, data.shape[d])
    _check_range(idx, data.shape[d], "take_along_dim", d, data.shape)
    full = list(out_shape)
    full[d] = idx.shape[d]
    idx = np.broadcast_to(idx, full)
    key = []
    for i in range(data.ndim):
        if i == d:
            key.append(idx)
            continue
        shape = [1] * data.ndim
        shape[i] = full[i]
        # size-1 input dims are broadcast: always pick position 0 (gradients add up there)
        pos = np.arange(full[i]) if data.shape[i] == full[i] else np.zeros(full[i], np.intp)
        key.append(pos.reshape(shape))
    return take_index(input, tuple(key), True, "TakeAlongDimBackward", "take_along_dim")


def _scatter(input, dim, index, src, reduce_add, op):
    idx = _int_index(index, op)
    data = input._data
    key, advanced = _gather_key(data, dim, idx, op)
    ts, ds = as_tensor_or_scalar(src, op)
    if ts is not None:
        if ts._data.ndim != idx.ndim or any(
            a > b for a, b in zip(idx.shape, ts._data.shape, strict=False)
        ):
            raise RuntimeError(
                f"{op}: src shape {list(ts._data.shape)} must have index's number of dims and be "
                f"at least index's shape {list(idx.shape)}"
            )
        ds = ts._data[tuple(slice(0, n) for n in idx.shape)]
    out = data.copy()
    if reduce_add:
        out = out + _scatter_add_array(
            np.broadcast_to(np.asarray(ds, dtype=data.dtype), idx.shape), data.shape, key, advanced
        )
    else:
        out[key] = ds
    out = out.astype(data.dtype, copy=False)
    ni = input._rg
    ns = ts is not None and ts._rg
    keep = None
    if ni and not reduce_add:
        keep = np.ones(data.shape, bool)
        keep[key] = False
    src_shape = ts._data.shape if ts is not None else None
    name = "ScatterAddBackward" if reduce_add else "ScatterBackward"

    def backward(g):
        gi = None
        if ni:
            gi = g if reduce_add else g * keep
        gs = None
        if ns:
            gs = index_grad(g, key, advanced, "GatherBackward")
            if gs._data.shape[len(BATCH.prefix) :] != src_shape:
                pad = np.zeros(batched_shape(src_shape), g._data.dtype)
                lead = (slice(None),) * len(BATCH.prefix)
                gs = index_put(
                    Tensor._wrap(pad),
                    lead + tuple(slice(0, n) for n in idx.shape) + (Ellipsis,),
                    False,
                    gs,
                )
        return gi, gs

    return keeps_arrays(make_result(out, (input, ts), backward, name))


@register("scatter")
def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """A copy of ``input`` with ``src`` (or the scalar ``value``) written at ``index`` along
    ``dim``: ``out[index[i][j]][j] = src[i][j]`` for dim=0. ``reduce='add'|'multiply'``
    combines instead of writing (:func:`scatter_reduce` with 'sum'/'prod').

    d/dinput = g with zeros where written; d/dsrc = g gathered at index.
    """
    if src is None:
        if value is None:
            raise TypeError("scatter: pass src (a tensor) or value (a number)")
        src = value
    if reduce is not None:
        from .index_ops import scatter_reduce  # noqa: PLC0415 - index_ops builds on this file

        modes = {"add": "sum", "multiply": "prod"}
        if reduce not in modes:
            raise RuntimeError(
                f"scatter(): reduce argument must be 'add' or 'multiply', got {reduce!r}"
            )
        if not isinstance(src, Tensor):
            src = Tensor._wrap(
                np.full(
                    np.shape(index._data if isinstance(index, Tensor) else index),
                    src,
                    input._data.dtype,
                )
            )
        return scatter_reduce(input, dim, index, src, modes[reduce])
    return _scatter(input, dim, index, src, False, "scatter")


@register("scatter_add")
def scatter_add(input, dim, index, src):
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim`` (repeats add up).

    d/dinput = g; d/dsrc = g gathered at index.
    """
    return _scatter(input, dim, index, src, True, "scatter_add")


@register("masked_fill")
def masked_fill(input, mask, value):
    """``input`` with ``value`` where the bool ``mask`` (broadcast to input) is True.

    d/dinput = g where mask is False; d/dvalue (a 0-d tensor) = sum of g where mask.
    """
    m = mask._data if isinstance(mask, Tensor) else np.asarray(mask)
    if m.dtype != np.bool_:
        raise TypeError(f"masked_fill: mask must be a bool tensor, got dtype {m.dtype}")
    tv, dv = as_tensor_or_scalar(value, "masked_fill")
    if tv is not None and tv._data.ndim != 0:
        raise RuntimeError(
            f"masked_fill: value must be a number or a 0-d tensor, got shape {list(tv.shape)}"
        )
    data = input._data
    if tv is None:  # Note [Numbers beyond an integer dtype] in ops/_int_scalars.py
        dv = fill_number(dv, data)
    try:
        m = np.broadcast_to(m, data.shape)
    except ValueError:
        raise RuntimeError(
            f"masked_fill: mask of shape {list(m.shape)} cannot be broadcast to the input's "
            f"shape {list(data.shape)}"
        ) from None
    out = c_order(
        np.where(m, np.asarray(dv).astype(data.dtype), data)
    )  # Note [Torch's result layouts]
    ni = input._rg
    nv = tv is not None and tv._rg
    if ni or nv:
        keep = ~m

    def backward(g):
        gi = g * keep if ni else None
        gv = None
        if nv:  # a batched backward keeps the batch prefix (reduce_grad sums the rest)
            picked = g * m
            gv = reduce_grad(picked if BATCH.prefix else picked.sum(), tv)
        return gi, gv

    def array_backward(g):  # Note [Array backward] in autograd/engine.py
        if nv:  # a tensor value that requires grad: rare, its Tensor rule
            return arrays_of(backward(Tensor._wrap(g)))
        return (np.multiply(g, keep) if ni else None, None)  # g * keep, as mul computes it

    return keeps_arrays(
        make_result(out, (input, tv), backward, "MaskedFillBackward", array_backward=array_backward)
    )
