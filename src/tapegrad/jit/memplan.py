"""Memory planning for the replay: liveness, in-place fusion, copy elision, buffers.

Note [Replay memory]
The replay is a flat list of array calls, so the lifetime of every array is known
before it runs. Arrays are grouped by *storage*: a slot that views another slot
(``x.T``, ``x.reshape``, ``x[1:]``) shares its root's storage, and a storage is live
from the op that allocates it to the last op that uses any slot viewing it.
Only storage that the replay itself allocates is ever reused: arguments, state
arrays (``p._data``, optimizer state) and constants never are, nor is any array
whose memory overlaps theirs. Three rewrites follow:

* **In-place fusion.** ``b = f(a, ...)`` for an elementwise ufunc, where ``a`` has
  exactly the layout (shape, strides, dtype) of ``b`` and ``a``'s storage dies at
  this op, becomes ``f(a, ..., out=a)``: a chain ``exp -> * 2 -> + 1`` runs on one
  array. Results are the same bits (NumPy computes each element from the inputs
  alone; it buffers overlapping operands itself).
* **Copy elision.** ``b = a.copy()`` (or a same-dtype ``astype``) of an array whose
  storage dies at this op, with the same layout, becomes ``b = a``: tapegrad copies
  gradients before storing them in ``.grad``, and those copies are often of
  temporaries.
* **Program buffers.** The result of a ufunc call that never leaves the replay
  (not returned, not stored in state, not viewed by something that is) and is at
  least :data:`BUFFER_MIN_BYTES` large is written with ``out=`` into a buffer that
  the program allocates once and reuses on every replay; two values share a
  buffer only when their lifetimes do not overlap. Measured on one core: below
  glibc's largest mmap threshold (32 MiB) NumPy's allocation is served from the
  heap and costs nothing measurable (``np.multiply(a, 2.0)`` with and without
  ``out=``: same time from 40 B to 31 MiB), so smaller intermediates keep
  allocating; above it each fresh array is a new mmap whose pages fault in, and a
  reused buffer halves the time of a cheap ufunc (33 MiB: 3.0 vs 1.25 ms).
  Fusion pays at any size from about 0.5 MiB (the chain stays in cache): a
  replayed ``((x*2).exp()+1).tanh()*x`` on 16 MiB arrays takes 3.9 ms instead of
  8.0 ms; on 48 MiB arrays 16 ms, and 13 ms with the buffer (31 ms unplanned).

Python's ``a[key] += b`` is three calls: ``v = a[key]`` (a view, for a basic key),
``np.add(v, b, out=v)``, and ``a[key] = v``, which copies ``v`` onto itself. That last
write is dropped (:func:`drop_self_writes`).

A value stored in a program buffer never escapes, so an output or a state array
can never be overwritten by a later replay; a buffer set is taken from a pool at
the start of a replay and put back at the end, so concurrent or re-entrant replays
of one program use different buffers.
"""

from __future__ import annotations

import numpy as np

from .recorder import Ref, refs_in

__all__ = ["MemoryPlan", "plan_memory", "drop_self_writes", "BUFFER_MIN_BYTES"]

# Intermediates at least this large get a program-owned buffer (Note [Replay memory]).
BUFFER_MIN_BYTES = 32 << 20

_byte_bounds = np.lib.array_utils.byte_bounds


class MemoryPlan:
    """Per-op rewrites: ``out[n]`` (the ``out=`` expression of op n), ``alias[n]`` (op n's
    copy is elided: its result is that slot) and ``buffers`` (``(shape, dtype)`` each)."""

    __slots__ = ("out", "alias", "buffers")

    def __init__(self):
        self.out = {}
        self.alias = {}
        self.buffers = []


class _Storage:
    """Memory allocated by the replay: a fresh array, or program buffer ``buffer``."""

    __slots__ = ("buffer",)

    def __init__(self, buffer=None):
        self.buffer = buffer


def _layout(a):
    return a.shape, a.strides, a.dtype


