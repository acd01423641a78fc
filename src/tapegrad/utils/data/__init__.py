"""``tapegrad.utils.data``, as ``torch.utils.data``: datasets, samplers, the DataLoader.

Submodules as torch's: ``dataset``, ``sampler``, ``dataloader``, ``distributed``.
"""

from . import dataloader, dataset, distributed, sampler
from ._collate import default_collate, default_convert
from ._worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [n for n in dir() if not n.startswith("_")]
