"""Joining and splitting: cat, stack, split, chunk, narrow, and pad.

cat/stack:   d/dx_i = the slice of g that x_i filled
split/chunk/narrow: views of the input; d/dx = the pieces' gradients put back in place
pad:         constant: d/dx = g cropped (pad with the negated widths);
             reflect/replicate/circular: an index gather, so d/dx scatter-adds g
"""

from __future__ import annotations

import numpy as np

from .. import _trace
from .._layout import c_order
from ..autograd.graph import (
    BATCH,
    batched_shape,
    fresh_array,
    make_result,
    make_results,
    mark_view,
)
from ..tensor import Tensor, _check_dim
from ._registry import register
from .indexing import index_grad, take_index

__all__ = ["cat", "stack", "split", "chunk", "narrow", "pad"]


def _tensor_list(tensors, op):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}: expected a sequence of tensors, got {type(tensors).__name__}")
    if not tensors:
        raise RuntimeError(f"{op}: expected a non-empty sequence of tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: element {i} is a {type(t).__name__}, not a Tensor")
    return list(tensors)


def _shapes(tensors):
    return ", ".join(str(list(t._data.shape)) for t in tensors)


def _split_dim(tensor, dim, op):
    """``dim`` normalised; a 0-d tensor has no dimension to cut (PyTorch raises too)."""
    if tensor._data.ndim == 0:
        raise RuntimeError(f"{op}: expects a tensor with at least 1 dimension, got a 0-d tensor")
    return _check_dim(dim, tensor._data.ndim, op)


@register("cat", method=False)
def cat(tensors, dim=0):
    """Concatenate along an existing dimension ``dim``; dtypes promote as in PyTorch.

    All shapes must match except in ``dim``. 1-D empty tensors are skipped, as PyTorch does.
    """
    if isinstance(tensors, (list, tuple)) and not tensors:
        raise ValueError("cat: expected a non-empty list of tensors")  # torch's type
    tensors = _tensor_list(tensors, "cat")
    # Positions (not ids: cat([e, e, e]) repeats one tensor) of the tensors concatenated.
    kept = [i for i, t in enumerate(tensors) if not (t._data.ndim == 1 and t._data.shape[0] == 0)]
    if not kept:
        kept = [0]
    parts = [tensors[i] for i in kept]
    ref = parts[0]._data
    if ref.ndim == 0:
        raise RuntimeError(
            f"cat: zero-dimensional tensor (at position {kept[0]}) cannot be concatenated; "
            "use stack"
        )
    d = _check_dim(dim, ref.ndim, "cat")
    for t in parts:
        s = t._data.shape
        if len(s) != ref.ndim or s[:d] + s[d + 1 :] != ref.shape[:d] + ref.shape[d + 1 :]:
            raise RuntimeError(
                f"cat: sizes of tensors must match except in dimension {d}; got shapes "
                f"{_shapes(tensors)}"
            )
    out = c_order(np.concatenate([t._data for t in parts], axis=d))  # Note [Torch's result layouts]
    bounds = np.cumsum([0] + [t._data.shape[d] for t in parts]).tolist()
    kept = set(kept)
    # (is a part, requires grad, dtype) per input position (cat([e, e, e]) repeats one
    # tensor): the rule keeps no input alive, so the Node saves nothing and can run twice
    # (Note [Backward twice]).
    metas = tuple((i in kept, t._rg, t._data.dtype) for i, t in enumerate(tensors))

    def backward(g):
        grads = []
        k = 0
        for is_part, rg, dtype in metas:
            if not is_part:  # a skipped 1-D empty tensor
                empty = np.zeros(batched_shape((0,)), dtype)
                grads.append(Tensor._wrap(empty) if rg else None)
                continue
            if not rg:
                grads.append(None)
                k += 1
                continue
            key = (slice(None),) * d + (slice(bounds[k], bounds[k + 1]), Ellipsis)
            gi = index_grad(g, key, False, "SliceBackward")
            grads.append(gi if gi._data.dtype == dtype else gi._cast(dtype))
            k += 1
        return tuple(grads)

    def array_backward(g):  # Note [Array backward] in autograd/engine.py: the same slices
        grads = []
        k = 0
        for is_part, rg, dtype in metas:
            if not is_part:
                grads.append(np.zeros((0,), dtype) if rg else None)
                continue
            if rg:
                gi = g[(slice(None),) * d + (slice(bounds[k], bounds[k + 1]), Ellipsis)]
                grads.append(gi if gi.dtype == dtype else _cast_array(gi, dtype))
            else:
                grads.append(None)
            k += 1
        return tuple(grads)

    return make_result(out, tuple(tensors), backward, "CatBackward", array_backward=array_backward)


def _cast_array(g, dtype):
    """``g`` cast as the Tensor op casts it (mixed dtypes joined: rare)."""
    return Tensor._wrap(g)._cast(dtype)._data


