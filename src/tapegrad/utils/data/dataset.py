"""Datasets, as ``torch.utils.data.dataset``: map-style and iterable datasets, subsets,
concatenation, and ``random_split``."""

from __future__ import annotations

import bisect
import math

import numpy as np

from ...creation import randperm
from ...tensor import Tensor

__all__ = [
    "Dataset",
    "IterableDataset",
    "TensorDataset",
    "Subset",
    "ConcatDataset",
    "ChainDataset",
    "StackDataset",
    "random_split",
]


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__(index)`` and ``__len__()``."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read as a stream: subclasses define ``__iter__``. A DataLoader with workers
    runs one copy per worker; shard it with ``get_worker_info()`` (as in torch)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __add__(self, other):
        return ChainDataset([self, other])


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


class ConcatDataset(Dataset):
    """The samples of several map-style datasets, one after the other.

    >>> import tapegrad as tg
    >>> ds = tg.utils.data.ConcatDataset([range(3), range(10, 12)])
    >>> len(ds), ds[3], ds[-1], ds.cumulative_sizes
    (5, 10, 11, [3, 5])
    """

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]).tolist())

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        if idx >= len(self):
            raise IndexError(f"index {idx} is out of range for a dataset of length {len(self)}")
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Several iterable datasets read one after the other."""

    def __init__(self, datasets):
        self.datasets = list(datasets)

    def __iter__(self):
        for d in self.datasets:
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


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
    order = randperm(n, generator=generator).tolist()
    parts, offset = [], 0
    for length in lengths:
        parts.append(Subset(dataset, order[offset : offset + length]))
        offset += length
    return parts


class StackDataset(Dataset):
    """Datasets side by side: item ``i`` is ``(d1[i], d2[i], ...)`` for positional datasets
    or ``{"name": d[i], ...}`` for keyword ones, as ``torch.utils.data.StackDataset``.

    >>> import tapegrad as tg
    >>> s = StackDataset(image=[10, 11], label=[0, 1])
    >>> len(s), s[1]
    (2, {'image': 11, 'label': 1})

    Raises:
        ValueError: with both positional and keyword datasets, with none, or when their
            lengths differ.
    """

    def __init__(self, *args, **kwargs):
        if args:
            if kwargs:
                raise ValueError(
                    "Supported either ``tuple``- (via ``args``) or"
                    "``dict``- (via ``kwargs``) like input/output, but both types are given."
                )
            datasets = args
        elif kwargs:
            datasets = kwargs
        else:
            raise ValueError("At least one dataset should be passed")
        parts = list(datasets.values()) if isinstance(datasets, dict) else list(datasets)
        self._length = len(parts[0])
        if any(self._length != len(d) for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = datasets

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list):
        """A batch of items, using each dataset's own ``__getitems__`` where it has one."""
        named = isinstance(self.datasets, dict)
        items = self.datasets.items() if named else enumerate(self.datasets)
        columns = {}
        for key, dataset in items:
            if callable(getattr(dataset, "__getitems__", None)):
                column = dataset.__getitems__(indices)
                if len(column) != len(indices):
                    raise ValueError(
                        "Nested dataset's output size mismatch."
                        f" Expected {len(indices)}, got {len(column)}"
                    )
            else:
                column = [dataset[i] for i in indices]
            columns[key] = column
        rows = range(len(indices))
        if named:
            return [{k: c[r] for k, c in columns.items()} for r in rows]
        return [tuple(c[r] for c in columns.values()) for r in rows]

    def __len__(self) -> int:
        return self._length
