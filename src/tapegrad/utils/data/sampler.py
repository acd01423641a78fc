"""Samplers, as ``torch.utils.data.sampler``: the order in which a DataLoader reads indices.

Every sampler is consumed lazily: ``RandomSampler(ds, replacement=True,
num_samples=10**10)`` draws its indices 32 at a time and ``BatchSampler`` yields a
batch as soon as it has ``batch_size`` of them, so the first batch of an endless
sampler arrives at once.
"""

from __future__ import annotations

import numpy as np

from ...creation import Generator, default_generator, randint, randperm
from ...sampling import multinomial
from ...tensor import Tensor

__all__ = [
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "BatchSampler",
]


class Sampler:
    """Base class: subclasses define ``__iter__`` (indices) and usually ``__len__``."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


def _positive_int(value, name):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value}")


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Random indices into ``data_source``: a new permutation per pass (``replacement=False``;
    ``num_samples`` over the length chains several permutations), or independent draws.

    Args:
        data_source: the dataset (only its length is used).
        replacement: draw with replacement.
        num_samples: how many indices per iteration (default: the length).
        generator: a ``tg.Generator``; by default each iteration seeds a fresh one from
            the default generator, as torch does, so ``tg.manual_seed`` fixes the order.

    Raises:
        TypeError: if ``replacement`` is not a bool.
        ValueError: if ``num_samples`` is not a positive integer.

    >>> import tapegrad as tg
    >>> first = next(iter(tg.utils.data.RandomSampler(range(5), True, num_samples=10**10)))
    >>> 0 <= first < 5
    True
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        _positive_int(self.num_samples, "num_samples")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __len__(self) -> int:
        return self.num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            seed = int(default_generator.numpy.integers(0, 2**63))
            generator = Generator().manual_seed(seed)
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from randint(0, n, (32,), generator=generator).tolist()
            yield from randint(0, n, (self.num_samples % 32,), generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from randperm(n, generator=generator).tolist()
            yield from randperm(n, generator=generator).tolist()[: self.num_samples % n]


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order (a new one per pass)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices in ``[0, len(weights))`` drawn with probabilities proportional
    to ``weights`` (with replacement by default)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        _positive_int(num_samples, "num_samples")
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        w = np.asarray(weights._data if isinstance(weights, Tensor) else weights, np.float64)
        if w.ndim != 1:
            raise ValueError(
                f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}"
            )
        self.weights = Tensor._wrap(w)
        self.num_samples = int(num_samples)
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        drawn = multinomial(self.weights, self.num_samples, self.replacement,
                            generator=self.generator)  # fmt: skip
        yield from drawn.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size`` (lazily).

    >>> import tapegrad as tg
    >>> list(tg.utils.data.BatchSampler(range(5), 2, drop_last=False))
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler, batch_size, drop_last):
        _positive_int(batch_size, "batch_size")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = int(batch_size)
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return -(-len(self.sampler) // self.batch_size)
