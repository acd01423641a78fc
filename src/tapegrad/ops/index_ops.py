"""Index ops along a dim and by mask: index_add, index_copy, index_fill, index_reduce,
index_put, scatter_reduce, masked_select, masked_scatter, take, put, nonzero, argwhere.

Composed of the differentiable indexing primitives: ``scatter_back`` (zeros with values
added at a key, whose adjoint is indexing), ``gather``/``index_select``, ``where`` with
constant masks. scatter_reduce's amax/amin/prod have their own rule (below), written in
the same ops: ties share the gradient evenly, as PyTorch.
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import make_result
from ..tensor import Tensor, _check_dim
from ._mathutil import const
from ._registry import register
from ._util import as_tensor
from .elementwise import where
from .indexing import _gather_key, _int_index, index_grad, scatter_add, scatter_back

__all__ = [
    "index_add",
    "index_copy",
    "index_fill",
    "index_reduce",
    "index_put",
    "scatter_reduce",
    "masked_select",
    "masked_scatter",
    "take",
    "put",
    "nonzero",
    "argwhere",
]


def _dim_index(input, dim, index, op, source=None):
    """(dim, 1-D index array, key) for the *_index ops, checked as PyTorch does."""
    data = input._data
    d = _check_dim(dim, max(data.ndim, 1), op)
    idx = _int_index(index, op)
    if idx.ndim > 1:
        raise IndexError(
            f"{op}(): Index is supposed to be a vector, got shape {list(idx.shape)} of dtype "
            f"{getattr(index, 'dtype', idx.dtype)}"
        )
    idx = idx.reshape(-1)
    size = data.shape[d] if data.ndim else 1
    low = -size if op == "index_fill" else 0  # torch's index_add/copy/reduce wrap no index
    if idx.size and (idx.min() < low or idx.max() >= size):
        bad = idx[(idx < low) | (idx >= size)][0]
        # as PyTorch: its index_add of a 1-D tensor raises IndexError, of more dims RuntimeError
        error = RuntimeError if op == "index_add" and data.ndim > 1 else IndexError
        raise error(f"{op}(): index {int(bad)} is out of bounds for dimension {d} with size {size}")
    idx = np.where(idx < 0, idx + size, idx)
    if source is not None:
        s = source._data
        want = data.shape[:d] + (idx.size,) + data.shape[d + 1 :] if data.ndim else (idx.size,)
        if s.shape != want and not (data.ndim == 0 and s.size == idx.size):
            raise RuntimeError(
                f"{op}(): source shape {list(s.shape)} does not match the expected shape "
                f"{list(want)} (input {list(data.shape)}, index of length {idx.size}, dim {d})"
            )
    key = (slice(None),) * d + (idx,) if data.ndim else (idx * 0,)
    return d, idx, key


def _flat_if_0d(input):
    return input.reshape(1) if input._data.ndim == 0 else input


@register("index_add")
def index_add(input, dim, index, source, *, alpha=1):
    """``input`` with ``alpha * source`` added at ``index`` along ``dim`` (repeats add up).

    d/dinput = g;  d/dsource = alpha · g.index_select(dim, index).
    """
    source = as_tensor(source, "index_add")
    _, _, key = _dim_index(input, dim, index, "index_add", source)
    src = source if alpha == 1 else source * alpha
    x = _flat_if_0d(input)
    added = scatter_back(src.reshape(-1) if input._data.ndim == 0 else src, x.shape, key, True)
    return (x + added).reshape(input._data.shape)


def _rows_mask(shape, d, idx):
    mask = np.zeros(shape[d] if shape else 1, bool)
    mask[idx] = True
    return mask.reshape((-1,) + (1,) * (len(shape) - d - 1)) if shape else mask.reshape(())


@register("index_copy")
def index_copy(input, dim, index, source):
    """``input`` with the slices at ``index`` along ``dim`` replaced by ``source``'s.

    d/dinput = g outside the copied slices;  d/dsource = g.index_select(dim, index).
    """
    source = as_tensor(source, "index_copy")
    d, idx, key = _dim_index(input, dim, index, "index_copy", source)
    x = _flat_if_0d(input)
    placed = scatter_back(
        source.reshape(-1) if input._data.ndim == 0 else source, x.shape, key, True
    )
    mask = _rows_mask(input._data.shape, d, idx)
    return where(const(mask), placed.reshape(input._data.shape), input)


@register("index_fill")
def index_fill(input, dim, index, value):
    """``input`` with the slices at ``index`` along ``dim`` set to ``value`` (a number or a
    0-d tensor, which receives the sum of their gradient)."""
    d, idx, _ = _dim_index(input, dim, index, "index_fill")
    if isinstance(value, Tensor) and value._data.ndim:
        raise RuntimeError(
            f"index_fill_(): only supports a 0-dimensional value tensor, but got tensor with "
            f"{value._data.ndim} dimension(s)."
        )
    if isinstance(value, Tensor) and value._data.dtype != input._data.dtype:
        value = value._cast(input._data.dtype)
    elif not isinstance(value, Tensor):
        value = const(np.asarray(value, dtype=input._data.dtype))
    return where(const(_rows_mask(input._data.shape, d, idx)), value, input)


@register("index_put")
def index_put(input, indices, values, accumulate=False):
    """Out-of-place ``input[indices] = values`` (``+=`` with ``accumulate=True``, where
    repeated indices add up)."""
    key = tuple(indices) if isinstance(indices, (tuple, list)) else (indices,)
    values = as_tensor(values, "index_put")
    if values._data.dtype != input._data.dtype:
        raise RuntimeError(
            f"index_put: the source and destination dtypes must match, got {input._data.dtype} "
            f"for the destination and {values._data.dtype} for the source"
        )
    if accumulate:
        from .indexing import normalize_key  # noqa: PLC0415

        nkey, advanced = normalize_key(key, "index_put", input._data.shape)
        picked_shape = np.empty(input._data.shape, bool)[nkey].shape
        return input + scatter_back(values.expand(picked_shape), input._data.shape, nkey, advanced)
    out = input.clone()
    out[key] = values
    return out


# -- scatter_reduce -------------------------------------------------------------------------

_REDUCES = ("sum", "prod", "mean", "amax", "amin")


@register("scatter_reduce")
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """Reduce ``src`` into ``input`` at ``index`` along ``dim`` with ``reduce`` in
    {'sum', 'prod', 'mean', 'amax', 'amin'}; positions no index points at keep ``input``.
    ``include_self=False`` leaves ``input``'s value out of the reduction where written.

    Gradients as PyTorch: sum/mean pass g (over the count); amax/amin share g evenly among
    the tied maxima (of input and src); prod sends g·out/x (exact with zeros too).
    """
    if reduce not in _REDUCES:
        raise RuntimeError(
            f"scatter_reduce(): reduce argument must be one of {_REDUCES}, got {reduce!r}"
        )
    src = as_tensor(src, "scatter_reduce")
    if input._data.ndim == 0:  # one slot: work on shape (1,)
        idx0 = Tensor._wrap(_int_index(index, "scatter_reduce").reshape(-1))
        flat = src.reshape(-1)[: idx0._data.size]
        out = scatter_reduce(input.reshape(1), 0, idx0, flat, reduce, include_self=include_self)
        return out.reshape(())
    data = input._data
    idx = _int_index(index, "scatter_reduce")
    key, advanced = _gather_key(data, dim, idx, "scatter_reduce")
    if src._data.dtype != data.dtype:
        raise RuntimeError(
            f"scatter_reduce(): Expected self.dtype to be equal to src.dtype, got {data.dtype} "
            f"and {src._data.dtype}"
        )
    if idx.shape != src._data.shape:  # PyTorch uses src's leading index.shape block
        src = src[tuple(slice(0, n) for n in idx.shape)]
    hit = np.zeros(data.shape, np.int64)
    np.add.at(hit, key, 1)
    written = const(hit > 0)
    base = input if include_self else where(written, const(_identity(reduce, data.dtype)), input)
    d = _check_dim(dim, max(data.ndim, 1), "scatter_reduce")
    if reduce in ("sum", "mean"):
        total = scatter_add(base, d, index, src)
        if reduce == "sum":
            return total
        count = hit + (1 if include_self else 0)
        count = np.maximum(count, 1).astype(data.dtype)
        if data.dtype.kind in "iu":
            return where(written, const(np.floor_divide(total._data, count)), input)
        return where(written, total / const(count), input)
    return _scatter_extreme_or_prod(base, src, key, advanced, reduce)


def _identity(reduce, dtype):
    if reduce in ("sum", "mean"):
        return np.zeros((), dtype)
    if reduce == "prod":
        return np.ones((), dtype)
    if dtype.kind in "fV":  # V: bfloat16
        return np.asarray(-np.inf if reduce == "amax" else np.inf, dtype)
    info = np.iinfo(dtype)
    return np.asarray(info.min if reduce == "amax" else info.max, dtype)


def _scatter_extreme_or_prod(base, src, key, advanced, reduce):
    out = base._data.copy()
    ufunc = {"amax": np.fmax, "amin": np.fmin, "prod": np.multiply}[reduce]
    if reduce in ("amax", "amin"):
        # NaN wins, as in PyTorch: reduce with fmax/fmin, then put NaN back where one came.
        ufunc.at(out, key, src._data)
        nan_in = np.isnan(base._data) if out.dtype.kind == "f" else None
        if nan_in is not None:
            nan_hit = np.zeros(out.shape, bool)
            np.logical_or.at(nan_hit, key, np.isnan(src._data))
            out[nan_in | nan_hit] = np.nan
    else:
        ufunc.at(out, key, src._data)

    def backward(g, out_t):  # batch-aware: index_grad indexes after a batch prefix
        if reduce == "prod":
            return _prod_grads(g, out_t, base, src, key, advanced)
        o = out_t._data
        tie_in = (base._data == o) | (np.isnan(base._data) & np.isnan(o))
        o_at = o[key]
        tie_src = (src._data == o_at) | (np.isnan(src._data) & np.isnan(o_at))
        count = tie_in.astype(np.int64)
        np.add.at(count, key, tie_src)
        share = g / const(np.maximum(count, 1).astype(g._data.dtype))
        g_in = share * const(tie_in.astype(g._data.dtype))
        g_src = index_grad(share, key, advanced) * const(tie_src.astype(g._data.dtype))
        return g_in, g_src

    return make_result(out, (base, src), backward, "ScatterReduceBackward", save_output=True)


def _prod_grads(g, out_t, base, src, key, advanced):
    """d out / d x = product of the other factors: out / x without zeros; with zeros, the
    product of the other factors computed directly (a constant: first order only)."""
    x_in, x_src = base._data, src._data
    if not (np.any(x_in == 0) or np.any(x_src == 0)):
        g_in = g * out_t / base
        g_src = index_grad(g * out_t, key, advanced) / src
        return g_in, g_src
    others_in = np.empty_like(x_in)
    others_src = np.empty_like(x_src)
    flat_keys = np.ravel_multi_index(
        tuple(np.broadcast_to(k, x_src.shape) for k in key), x_in.shape
    ).reshape(-1)
    groups = {}
    for j, pos in enumerate(flat_keys):
        groups.setdefault(int(pos), []).append(j)
    fin, fsrc = x_in.reshape(-1), x_src.reshape(-1)
    oin, osrc = others_in.reshape(-1), others_src.reshape(-1)
    for pos in range(fin.size):
        members = [fsrc[j] for j in groups.get(pos, [])]
        oin[pos] = np.prod(members) if members else 1
        for k, j in enumerate(groups.get(pos, [])):
            osrc[j] = fin[pos] * np.prod(members[:k] + members[k + 1 :])
    return g * const(others_in), index_grad(g, key, advanced) * const(others_src)


@register("index_reduce")
def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """Reduce the slices of ``source`` into ``input`` at ``index`` along ``dim`` with
    ``reduce`` in {'prod', 'mean', 'amax', 'amin'} (see :func:`scatter_reduce`)."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(
            f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
            f"{reduce}."
        )
    source = as_tensor(source, "index_reduce")
    d, idx, _ = _dim_index(input, dim, index, "index_reduce", source)
    if input._data.ndim == 0:
        src = source.reshape(-1)
        return scatter_reduce(input, 0, Tensor._wrap(idx), src, reduce, include_self=include_self)
    shape = [1] * source._data.ndim
    shape[d] = idx.size
    full = np.broadcast_to(idx.reshape(shape), source._data.shape)
    return scatter_reduce(
        input,
        d,
        Tensor._wrap(np.ascontiguousarray(full)),
        source,
        reduce,
        include_self=include_self,
    )


