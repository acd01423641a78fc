"""The DataLoader, as ``torch.utils.data.dataloader``: batches from a dataset, in this process
or in worker processes (Note [DataLoader workers] in _worker.py)."""

from __future__ import annotations

import collections
import itertools
import multiprocessing
import queue

import numpy as np

from ...creation import _rng
from ...tensor import Tensor
from . import _worker
from ._collate import default_collate, default_convert
from ._worker import get_worker_info
from .dataset import IterableDataset, Subset, TensorDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]


class DataLoader:
    """Iterate over a dataset in batches, as ``torch.utils.data.DataLoader``.

    Args:
        dataset: a map-style dataset (``__getitem__``, ``__len__``) or an
            :class:`IterableDataset`.
        batch_size: samples per batch; None yields single samples (not collated).
        shuffle: a new random order every iteration (a :class:`RandomSampler`).
        sampler: an iterable of indices giving the order (instead of ``shuffle``).
        batch_sampler: an iterable of index lists, one per batch (instead of
            ``batch_size``, ``shuffle``, ``sampler`` and ``drop_last``).
        num_workers: worker processes that load batches (0: in this process).
        collate_fn: turns a list of samples into a batch (default: :func:`default_collate`).
        pin_memory: accepted; ignored (no GPU memory to pin for).
        drop_last: drop the last batch when it is smaller than ``batch_size``.
        timeout: seconds to wait for a worker's batch (0: forever).
        worker_init_fn: called as ``worker_init_fn(worker_id)`` in each worker.
        multiprocessing_context: a start method name or context for the workers.
        generator: ``tg.Generator`` for shuffling and worker seeds (default: the default
            generator), so ``tg.manual_seed`` or a seeded generator makes runs reproducible.
        prefetch_factor: batches requested ahead per worker (default 2 with workers).
        persistent_workers: accepted; workers are started for every iteration.

    Samplers are read lazily: the first batch of an endless sampler arrives at once.
    A :class:`TensorDataset` (or a :class:`Subset` of one) with the default collate is
    batched by indexing its arrays with the batch's indices at once, not sample by sample.

    Raises:
        ValueError: for incompatible options, with torch's messages.

    >>> import tapegrad as tg
    >>> ds = tg.utils.data.TensorDataset(tg.arange(5))
    >>> [batch for (batch,) in tg.utils.data.DataLoader(ds, batch_size=2)]
    [tensor([0, 1]), tensor([2, 3]), tensor([4])]
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):  # fmt: skip
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; use num_workers=0 to disable "
                "multiprocessing."
            )
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing.let "
                "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
            )
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler),
                                ("batch_sampler", batch_sampler)):  # fmt: skip
                if value not in (None, False):
                    raise ValueError(
                        f"DataLoader with IterableDataset: expected unspecified {name} "
                        f"option, but got {name}={value}"
                    )
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    "sampler, and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive "
                "with drop_last"
            )
        if sampler is None and not self._iterable:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))  # fmt: skip
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        elif batch_size is not None and self._iterable:
            BatchSampler([], batch_size, drop_last)  # validates batch_size as torch does
        self.dataset = dataset
        self.batch_size = batch_size
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.collate_fn = collate_fn
        self.pin_memory = pin_memory
        self.drop_last = drop_last
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.prefetch_factor = 2 if prefetch_factor is None and num_workers else prefetch_factor
        self.persistent_workers = persistent_workers

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None or (self._iterable and self.batch_size is not None)

    @property
    def _index_sampler(self):
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def _collate(self):
        if self.collate_fn is not None:
            return self.collate_fn
        return default_collate if self._auto_collation else default_convert

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self._index_sampler)

    def __iter__(self):
        if self.num_workers > 0:
            return self._multi_process()
        return self._single_process()

    # -- in this process ---------------------------------------------------------------------

    def _single_process(self):
        collate = self._collate()
        if self._iterable:
            it = iter(self.dataset)
            if self.batch_size is None:
                for sample in it:
                    yield collate(sample)
                return
            while batch := list(itertools.islice(it, self.batch_size)):
                if self.drop_last and len(batch) < self.batch_size:
                    return
                yield collate(batch)
            return
        if not self._auto_collation:
            for idx in self.sampler:
                yield collate(self.dataset[idx])
            return
        fast = _index_arrays(self.dataset) if self.collate_fn is None else None
        for idx in self.batch_sampler:
            if fast is not None:
                arrays, base = fast
                rows = np.asarray(idx, dtype=np.int64)
                if base is not None:
                    rows = base[rows]
                yield [Tensor._wrap(a[rows]) for a in arrays]
            else:
                yield collate([self.dataset[i] for i in idx])

    # -- worker processes (Note [DataLoader workers]) ------------------------------------------

    def _multi_process(self):
        ctx = self.multiprocessing_context
        if ctx is None or isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        n = self.num_workers
        spec = {
            "dataset": self.dataset,
            "num_workers": n,
            "worker_init_fn": self.worker_init_fn,
            "collate_fn": self._collate(),
            "auto_collation": self._auto_collation,
            "iterable": self._iterable,
            "batch_size": self.batch_size,
            "drop_last": self.drop_last,
        }
        base_seed = int(_rng(self.generator).integers(0, 2**62))
        index_queues = [ctx.Queue() for _ in range(n)]
        bound = self.prefetch_factor if self._iterable else 0
        result_queues = [ctx.Queue(maxsize=bound) for _ in range(n)]
        workers = [
            ctx.Process(
                target=_worker.worker_loop,
                args=(spec, i, base_seed + i, index_queues[i], result_queues[i]),
                daemon=True,
            )
            for i in range(n)
        ]
        for w in workers:
            w.start()
        try:
            if self._iterable:
                yield from self._read_iterable(workers, result_queues)
            else:
                yield from self._read_map(workers, index_queues, result_queues)
        finally:
            _shutdown(workers, index_queues, result_queues, self._iterable)

    def _read_map(self, workers, index_queues, result_queues):
        n = len(workers)
        tasks = iter(self._index_sampler)
        sent = 0
        for idx in itertools.islice(tasks, self.prefetch_factor * n):
            index_queues[sent % n].put((sent, idx))
            sent += 1
        for k in itertools.count():
            if k == sent:
                return
            w = k % n
            got, data = self._get(result_queues[w], workers[w], w)
            for idx in itertools.islice(tasks, 1):
                index_queues[sent % n].put((sent, idx))
                sent += 1
            if isinstance(data, _worker.WorkerError):
                data.reraise()
            yield _worker.unpack(data)

    def _read_iterable(self, workers, result_queues):
        turn = collections.deque(range(len(workers)))
        while turn:
            w = turn[0]
            _, data = self._get(result_queues[w], workers[w], w)
            if isinstance(data, _worker.WorkerError):
                data.reraise()
            if isinstance(data, str) and data == _worker.DONE:
                turn.popleft()
                continue
            turn.rotate(-1)
            yield _worker.unpack(data)

    def _get(self, q, proc, worker_id):
        waited = 0.0
        while True:
            try:
                got = q.get(timeout=1.0)
            except queue.Empty:
                waited += 1.0
                if not proc.is_alive():
                    raise RuntimeError(
                        f"DataLoader worker {worker_id} (pid {proc.pid}) exited unexpectedly "
                        f"with exit code {proc.exitcode}"
                    ) from None
                if self.timeout and waited >= self.timeout:
                    raise RuntimeError(
                        f"DataLoader timed out after {self.timeout} seconds"
                    ) from None
                continue
            if got[0] == -1 and isinstance(got[1], _worker.WorkerError):
                got[1].reraise()  # worker_init_fn failed
            return got


def _shutdown(workers, index_queues, result_queues, iterable):
    if not iterable:
        for q in index_queues:
            q.put(None)
    for w in workers:
        if iterable and w.is_alive():
            w.terminate()
        w.join(timeout=5.0)
        if w.is_alive():
            w.terminate()
            w.join(timeout=1.0)
    for q in index_queues + result_queues:
        q.cancel_join_thread()
        q.close()


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
