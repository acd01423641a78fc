"""``DistributedSampler``, as ``torch.utils.data.distributed``: each of ``num_replicas``
processes reads its own 1/num_replicas share of the dataset."""

from __future__ import annotations

import math

from ...creation import Generator, randperm
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Indices ``rank, rank + num_replicas, ...`` of a (shuffled, padded) order, as torch's.

    Without ``drop_last`` the order is padded by repeating its start so every replica
    gets ``ceil(len / num_replicas)`` indices; with it, the tail is dropped so every
    replica gets ``floor`` of that. With ``shuffle`` the order is a permutation drawn from
    a generator seeded with ``seed + epoch``: the same on every replica, new after
    :meth:`set_epoch`. (The permutation comes from tapegrad's generator, so it differs
    from torch's for the same seed; the unshuffled split is identical.)

    Args:
        dataset: the map-style dataset (its length is used).
        num_replicas, rank: the number of processes and this one's index; taken from
            ``tapegrad.distributed`` when omitted (which needs an initialised process group).
        shuffle, seed, drop_last: as above.

    Raises:
        RuntimeError: if ``num_replicas``/``rank`` are omitted and no process group is
            initialised.
        ValueError: if ``rank`` is not in ``[0, num_replicas - 1]``.

    >>> from tapegrad.utils.data.distributed import DistributedSampler
    >>> [list(DistributedSampler(range(5), 2, r, shuffle=False)) for r in (0, 1)]
    [[0, 2, 4], [1, 3, 0]]
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):  # fmt: skip
        if num_replicas is None or rank is None:
            from ... import distributed as dist  # noqa: PLC0415 - optional, heavier layer

            if not (dist.is_available() and dist.is_initialized()):
                raise RuntimeError(
                    "DistributedSampler: num_replicas and rank were not given and no process "
                    "group is initialised (tapegrad.distributed.is_initialized() is False). "
                    "Pass num_replicas= and rank= explicitly, or call "
                    "tapegrad.distributed.init_process_group() first."
                )
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use a new shuffle for epoch ``epoch`` (call it before each epoch, as in torch)."""
        self.epoch = epoch