# -- by mask and by flat position -----------------------------------------------------------


def _bool_mask(mask, op):
    m = mask._data if isinstance(mask, Tensor) else np.asarray(mask)
    if m.dtype != np.bool_:
        raise RuntimeError(f"{op}: expected a bool mask, got dtype {m.dtype}")
    return m


@register("masked_select")
def masked_select(input, mask):
    """The elements of ``input`` where ``mask`` (broadcast with it) is True, as 1-D."""
    m = _bool_mask(mask, "masked_select")
    try:
        shape = np.broadcast_shapes(input._data.shape, m.shape)
    except ValueError:
        raise RuntimeError(
            f"masked_select: the shape of the mask {list(m.shape)} must broadcast with the "
            f"shape of the input {list(input._data.shape)}"
        ) from None
    x = input.expand(shape) if input._data.shape != shape else input
    return x[Tensor._wrap(np.broadcast_to(m, shape))] if shape else x.reshape(1)[m.reshape(1)]


@register("masked_scatter")
def masked_scatter(input, mask, source):
    """``input`` with the positions where ``mask`` is True filled, in order, with the first
    elements of ``source``."""
    m = _bool_mask(mask, "masked_scatter")
    try:
        shape = np.broadcast_shapes(input._data.shape, m.shape)
    except ValueError:
        raise RuntimeError(
            f"masked_scatter: mask of shape {list(m.shape)} does not broadcast with the input "
            f"of shape {list(input._data.shape)}"
        ) from None
    if shape != input._data.shape:
        input = input.expand(shape)
    m = np.broadcast_to(m, shape)
    n = int(m.sum())
    source = as_tensor(source, "masked_scatter")
    if source._data.size < n:
        raise RuntimeError(
            f"masked_scatter: expected source to have at least {n} elements (the mask's True "
            f"count), got {source._data.size}"
        )
    taken = source.reshape(-1)[:n]
    if input._data.ndim == 0:
        return where(const(m), taken.reshape(()) if n else input, input)
    placed = scatter_back(taken, input._data.shape, (np.ascontiguousarray(m),), True)
    return where(const(m), placed, input)


