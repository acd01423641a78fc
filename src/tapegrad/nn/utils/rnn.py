"""Variable-length batches for recurrent layers, as ``torch.nn.utils.rnn``.

A :class:`PackedSequence` holds the time steps of a batch of sequences sorted by
decreasing length, step after step: ``data`` (Σ lengths, *) and ``batch_sizes``
(how many sequences are still running at each step). Packing and unpacking are
gathers, so gradients flow through them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...ops.joining import cat, stack
from ...ops.joining import pad as _pad
from ...tensor import Tensor

__all__ = [
    "PackedSequence",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "pack_sequence",
    "unpack_sequence",
    "unpad_sequence",
    "invert_permutation",
]


class PackedSequence(NamedTuple):
    """``(data, batch_sizes, sorted_indices, unsorted_indices)`` as torch's; build it with
    :func:`pack_padded_sequence` or :func:`pack_sequence`."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    @property
    def is_cuda(self):
        return False

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else self._replace(data=data)

    def double(self):
        return self._replace(data=self.data.double())

    def float(self):
        return self._replace(data=self.data.float())


def invert_permutation(permutation):
    """The permutation that undoes ``permutation`` (None stays None)."""
    if permutation is None:
        return None
    p = permutation._data if isinstance(permutation, Tensor) else np.asarray(permutation)
    out = np.empty_like(p)
    out[p] = np.arange(p.size, dtype=p.dtype)
    return Tensor._wrap(out)


def _lengths(lengths):
    if isinstance(lengths, Tensor):
        lengths = lengths._data
    out = np.asarray(lengths)
    if out.ndim != 1 or out.dtype.kind not in "biuf":  # torch casts to int64 (truncating)
        raise RuntimeError(
            f"pack_padded_sequence: lengths must be a 1-D sequence of integers, got {lengths!r}"
        )
    return out.astype(np.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) ((B, T, *) with ``batch_first``) of sequences with
    the given ``lengths``.

    With ``enforce_sorted`` the lengths must be decreasing; otherwise the batch is sorted
    and the permutation is kept in ``sorted_indices``/``unsorted_indices``.
    """
    lens = _lengths(lengths)
    b_dim = 0 if batch_first else 1
    if lens.size != input.shape[b_dim]:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {lens.size} "
            f"(batch_size={input.shape[b_dim]})"
        )
    if lens.size and lens.min() <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in "
            "'lengths' that is <= 0"
        )
    if enforce_sorted:
        if np.any(np.diff(lens) > 0):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability."
            )
        sorted_indices = None
    else:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
        sorted_indices = Tensor._wrap(order.astype(np.int64))
        input = input.index_select(b_dim, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    t_max, b = input.shape[0], input.shape[1]
    if lens[0] > t_max:
        raise RuntimeError(
            f"pack_padded_sequence: a length of {lens[0]} exceeds the padded length {t_max}"
        )
    steps = np.arange(int(lens[0]))
    batch_sizes = (lens[None, :] > steps[:, None]).sum(1)
    flat = np.concatenate([t * b + np.arange(n) for t, n in enumerate(batch_sizes)])
    data = input.reshape((t_max * b,) + tuple(input.shape[2:]))[Tensor._wrap(flat)]
    return PackedSequence(
        data,
        Tensor._wrap(batch_sizes.astype(np.int64)),
        sorted_indices,
        invert_permutation(sorted_indices),
    )


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo :func:`pack_padded_sequence`: returns ``(padded, lengths)``, padded (T, B, *)
    (or (B, T, *)) filled with ``padding_value``, lengths an int64 tensor (original order)."""
    data, bs = sequence.data, sequence.batch_sizes._data
    b, t_max = int(bs[0]), len(bs)
    if total_length is not None:
        if total_length < t_max:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{t_max}"
            )
        t_max = total_length
    n = data.shape[0]
    index = np.full((t_max, b), n, np.int64)  # row n: the padding row appended below
    offset = 0
    for t, k in enumerate(bs):
        index[t, :k] = np.arange(offset, offset + k)
        offset += int(k)
    pad_row = Tensor._wrap(np.full((1,) + tuple(data.shape[1:]), padding_value, data._data.dtype))

    rows = cat([data, pad_row], 0)
    padded = rows[Tensor._wrap(index.reshape(-1))].reshape((t_max, b) + tuple(data.shape[1:]))
    lengths = (bs[None, :] > np.arange(b)[:, None]).sum(1).astype(np.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices._data]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, Tensor._wrap(lengths)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shapes (L_i, *) into (max L, B, *) (or (B, max L, *)), padded."""
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0)) if hasattr(sequences, "unbind") else [sequences]
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise ValueError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    t_max = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        extra = t_max - s.shape[0]
        spec = [0, 0] * (s.ndim - 1) + ([0, extra] if padding_side == "right" else [extra, 0])
        padded.append(_pad(s, spec, value=padding_value) if extra else s)
    return stack(padded, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of tensors (L_i, *) (decreasing lengths unless ``enforce_sorted=False``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of unpadded sequences of a padded batch."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[i, : int(n)] for i, n in enumerate(_lengths(lengths))]


def unpack_sequence(packed_sequences):
    """The list of sequences (original order) of a PackedSequence."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