def _c_strides(shape, itemsize):
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def plan_memory(rec, ops, escaping) -> MemoryPlan:
    """Plan the rewrites of Note [Replay memory] for ``ops`` (the kept ops, in order).

    Args:
        rec: the Recorder (slots, roots and the recorded arrays, whose layouts the
            replay reproduces).
        ops: the ops of the replay.
        escaping: slots that outlive the replay (outputs, arrays stored in state).
    """
    roots, arrays = rec.roots, rec.objects
    last = {}  # root slot -> index of the last op that uses any slot viewing it
    for n, op in enumerate(ops):
        for i in refs_in((op.args, op.kwargs, op.result), []):
            last[roots[i]] = n
    escapes = {roots[i] for i in escaping}
    for i in escapes:
        last[i] = len(ops)  # read after the replay returns
    outside = [
        _byte_bounds(arrays[i])
        for i, origin in enumerate(rec.slots)
        if origin[0] != "op" and arrays[i].size
    ]

    def owned(i):  # memory that only the replay's own temporaries can reach
        if not arrays[i].size:
            return False
        lo, hi = _byte_bounds(arrays[i])
        return all(hi <= a or b <= lo for a, b in outside)

    plan = MemoryPlan()
    storage = {}  # root slot -> _Storage
    busy = []  # per buffer: index of the last op that uses its current value

    def reusable(a, r, n):
        """Whether op n may put its result ``r`` in ``a``'s storage."""
        store = storage.get(roots[a])
        return (
            store is not None
            and last[roots[a]] == n
            and arrays[a].flags.writeable
            and _layout(arrays[a]) == _layout(arrays[r])
            and (store.buffer is None or r not in escapes)
        )

    for n, op in enumerate(ops):
        r = _new_result(op, roots)
        if r is None:
            continue
        if _elementwise(op):
            a = next(
                (a.i for a in op.args[: op.fn.nin] if type(a) is Ref and reusable(a.i, r, n)), None
            )
            if a is not None:
                plan.out[n] = f"s{a}"
                storage[r] = _take(storage[roots[a]], busy, last[r])
                continue
        elif op.kind == "method" and op.fn in ("copy", "astype"):
            a = op.args[0].i
            if reusable(a, r, n):
                plan.alias[n] = a
                storage[r] = _take(storage[roots[a]], busy, last[r])
                continue
        if not owned(r):
            continue
        arr = arrays[r]
        if (
            _ufunc_call(op)
            and r not in escapes
            and arr.nbytes >= BUFFER_MIN_BYTES
            and arr.strides == _c_strides(arr.shape, arr.itemsize)
        ):
            k = next(
                (
                    k
                    for k, (shape, dtype) in enumerate(plan.buffers)
                    if busy[k] < n and shape == arr.shape and dtype == arr.dtype
                ),
                None,
            )
            if k is None:
                k = len(plan.buffers)
                plan.buffers.append((arr.shape, arr.dtype))
                busy.append(-1)
            plan.out[n] = f"_b{k}"
            storage[r] = _take(_Storage(k), busy, last[r])
        else:
            storage[r] = _Storage()
    return plan


def _take(store, busy, until):
    if store.buffer is not None:
        busy[store.buffer] = until
    return store


def _new_result(op, roots):
    """The slot of op's single result when the op creates it and it views nothing else."""
    res = op.result
    if type(res) is not Ref or res.i not in op.defines or roots[res.i] != res.i:
        return None
    return None if op.wrap_scalar else res.i


def _ufunc_call(op):
    """A ufunc called with its inputs only (no out=, where=, order=...), one result."""
    fn = op.kind == "call" and op.fn
    return (
        isinstance(fn, np.ufunc)
        and fn.nout == 1
        and len(op.args) == fn.nin
        and all(k == "dtype" for k in op.kwargs)
    )


def _elementwise(op):
    return _ufunc_call(op) and op.fn.signature is None


def drop_self_writes(rec, ops):
    """``ops`` without each ``a[key] = v`` where ``v`` is the view ``a[key]`` itself."""
    views = {}  # slot -> (target slot, key) of the basic-indexing view that made it
    kept = []
    for op in ops:
        if op.kind == "method" and op.fn in ("__getitem__", "__setitem__"):
            target, key = op.args[0].i, op.args[1]
            if op.fn == "__setitem__":
                value = op.args[2]
                if type(value) is Ref and views.get(value.i) == (target, key):
                    continue
            elif (
                _basic_key(key)
                and type(op.result) is Ref
                and op.result.i in op.defines
                and rec.roots[op.result.i] == rec.roots[target]
            ):
                views[op.result.i] = (target, key)
        kept.append(op)
    return kept


def _basic_key(key):
    """A key of ints, slices of ints, None and Ellipsis: indexing with it gives a view."""
    parts = key if type(key) is tuple else (key,)
    for k in parts:
        if type(k) is slice:
            if not all(v is None or type(v) is int for v in (k.start, k.stop, k.step)):
                return False
        elif not (k is None or k is Ellipsis or type(k) is int):
            return False
    return True
