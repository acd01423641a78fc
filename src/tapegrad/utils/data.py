"""Datasets and the DataLoader that batches them, as ``torch.utils.data``.

Loading runs in the calling process (``num_workers`` is accepted for
compatibility and ignored). Batches are new tensors outside any graph.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ..creation import default_generator
from ..tensor import Tensor

__all__ = [
    "Dataset",
    "TensorDataset",
    "Subset",
    "DataLoader",
    "default_collate",
    "random_split",
]


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__(index)`` and ``__len__()``."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")


class TensorDataset(Dataset):
    """Samples are the ``index``-th rows of each tensor: ``(x[i], y[i], ...)``.

    Args:
        *tensors: tensors (or NumPy arrays) with the same size in dimension 0.

    Raises:
        ValueError: if the sizes in dimension 0 differ.

    >>> import tapegrad as tg
    >>> ds = tg.utils.data.TensorDataset(tg.arange(6).reshape(3, 2), tg.tensor([0, 1, 0]))
    >>> len(ds), ds[1]
    (3, (tensor([2, 3]), tensor(1)))
    """

    def __init__(self, *tensors):
        tensors = tuple(
            t if isinstance(t, Tensor) else Tensor._wrap(np.asarray(t)) for t in tensors
        )
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        sizes = [t.shape[0] if t.ndim else None for t in tensors]
        if None in sizes or len(set(sizes)) != 1:
            shapes = [tuple(t.shape) for t in tensors]
            raise ValueError(f"Size mismatch between tensors: shapes {shapes} differ in dim 0")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(Tensor._wrap(np.asarray(t._data[index])) for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = list(indices)

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset, lengths, generator=None) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random subsets of the given lengths.

    Args:
        dataset: the dataset to split.
        lengths: sizes of the parts, or fractions summing to 1 (the remainder of the
            rounding goes one by one to the first parts, as PyTorch).
        generator: ``tg.Generator`` for the permutation (default: ``tg.default_generator``).

    Raises:
        ValueError: if the lengths do not add up to ``len(dataset)``.
    """
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, frac in enumerate(lengths):
            if not 0 <= frac <= 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            counts.append(math.floor(n * frac))
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError(
            f"Sum of input lengths ({sum(lengths)}) does not equal the length of the "
            f"input dataset ({n})"
        )
    order = (generator or default_generator).numpy.permutation(n).tolist()
    parts, offset = [], 0
    for length in lengths:
        parts.append(Subset(dataset, order[offset : offset + length]))
        offset += length
    return parts