@register("stack", method=False)
def stack(tensors, dim=0):
    """Join same-shaped tensors along a new dimension ``dim`` (in ``[-ndim-1, ndim]``)."""
    tensors = _tensor_list(tensors, "stack")
    shape = tensors[0]._data.shape
    if any(t._data.shape != shape for t in tensors):
        raise RuntimeError(
            f"stack: expects each tensor to be equal size, got shapes {_shapes(tensors)}"
        )
    d = _check_dim(dim, len(shape) + 1, "stack")
    out = c_order(np.stack([t._data for t in tensors], axis=d))  # Note [Torch's result layouts]
    metas = tuple((t._rg, t._data.dtype) for t in tensors)  # no input kept alive

    def backward(g):
        grads = []
        for i, (rg, dtype) in enumerate(metas):
            if not rg:
                grads.append(None)
                continue
            gi = index_grad(g, (slice(None),) * d + (i, Ellipsis), False, "SelectBackward")
            grads.append(gi if gi._data.dtype == dtype else gi._cast(dtype))
        return tuple(grads)

    def array_backward(g):  # Note [Array backward] in autograd/engine.py: the same views
        grads = []
        for i, (rg, dtype) in enumerate(metas):
            if not rg:
                grads.append(None)
                continue
            gi = g[(slice(None),) * d + (i, Ellipsis)]
            grads.append(gi if gi.dtype == dtype else _cast_array(gi, dtype))
        return tuple(grads)

    return make_result(
        out, tuple(tensors), backward, "StackBackward", array_backward=array_backward
    )


@register("narrow")
def narrow(input, dim, start, length):
    """The view ``input[..., start:start+length, ...]`` along ``dim`` (start may be negative)."""
    data = input._data
    d = _split_dim(input, dim, "narrow")
    n = data.shape[d]
    start = int(start)
    if not -n <= start <= n:  # torch: a start outside the dim is an IndexError
        raise IndexError(
            f"narrow: start out of range (expected to be in range of [{-n}, {n}], but got "
            f"{start}) for dimension {d} of a tensor of shape {list(data.shape)}"
        )
    if start < 0:
        start += n
    if length < 0 or start + length > n:  # torch: a length past it a RuntimeError
        raise RuntimeError(
            f"narrow: start ({start}) + length ({length}) is out of range for dimension {d} "
            f"of size {n} (tensor of shape {list(data.shape)})"
        )
    key = (slice(None),) * d + (slice(start, start + int(length)), Ellipsis)
    return take_index(input, key, False, "SliceBackward", "narrow")


@register("split")
def split(tensor, split_size_or_sections, dim=0):
    """Split into views along ``dim``: pieces of ``split_size`` (the last may be smaller),
    or of the given list of sizes. Returns a tuple.

    d/dx: the pieces' gradients concatenated (zeros for pieces that got none).
    """
    data = tensor._data
    d = _split_dim(tensor, dim, "split")
    n = data.shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise RuntimeError(
                f"split: sizes {sizes} must be non-negative and sum to the size {n} of dim {d} "
                f"(tensor of shape {list(data.shape)})"
            )
    else:
        size = int(split_size_or_sections)
        if size <= 0 and n:
            raise RuntimeError(f"split: split_size must be positive, got {size}")
        sizes = [min(size, n - s) for s in range(0, n, size)] if n else [0]
    return _split_sizes(tensor, sizes, d)


def _split_sizes(tensor, sizes, d):
    data = tensor._data
    bounds = np.cumsum([0] + sizes).tolist()
    pieces = [
        data[(slice(None),) * d + (slice(bounds[i], bounds[i + 1]), Ellipsis)]
        for i in range(len(sizes))
    ]

    back_dim = d - data.ndim  # counted from the right: the grads may carry a batch prefix

    def backward(*grads):
        return (cat(list(grads), back_dim),)

    def array_backward(*grads):  # Note [Array backward] in autograd/engine.py: cat's kernel
        return (fresh_array(np.concatenate(grads, axis=d)),)

    outs = make_results(pieces, (tensor,), backward, "SplitBackward", array_backward=array_backward)
    for o in outs:  # views of one base: they share its version counter
        o._vc = tensor._vc
        o._base = tensor if tensor._base is None else tensor._base
    if outs and outs[0].grad_fn is not None:
        mark_view(outs[0].grad_fn, tensor)
    return outs


