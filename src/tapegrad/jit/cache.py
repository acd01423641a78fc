"""``tg.jit.cache``: record a function's array program once per signature, replay it after.

Note [Stable recordings]
A recorded call can depend on things no tracer sees: a Python number that
changes every call, optimizer state created lazily on the first step, an array
drawn from a random source outside tapegrad. So a program is used only once two
consecutive recordings of a signature agree exactly: same code, same constants
(arrays compared by value), same objects. Until then each call records again (and
still returns eager results); after :data:`MAX_RECORDINGS` recordings that never
agree, the signature runs eagerly, with a warning saying why.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict, namedtuple

import numpy as np

from .. import _blas_threads, _fpquiet, _parallel, _warn
from ..tensor import Tensor
from .program import MISS
from .record import OutArray, OutTensor, record
from .signature import key_of

__all__ = ["cache", "CachedFunction", "CacheInfo", "ReplayMismatchError"]

MAX_RECORDINGS = 4

CacheInfo = namedtuple("CacheInfo", ["hits", "misses", "maxsize", "currsize"])


class ReplayMismatchError(RuntimeError):
    """Raised by ``verify_every`` when a replay differs from the eager run."""


class _Entry:
    __slots__ = ("program", "last", "attempts", "eager", "template", "arg_grads")

    def __init__(self):
        self.program = None  # the committed Program
        self.last = None  # the previous recording's Program (Note [Stable recordings])
        self.attempts = 0
        self.eager = None  # why this signature runs eagerly, once decided
        self.template = None
        self.arg_grads = ()  # Note [Gradients of arguments] in record.py


class CachedFunction:
    """The callable returned by :func:`cache` (see there)."""

    # The state walk (jit/state.py) does not enter cached functions: their hit and miss
    # counters change on every call and are no part of any step's state.
    _tg_jit_opaque = True

    def __init__(self, fn, maxsize=1024, verify_every=None, modules=()):
        if maxsize is not None and maxsize < 1:
            raise ValueError(f"cache: maxsize must be at least 1 or None, got {maxsize}")
        if verify_every is not None and verify_every < 1:
            raise ValueError(f"cache: verify_every must be at least 1, got {verify_every}")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.maxsize = maxsize
        self.verify_every = verify_every
        self._roots = [(f"modules[{i}]", m) for i, m in enumerate(modules)]
        self._entries = OrderedDict()
        self._hits = self._misses = self._replays = 0
        self._name = getattr(fn, "__qualname__", repr(fn))
        self._lock = threading.RLock()

    def __call__(self, *args, **kwargs):
        # One call at a time per cached function: a program's buffers and the entry
        # table are shared by all its callers (Note [Recording and threads] in record.py).
        with self._lock:
            return self._call(args, kwargs)

    def _call(self, args, kwargs):
        key, leaves = key_of(args, kwargs)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry()
            if self.maxsize is not None and len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(key)
        program = entry.program
        if program is not None:
            self._replays += 1
            arrays = [leaf._data if type(leaf) is Tensor else leaf for leaf in leaves]
            if self.verify_every and self._replays % self.verify_every == 0:
                result = self._verify(entry, arrays, args, kwargs, leaves)
            else:
                token = _fpquiet.enter()  # Note [No floating-point warnings]
                held = _parallel.STEP[0] and _blas_threads.hold()  # Note [One pool per step]
                try:
                    result = program.run(*arrays)
                finally:
                    _fpquiet.leave(token)
                    if held:
                        _blas_threads.release()
                if result is not MISS:
                    for j, k in entry.arg_grads:
                        leaves[j]._grad = Tensor._wrap(result[k])
            if result is not MISS:
                self._hits += 1
                return _build(entry.template, result)
            entry.program = entry.last = None  # a guard failed: record again
            entry.attempts = 0
        self._misses += 1
        if entry.eager is not None:
            return self.fn(*args, **kwargs)
        return self._record(entry, args, kwargs, leaves)

    def _record(self, entry, args, kwargs, leaves):
        rec = record(self.fn, args, kwargs, leaves, self._roots, self._name)
        entry.attempts += 1
        if rec.refusals:
            self._go_eager(entry, rec.refusals[0])
        elif rec.program is None:
            entry.last = None
            if entry.attempts >= MAX_RECORDINGS:
                self._go_eager(entry, f"its recordings never became stable: {rec.problems[0]}")
        elif entry.last is not None and entry.last.same_as(rec.program):
            entry.program, entry.last, entry.attempts = rec.program, None, 0
            entry.template = rec.out_template
            entry.arg_grads = tuple(rec.arg_grads)
        else:
            entry.last = rec.program
            if entry.attempts >= MAX_RECORDINGS:
                self._go_eager(
                    entry,
                    "its recorded program changes from call to call (a "
                    "Python value that changes each call is used in the computation)",
                )
        return rec.result

    def _go_eager(self, entry, why):
        entry.eager = why
        entry.last = None
        _warn.warn(
            f"tapegrad.jit.cache: {self._name} {why}; calls with this signature run eagerly",
            RuntimeWarning,
        )

    # -- verification -----------------------------------------------------------------------

    def _verify(self, entry, arrays, args, kwargs, leaves):
        """Replay, undo it, run eagerly, compare (Note [Stable recordings] for why both run)."""
        program = entry.program
        # A tensor made by the recorded call (a new .grad) is compared through the
        # location that holds it (``p.grad``), which eager rebinds to its own tensor.
        locs = program.read_locs + [
            loc
            for loc in program.assign_locs
            if id(loc.obj) not in program._new
            and not any(loc.same_place(r) for r in program.read_locs)
        ]
        held = [loc.get() for loc in locs]
        snap = [(a, a.copy()) for a in _arrays(held) + arrays]
        rng_states = [g._raw_state() for g in program.generators]
        result = program.run(*arrays)
        if result is MISS:
            return MISS
        replay_out = [np.array(r, copy=True) for r in result]
        replay_state = [_value(loc.get()) for loc in locs]
        replay_state = [None if v is None else v.copy() for v in replay_state]
        for loc, value in zip(locs, held, strict=True):
            loc.set(value)
        for array, saved in snap:
            np.copyto(array, saved)
        for g, state in zip(program.generators, rng_states, strict=True):
            g.set_state(state)
        eager = self.fn(*args, **kwargs)
        eager_out = _flatten(entry.template, eager, [])
        for k, (r, e) in enumerate(zip(replay_out[: len(eager_out)], eager_out, strict=True)):
            _compare(f"output {k}", r, e)
        for j, k in entry.arg_grads:  # the eager run set these .grad itself
            _compare(f"argument {j}.grad", replay_out[k], _value(leaves[j].grad))
        for loc, r in zip(locs, replay_state, strict=True):
            _compare(str(loc), r, _value(loc.get()))
        return tuple(eager_out)

    # -- introspection ----------------------------------------------------------------------

    def cache_info(self) -> CacheInfo:
        """``CacheInfo(hits, misses, maxsize, currsize)``: replays, other calls, entries."""
        return CacheInfo(self._hits, self._misses, self.maxsize, len(self._entries))

    def cache_clear(self) -> None:
        """Drop every recorded program and reset the counters."""
        self._entries.clear()
        self._hits = self._misses = self._replays = 0

    def explain(self, *args, **kwargs) -> str:
        """The replay program recorded for the signature of ``args`` as Python source text.

        Does not call the function.
        """
        key, _ = key_of(args, kwargs)
        entry = self._entries.get(key)
        if entry is None:
            return f"# {self._name}: nothing recorded for this signature yet"
        if entry.eager is not None:
            return f"# {self._name}: runs eagerly for this signature: {entry.eager}"
        if entry.program is None:
            return (
                f"# {self._name}: recording in progress for this signature "
                f"({entry.attempts} recording(s) so far, Note [Stable recordings])"
            )
        p = entry.program
        return f"# {self._name}: {p.n_ops} array ops, {len(p.consts)} constants\n{p.source}"

    def __repr__(self):
        return f"<tapegrad.jit.cache of {self._name}>"


def _arrays(values):
    out = []
    for v in values:
        v = _value(v)
        if v is not None:
            out.append(v)
    return out


def _value(v):
    if isinstance(v, Tensor):
        return v._data
    return v if isinstance(v, np.ndarray) else None


def _compare(what, replayed, eager):
    if replayed is None and eager is None:
        return
    if replayed is None or eager is None:
        raise ReplayMismatchError(
            f"tapegrad.jit.cache verification: {what} is "
            f"{'missing' if replayed is None else 'present'} in the replay "
            "but not in the eager run"
        )
    eager = np.asarray(eager)
    if replayed.shape != eager.shape or not np.allclose(
        replayed, eager, rtol=1e-5, atol=1e-6, equal_nan=True
    ):
        diff = np.abs(replayed.astype(np.float64) - eager.astype(np.float64))
        raise ReplayMismatchError(
            f"tapegrad.jit.cache verification: {what} differs between the replay and the eager "
            f"run (shapes {replayed.shape} vs {eager.shape}, max abs difference "
            f"{float(np.nanmax(diff)) if diff.size else 0.0})"
        )


def _build(template, result):
    t = type(template)
    if t is OutTensor:
        return Tensor._wrap(result[template.k])
    if t is OutArray:
        return result[template.k]
    if t is tuple or t is list:
        return t(_build(v, result) for v in template)
    if t is dict:
        return {k: _build(v, result) for k, v in template.items()}
    return template


def _flatten(template, value, acc):
    t = type(template)
    if t is OutTensor:
        acc.append(value._data)
    elif t is OutArray:
        acc.append(value)
    elif t is tuple or t is list:
        for tv, v in zip(template, value, strict=True):
            _flatten(tv, v, acc)
    elif t is dict:
        for k, tv in template.items():
            _flatten(tv, value[k], acc)
    return acc


def cache(fn=None, *, maxsize=1024, verify_every=None, modules=()):
    """Record ``fn``'s array program once per call signature and replay it on later calls.

    Usable as ``tg.jit.cache(fn)``, ``@tg.jit.cache`` or ``@tg.jit.cache(maxsize=8)``.

    The first calls with a new signature run ``fn`` eagerly while recording every
    NumPy call that tapegrad makes for it (forward, the backward pass, gradient
    accumulation into ``.grad``, optimizer updates done with NumPy on ``p._data`` and
    on state arrays). Once two consecutive recordings agree, later calls with that
    signature replay the recorded calls as one flat generated function on plain
    arrays: no Tensor objects, no graph, no module code.

    Signature: shapes, dtypes, devices and requires_grad of tensor (and array)
    arguments nested in tuples, lists and dicts; hashable non-tensor arguments by
    value (objects by identity); grad mode. Guards, checked before each replay:
    the shapes and dtypes of the state arrays read, and the Python numbers,
    strings and flags (a module's ``training``, an optimizer's ``lr``, list entries)
    and the lengths of the lists and dicts reachable from ``fn``'s closure, the
    globals it names, ``modules`` and the arguments; a changed guard records again
    (an lr scheduler that changes ``lr`` every call makes the step run eagerly).

    State: parameters, gradients and optimizer state reachable that way are read
    from where they live at each replay and updated as the eager call would.
    Random draws (``tg.rand``, ``tg.randn``, dropout) draw fresh numbers from their
    Generator at each replay. A replayed output is a new tensor without a graph.

    Never stale: if ``fn`` reads a tensor value into Python while recording
    (``item()``, ``bool()``, ``float()``, ``tolist()``, ``numpy()``, a comparison used
    in ``if``), or calls backward with ``retain_graph=True`` or through hooks, that
    signature runs eagerly from then on, with a one-time ``RuntimeWarning`` naming
    the line. Return tensors instead of Python numbers to keep the cache effective.
    Likewise when ``fn`` returns a tensor that requires grad whose graph no backward
    inside ``fn`` consumed: a replay could not give it a graph (run forward-only
    calls under ``tg.no_grad()``, or call backward inside ``fn``).

    Args:
        fn: the function to cache.
        maxsize: most signatures kept (least recently used dropped); None = unbounded.
        verify_every: every N-th replay also runs ``fn`` eagerly on the same state and
            raises :class:`ReplayMismatchError` naming the first differing output or
            state array (the eager results are kept). ``verify_every=1`` checks all.
        modules: extra objects (models, optimizers) whose state ``fn`` uses but which
            its closure and globals do not reach.

    Returns:
        A :class:`CachedFunction` with ``cache_info()``, ``cache_clear()`` and
        ``explain(*args)`` (the replay program as Python source).
    """
    if fn is None:
        return functools.partial(cache, maxsize=maxsize, verify_every=verify_every, modules=modules)
    return CachedFunction(fn, maxsize=maxsize, verify_every=verify_every, modules=modules)