class DataLoader:
    """Iterate over a dataset in batches.

    Args:
        dataset: a map-style dataset (``__getitem__`` and ``__len__``).
        batch_size: samples per batch; None yields single samples (not collated).
        shuffle: draw a new random order at the start of every iteration.
        sampler: an iterable of indices giving the order (instead of ``shuffle``).
        num_workers: accepted for compatibility; loading runs in this process.
        collate_fn: turns a list of samples into a batch (default: :func:`default_collate`).
        pin_memory: accepted for compatibility; ignored.
        drop_last: drop the last batch when it is smaller than ``batch_size``.
        generator: ``tg.Generator`` used for shuffling (default: ``tg.default_generator``),
            so ``tg.manual_seed`` or a seeded generator makes the order reproducible.

    A :class:`TensorDataset` (or a :class:`Subset` of one) with the default collate is
    batched by indexing its arrays with the batch's indices at once, not sample by sample.

    >>> import tapegrad as tg
    >>> ds = tg.utils.data.TensorDataset(tg.arange(5))
    >>> [batch for (batch,) in tg.utils.data.DataLoader(ds, batch_size=2)]
    [tensor([0, 1]), tensor([2, 3]), tensor([4])]
    """

    def __init__(
        self,
        dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler=None,
        num_workers: int = 0,
        collate_fn=None,
        pin_memory: bool = False,
        drop_last: bool = False,
        generator=None,
    ):
        if batch_size is not None and (
            not isinstance(batch_size, (int, np.integer)) or batch_size <= 0
        ):
            raise ValueError(f"batch_size should be a positive integer, got {batch_size!r}")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")  # fmt: skip
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = bool(shuffle)
        self.sampler = sampler
        self.num_workers = num_workers
        self.collate_fn = collate_fn
        self.pin_memory = pin_memory
        self.drop_last = drop_last
        self.generator = generator

    def __len__(self) -> int:
        n = len(self.sampler) if self.sampler is not None else len(self.dataset)
        if self.batch_size is None:
            return n
        if self.drop_last:
            return n // self.batch_size
        return -(-n // self.batch_size)

    def _order(self) -> np.ndarray:
        if self.sampler is not None:
            return np.fromiter((int(i) for i in self.sampler), dtype=np.int64)
        n = len(self.dataset)
        if self.shuffle:
            return (self.generator or default_generator).numpy.permutation(n)
        return np.arange(n)

    def __iter__(self):
        order = self._order()
        if self.batch_size is None:
            for i in order:
                yield _convert(self.dataset[int(i)])
            return
        size = self.batch_size
        stop = len(order) - len(order) % size if self.drop_last else len(order)
        fast = _index_arrays(self.dataset) if self.collate_fn is None else None
        collate = self.collate_fn or default_collate
        for start in range(0, stop, size):
            idx = order[start : start + size]
            if fast is not None:
                arrays, base = fast
                if base is not None:
                    idx = base[idx]
                yield [Tensor._wrap(a[idx]) for a in arrays]
            else:
                yield collate([self.dataset[int(i)] for i in idx])


def _index_arrays(dataset):
    """``(arrays, base_indices or None)`` when a batch can be cut from arrays directly."""
    if type(dataset) is TensorDataset:
        return [t._data for t in dataset.tensors], None
    if type(dataset) is Subset:
        inner = _index_arrays(dataset.dataset)
        if inner is not None:
            arrays, base = inner
            idx = np.asarray(dataset.indices, dtype=np.int64)
            return arrays, idx if base is None else base[idx]
    return None


def default_collate(batch):
    """Stack a list of samples into a batch, as PyTorch's ``default_collate``.

    Tensors and NumPy arrays are stacked along a new dim 0; Python floats become a
    float64 tensor, ints an int64 tensor, bools a bool tensor; strings stay a list;
    dicts, tuples and lists are collated field by field (tuples and lists into a list,
    named tuples into the same type).

    Raises:
        TypeError: for samples of another type.
        RuntimeError: when sequence samples have different lengths.
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return Tensor._wrap(np.stack([t._data for t in batch]))
    if isinstance(elem, (np.ndarray, np.generic)):
        return Tensor._wrap(np.stack([np.asarray(b) for b in batch]))
    if isinstance(elem, bool):
        return Tensor._wrap(np.array(batch, dtype=np.bool_))
    if isinstance(elem, float):
        return Tensor._wrap(np.array(batch, dtype=np.float64))
    if isinstance(elem, int):
        return Tensor._wrap(np.array(batch, dtype=np.int64))
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, Mapping):
        return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch, strict=True)))
    if isinstance(elem, Sequence):
        if any(len(s) != len(elem) for s in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(s)) for s in zip(*batch, strict=True)]
    raise TypeError(
        "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
        f"lists; found {type(elem).__name__}"
    )


def _convert(sample):
    """Unbatched samples: NumPy arrays become tensors, containers are converted inside."""
    if isinstance(sample, np.ndarray):
        return Tensor._wrap(sample)
    if isinstance(sample, Mapping):
        return {k: _convert(v) for k, v in sample.items()}
    if isinstance(sample, tuple) and hasattr(sample, "_fields"):
        return type(sample)(*(_convert(v) for v in sample))
    if isinstance(sample, (list, tuple)):
        return (
            [_convert(v) for v in sample]
            if isinstance(sample, list)
            else tuple(_convert(v) for v in sample)
        )
    return sample