@register("take")
def take(input, index):
    """The elements of the flattened ``input`` at ``index`` (result has index's shape)."""
    idx = _int_index(index, "take")
    n = input._data.size
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = idx[(idx < -n) | (idx >= n)].reshape(-1)[0]
        raise IndexError(
            f"take(): index {int(bad)} out of range for tensor of size {list(input._data.shape)}"
        )
    return input.reshape(-1)[Tensor._wrap(idx)]


@register("put")
def put(input, index, source, accumulate=False):
    """Out-of-place ``put_``: ``source``'s elements written (or added) at the flat positions
    ``index`` of ``input``."""
    idx = _int_index(index, "put")
    n = input._data.size
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = idx[(idx < -n) | (idx >= n)].reshape(-1)[0]
        raise IndexError(
            f"put(): index {int(bad)} out of range for tensor of size {list(input._data.shape)}"
        )
    source = as_tensor(source, "put")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(
            f"put(): self and source expected to have the same dtype, but got self.dtype = "
            f"{input._data.dtype} and source.dtype = {source._data.dtype}"
        )
    if source._data.size != idx.size:
        raise IndexError(
            f"put(): Expected source and index to have the same number of elements, but got "
            f"source.numel() = {source._data.size}, index.numel() = {idx.size}"
        )
    flat = index_put(
        input.reshape(-1), (Tensor._wrap(idx.reshape(-1)),), source.reshape(-1), accumulate
    )
    return flat.reshape(input._data.shape)


@register("nonzero", differentiable=False)
def nonzero(input, *, as_tuple=False):
    """Coordinates of the nonzero elements: an (n, ndim) int64 tensor, or with
    ``as_tuple=True`` one 1-D tensor per dim."""
    data = input._data
    coords = np.nonzero(np.atleast_1d(data))
    if as_tuple:
        return tuple(Tensor._wrap(c.astype(np.int64)) for c in coords)
    out = np.stack(coords, axis=1) if data.ndim else np.zeros((len(coords[0]), 0), np.int64)
    return Tensor._wrap(out.astype(np.int64))


@register("argwhere", differentiable=False)
def argwhere(input):
    """:func:`nonzero` as an (n, ndim) tensor."""
    return nonzero(input)