@register("chunk")
def chunk(input, chunks, dim=0):
    """Split into ``chunks`` views of equal size ``ceil(n / chunks)`` (the last may be smaller,
    and fewer chunks come back when n is small), as ``torch.chunk``."""
    if int(chunks) <= 0:
        raise RuntimeError(f"chunk: chunks must be positive, got {chunks}")
    n = input._data.shape[_split_dim(input, dim, "chunk")]
    if n == 0:  # PyTorch returns ``chunks`` empty pieces
        return split(input, [0] * int(chunks), dim)
    return split(input, -(-n // int(chunks)), dim)


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _pad_widths(pad):
    """``pad`` as a list of ints; a float or bool width (or a float/bool tensor) raises
    torch's TypeError instead of being truncated."""
    for i, p in enumerate(pad):
        kind = p._data.dtype.kind if isinstance(p, Tensor) else None
        if isinstance(p, (bool, float, np.bool_, np.floating)) or kind in ("b", "f", "c"):
            mod = type(p).__module__
            name = f"numpy.{type(p).__name__}" if mod == "numpy" else type(p).__name__
            raise TypeError(
                "pad(): argument 'pad' (position 2) must be tuple of ints, but found element "
                f"of type {name} at pos {i}"
            )
    return [int(p) for p in pad]


@register("pad", method=False)
def pad(input, pad, mode="constant", value=None):
    """Pad (or, with negative widths, crop) the last dimensions.

    ``pad`` is ``torch.nn.functional.pad``'s tuple: (left, right) of the last dim, then
    of the one before, and so on. ``mode``: constant (fill ``value``, default 0),
    reflect, replicate or circular.
    """
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"pad: mode must be one of {_PAD_MODES}, got {mode!r}")
    pad = _pad_widths(pad)
    data = input._data
    if len(pad) % 2 or len(pad) // 2 > data.ndim:
        raise RuntimeError(
            f"pad: the padding {pad} must have an even length of at most 2 * ndim for a "
            f"tensor of shape {list(data.shape)}"
        )
    widths = [(0, 0)] * data.ndim
    for i in range(len(pad) // 2):
        widths[data.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if mode == "constant":
        return _constant_pad(input, widths, pad, 0 if value is None else value)
    if value not in (None, 0):
        raise RuntimeError(f"pad: value is only meaningful in constant mode, not {mode!r}")
    key = []
    for axis, (lo, hi) in enumerate(widths):
        n = data.shape[axis]
        if (lo or hi) and (n == 0 or (mode == "reflect" and (lo >= n or hi >= n))):
            raise RuntimeError(
                f"pad: {mode} padding {pad} is too large for a tensor of shape {list(data.shape)}"
            )
        if n + lo + hi < 0:
            raise RuntimeError(
                f"pad: padding {pad} crops a tensor of shape {list(data.shape)} below size 0"
            )
        # A negative width crops: reflect and replicate index the original tensor, while
        # circular wraps around what is left after cropping (both as PyTorch).
        pos = np.arange(-lo, n + hi)
        if mode == "replicate":
            pos = np.clip(pos, 0, n - 1)
        elif mode == "circular" and (lo or hi):  # an unpadded dim may be empty
            start, kept = max(-lo, 0), n - max(-lo, 0) - max(-hi, 0)
            if max(lo, hi) > kept:  # (a crop to size 0 gives an empty dim, as torch)
                raise RuntimeError(
                    f"pad: circular padding {pad} is too large for a tensor of shape "
                    f"{list(data.shape)} (at most the size of the dim after cropping)"
                )
            pos = start + np.arange(-max(lo, 0), kept + max(hi, 0)) % max(kept, 1)
        elif mode == "reflect":  # about the edge elements, which are not repeated
            period = 2 * (n - 1) if n > 1 else 1
            pos = np.abs(pos) % period
            pos = np.where(pos >= n, period - pos, pos)
        shape = [1] * data.ndim
        shape[axis] = pos.size
        key.append(pos.reshape(shape))
    return take_index(input, tuple(key), True, f"{mode.capitalize()}PadBackward", "pad")


def _constant_pad(input, widths, pad, value):
    data = input._data
    out_shape = tuple(n + lo + hi for n, (lo, hi) in zip(data.shape, widths, strict=True))
    if any(n < 0 for n in out_shape):
        raise RuntimeError(
            f"pad: padding {pad} crops a tensor of shape {list(data.shape)} below size 0"
        )
    if _trace.recording():  # made from data, so that the copy below is recorded
        out = np.full_like(data, value, shape=out_shape, order="C")
    else:
        out = np.full(out_shape, value, dtype=data.dtype)
    dst = tuple(
        slice(max(lo, 0), max(lo, 0) + n + min(lo, 0) + min(hi, 0))
        for n, (lo, hi) in zip(data.shape, widths, strict=True)
    )
    src = tuple(
        slice(max(-lo, 0), n - max(-hi, 0)) for n, (lo, hi) in zip(data.shape, widths, strict=True)
    )
    out[dst] = data[src]
    negated = [-p for p in pad]

    def backward(g):
        crop = [(0, 0)] * len(BATCH.prefix) + [(-lo, -hi) for lo, hi in widths]
        return (_constant_pad(g, crop, negated, 0),)

    return make_result(out, (input,), backward, "ConstantPadBackward")
