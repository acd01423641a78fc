"""Reuse the big output arrays of a kernel that runs once per call (per-sample gradients).

Note [Reused big buffers]
glibc's malloc maps every block above its mmap threshold (32 MiB once tuned, Note [Array
memory and page faults] in _malloc.py, and no higher: glibc refuses more) with a fresh
``mmap`` and unmaps it on free, so an array that large is faulted in, zero-filled by the
kernel, on every call that allocates it. The per-sample weight gradients of a 256 x 256
layer at batch 128 (float32) are 32 MiB exactly, one byte too many: each
``vmap(grad(loss))`` call of the benchmarks' MLP at batch 128 spent ~3 ms of system
time on those faults, for a kernel of ~1.3 ms (a 32 MiB ``np.empty`` + ``fill``: 5.6 ms
fresh, 1.3 ms into a kept array; thread CPU time, 2-core machine at load ~8).

:func:`empty` keeps the arrays above :data:`MIN_BYTES` that it handed out (:data:`SLOTS`
per shape and dtype, so that ``g = per_sample(...)`` in a loop, which still holds the
previous result while the next is computed, finds one free; at most :data:`MAX_BYTES` in
all, the least recently used shape dropped first) and hands one out again once nothing
but the pool holds it: CPython's reference count says so exactly (a Tensor,
a view, a ``torch.from_numpy`` alias, a memoryview: each holds a reference to the array
or to its base, so a buffer still seen anywhere is never reused; a weak reference, which
would otherwise see the next call's values, keeps it out of reuse too). The caller must write
every element (it is ``np.empty``). Skipped (a plain ``np.empty``) where the reference
count cannot be trusted: interpreters other than CPython and CPython without its GIL.
The cost: up to MAX_BYTES stay allocated after the last call, as malloc's own trim
threshold keeps 64 MiB.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from weakref import getweakrefcount

import numpy as np

from . import _malloc

__all__ = ["empty", "MIN_BYTES", "MAX_BYTES", "SLOTS", "clear"]

# Smaller arrays come back from malloc's heap unfaulted; glibc maps a request of exactly
# the threshold too (its chunk header makes it larger), so the pool starts a little below.
MIN_BYTES = _malloc.MMAP_THRESHOLD - (1 << 20)
MAX_BYTES = 128 << 20
SLOTS = 2

_POOL: OrderedDict = OrderedDict()  # (shape, dtype) -> [arrays], least recently used first
_LOCK = threading.Lock()
# Python < 3.13 has no free-threaded build (and no sys._is_gil_enabled).
_TRUSTED = sys.implementation.name == "cpython" and getattr(sys, "_is_gil_enabled", lambda: True)()


def _free_count() -> int:
    """The reference count of a pooled array that nothing else holds, as :func:`empty`
    reads it (the pool's list, the loop's name, getrefcount's argument)."""
    slots = [np.empty(1)]
    for a in slots:
        return sys.getrefcount(a)
    raise AssertionError


_FREE = _free_count()


def empty(shape: tuple, dtype) -> np.ndarray:
    """``np.empty(shape, dtype)``, reusing a kept array of that shape and dtype when
    nothing else holds it (Note [Reused big buffers])."""
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for s in shape:
        nbytes *= s
    if nbytes < MIN_BYTES or nbytes * SLOTS > MAX_BYTES or not _TRUSTED:
        return np.empty(shape, dtype)
    key = (tuple(shape), dtype)
    with _LOCK:
        slots = _POOL.get(key)
        if slots is None:
            slots = _POOL[key] = []
        else:
            _POOL.move_to_end(key)
            for a in slots:
                if sys.getrefcount(a) == _FREE and not getweakrefcount(a):
                    return a
            if len(slots) >= SLOTS:  # every slot still held elsewhere: the oldest leaves
                del slots[0]
        new = np.empty(shape, dtype)
        slots.append(new)
        total = sum(v.nbytes for vs in _POOL.values() for v in vs)
        while total > MAX_BYTES:
            _, old = _POOL.popitem(last=False)
            total -= sum(v.nbytes for v in old)
        return new


def clear() -> None:
    """Drop every kept array (their memory goes back when nothing else holds them)."""
    with _LOCK:
        _POOL.clear()
