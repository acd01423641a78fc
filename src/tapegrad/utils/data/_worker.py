"""DataLoader worker processes: what runs inside a worker, and what crosses the queues.

Note [DataLoader workers]
With ``num_workers > 0`` the loader starts that many processes (the platform's default
start method, ``fork`` on Linux, as torch; ``multiprocessing_context=`` picks another).
Map-style: batch ``k``'s indices go to worker ``k % num_workers``; each worker fetches
and collates its batches in order and returns them on its own queue, so the main
process reads batch ``k`` from queue ``k % num_workers`` and batches arrive in sampler
order. At most ``prefetch_factor * num_workers`` batches are requested ahead, so an
endless sampler is read lazily. Iterable-style: each worker iterates its own copy of
the dataset (shard it with :func:`get_worker_info`) into a bounded queue and the main
process takes batches from the workers in turn until all are exhausted.
Tensors cross the queues as their NumPy arrays (``_Shipped``) and are re-wrapped on
arrival. Worker ``i`` is seeded with ``base_seed + i`` (``tapegrad.manual_seed`` and
Python's ``random``), the base seed drawn per iteration from the loader's generator.
"""

from __future__ import annotations

import itertools
import random
import traceback
from collections.abc import Mapping

from ...random import manual_seed
from ...tensor import Tensor

__all__ = ["WorkerInfo", "get_worker_info"]

_INFO = None


class WorkerInfo:
    """What :func:`get_worker_info` returns inside a worker: ``id``, ``num_workers``,
    ``seed`` and ``dataset`` (this worker's copy)."""

    def __init__(self, id, num_workers, seed, dataset):  # noqa: A002 - torch's name
        self.id = id
        self.num_workers = num_workers
        self.seed = seed
        self.dataset = dataset

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


def get_worker_info():
    """The :class:`WorkerInfo` of the current DataLoader worker; None in the main process."""
    return _INFO


class _Shipped:
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __reduce__(self):
        return (_Shipped, (self.array,))


DONE = "__tapegrad_worker_done__"


def pack(data):
    """Replace the Tensors in ``data`` (nested dicts, lists, tuples) by their arrays."""
    if isinstance(data, Tensor):
        return _Shipped(data._data)
    if isinstance(data, Mapping):
        return type(data)((k, pack(v)) for k, v in data.items())
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(pack(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(pack(v) for v in data)
    return data


def unpack(data):
    if isinstance(data, _Shipped):
        return Tensor._wrap(data.array)
    if isinstance(data, Mapping):
        return type(data)((k, unpack(v)) for k, v in data.items())
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(unpack(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(unpack(v) for v in data)
    return data


class WorkerError:
    """An exception raised in a worker, re-raised in the main process (as torch does)."""

    def __init__(self, worker_id, exc):
        self.exc_type = type(exc)
        self.message = (
            f"Caught {type(exc).__name__} in DataLoader worker process {worker_id}.\n"
            f"Original {traceback.format_exc()}"
        )

    def reraise(self):
        try:
            err = self.exc_type(self.message)
        except Exception:  # noqa: BLE001 - an exception type with another signature
            err = RuntimeError(self.message)
        raise err


def worker_loop(spec, worker_id, seed, index_queue, result_queue):
    """The body of worker ``worker_id`` (``spec``: the loader's settings, a dict)."""
    global _INFO
    dataset = spec["dataset"]
    _INFO = WorkerInfo(worker_id, spec["num_workers"], seed, dataset)
    manual_seed(seed)
    random.seed(seed)
    try:
        if spec["worker_init_fn"] is not None:
            spec["worker_init_fn"](worker_id)
    except Exception as exc:  # noqa: BLE001 - reported to the main process
        result_queue.put((-1, WorkerError(worker_id, exc)))
        return
    collate = spec["collate_fn"]
    if spec["iterable"]:
        _iterable_loop(dataset, spec, collate, worker_id, result_queue)
        return
    while True:
        task = index_queue.get()
        if task is None:
            return
        k, idx = task
        try:
            if spec["auto_collation"]:
                data = collate([dataset[i] for i in idx])
            else:
                data = collate(dataset[idx])
            result_queue.put((k, pack(data)))
        except Exception as exc:  # noqa: BLE001 - reported to the main process
            result_queue.put((k, WorkerError(worker_id, exc)))


def _iterable_loop(dataset, spec, collate, worker_id, result_queue):
    k = 0
    try:
        it = iter(dataset)
        size = spec["batch_size"]
        while True:
            if size is None:
                sample = next(it, DONE)
                if sample is DONE:
                    break
                data = collate(sample)
            else:
                batch = list(itertools.islice(it, size))
                if not batch or (spec["drop_last"] and len(batch) < size):
                    break
                data = collate(batch)
            result_queue.put((k, pack(data)))
            k += 1
    except Exception as exc:  # noqa: BLE001 - reported to the main process
        result_queue.put((k, WorkerError(worker_id, exc)))
        return
    result_queue.put((k, DONE))
