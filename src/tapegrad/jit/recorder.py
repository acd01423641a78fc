"""The recorder: turns the NumPy calls seen by the tracer into a flat list of ops.

Note [Slots]
Every array the recorded call touches gets a *slot*: an argument (bound per call),
a state location (read at replay time from the object that held it: ``p._data``,
``opt.state[p]['m']``), a constant made during the call (copied from its value at
first use), a random draw, or the result of an op. A slot stands for one array
object; an op that writes through ``out=``, ``fill`` or ``a[i] = v`` writes into the
slot's array at replay too, so in-place updates and views behave exactly as in the
eager run. A plain array that has the same memory and layout as a traced one (what
``np.asarray(traced)`` gives) is resolved to that slot; any other plain array is a
constant, and its value is part of the recording's fingerprint, so a value that
changes between calls is never baked in (Note [Stable recordings] in cache.py).

What library code must do so that its ops stay recordable (rather than making
the function run eagerly): create arrays that later receive traced values from a
traced one (``np.zeros_like(x, shape=...)``, not ``np.zeros(shape)``: a plain
``out[i:j] = x`` is invisible); copy with ``.copy()``, not ``np.ascontiguousarray``
or ``np.array`` (C functions that strip the tracing); check values with
``tapegrad._trace.raise_if`` instead of ``if bad.any(): raise``.
"""

from __future__ import annotations

import sys

import numpy as np

from ..tensor import _is_internal
from .tracer import TracedArray, plain

__all__ = ["Recorder", "Ref", "Op", "user_line"]

_view = np.ndarray.view

# Functions whose non-array results depend on shapes and layout only, never on values.
_METADATA = {
    np.shape,
    np.ndim,
    np.size,
    np.may_share_memory,
    np.shares_memory,
    np.result_type,
    np.iscomplexobj,
    np.isrealobj,
    np.can_cast,
    np.min_scalar_type,
}
# Methods that write into their array.
_WRITING_METHODS = {"__setitem__", "fill", "sort", "put"}
_WRITING_FUNCTIONS = {np.copyto, np.put, np.place, np.putmask, np.fill_diagonal, np.put_along_axis}


class Ref:
    """A reference to slot ``i`` inside an argument template."""

    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i

    def __repr__(self):
        return f"s{self.i}"


def refs_in(x, acc: list) -> list:
    """Append to ``acc`` the slot of every :class:`Ref` inside ``x`` (tuples, lists, dicts
    and slices walked); returns ``acc``."""
    t = type(x)
    if t is Ref:
        acc.append(x.i)
    elif t is tuple or t is list:
        for v in x:
            refs_in(v, acc)
    elif t is dict:
        for v in x.values():
            refs_in(v, acc)
    elif t is slice:
        refs_in(x.start, acc)
        refs_in(x.stop, acc)
        refs_in(x.step, acc)
    return acc


class Op:
    """One logged call: ``kind`` is 'call', 'method' or 'rng'."""

    __slots__ = (
        "kind",
        "fn",
        "args",
        "kwargs",
        "result",
        "writes",
        "line",
        "wrap_scalar",
        "defines",
    )

    def __init__(self, kind, fn, args, kwargs, result, writes, line, wrap_scalar, defines):
        self.kind = kind
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.result = result  # template of the result (Refs), or None
        self.writes = writes  # slots written in place
        self.line = line
        self.wrap_scalar = wrap_scalar
        self.defines = defines  # slots this op creates


def user_line() -> str:
    """``file:line`` of the innermost frame outside tapegrad."""
    frame = sys._getframe(1)
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _key(a):
    return (a.__array_interface__["data"][0], a.shape, a.strides, a.dtype.str)


class Recorder:
    """Collects slots and ops for one recorded call."""

    def __init__(self):
        self.slots = []  # per slot: ("arg", index) | ("state", loc) | ("const", array) | ("op",)
        self.objects = []  # per slot: the TracedArray standing for it (kept alive: ids stay unique)
        self.ops = []
        self.by_layout = {}  # _key(array) -> slot, to resolve plain aliases of traced arrays
        self.consts = {}  # id(plain array) -> slot
        self.const_arrays = []  # keeps constant arrays alive
        self.roots = []  # per slot: the slot whose memory it views (itself when it owns)
        self.refusals = []  # why this signature must run eagerly (values read into Python...)
        self.problems = []  # why this recording cannot be replayed (retried on later calls)
        self.rng_used = []

    # -- slots ----------------------------------------------------------------------------

    def new_slot(self, array, origin, root=None) -> TracedArray:
        """Register ``array`` (plain) as a new slot; return its TracedArray stand-in."""
        i = len(self.slots)
        traced = _view(array, TracedArray)
        traced._tg_slot = i
        self.slots.append(origin)
        self.objects.append(traced)
        self.roots.append(i if root is None else root)
        if array.size:
            self.by_layout.setdefault(_key(array), i)
        return traced

    def retrace(self, x):
        """The traced array that plain ``x`` is an alias of (``np.asarray(traced)``), else ``x``."""
        if x.size:
            i = self.by_layout.get(_key(x))
            if i is not None:
                return self.objects[i]
        if id(x) not in self.consts:
            self._check_not_a_copy(x)
        return x

    def _slot_of(self, x):
        """The slot of an array met as an argument (registering constants)."""
        if type(x) is TracedArray:
            i = x._tg_slot
            if i is not None and self.objects[i] is x:
                return i
            x = _view(x, np.ndarray)
        if x.size:
            i = self.by_layout.get(_key(x))
            if i is not None:
                return i
        i = self.consts.get(id(x))
        if i is not None:
            return i
        # A plain array made during the call (np.ones, a Tensor of a list): remember
        # its value now; the fingerprint compares it across recordings.
        self._check_not_a_copy(x)
        snapshot = np.array(x, copy=True)
        self.const_arrays.append(x)
        traced = self.new_slot(x, ("const", snapshot))
        self.consts[id(x)] = traced._tg_slot
        return traced._tg_slot

    def _check_not_a_copy(self, x):
        """Refuse a constant equal to a traced array: a copy made behind the tracer's back
        (``np.array(t._data)``) would be baked into the program with today's values."""
        if x.size < 2 or x.dtype.kind not in "fiuc" or bool((x == x.flat[0]).all()):
            return  # uniform arrays (zeros, ones) are almost always genuine constants
        for i, traced in enumerate(self.objects):
            origin = self.slots[i]
            if origin[0] == "const" and len(origin) == 2:
                continue  # equal to a constant: baked either way, by value, in the fingerprint
            if (
                traced.shape == x.shape
                and traced.dtype == x.dtype
                and np.array_equal(_view(traced, np.ndarray), x)
            ):
                # A problem, not a refusal: np.empty's garbage can match by chance, and
                # the next recording retries (Note [Stable recordings] in cache.py).
                self.problems.append(
                    f"it copies a traced array with NumPy outside tapegrad's ops (at "
                    f"{user_line()}), whose values would be baked into the replay"
                )
                return

    def template(self, x):
        """``x`` with arrays replaced by :class:`Ref` (lists, tuples, dicts and slices walked)."""
        t = type(x)
        if t is TracedArray or t is np.ndarray:
            return Ref(self._slot_of(x))
        if t is tuple or t is list:
            return t(self.template(v) for v in x)
        if t is dict:
            return {k: self.template(v) for k, v in x.items()}
        if t is slice:
            return slice(self.template(x.start), self.template(x.stop), self.template(x.step))
        if isinstance(x, np.ndarray):
            self.problems.append(f"an array of type {t.__name__} at {user_line()}")
        return x

    # -- logging ----------------------------------------------------------------------------

    def log(self, fn, args, kwargs, result, kind="call"):
        """Log ``fn(*args, **kwargs)`` (args may hold TracedArrays) that returned ``result``."""
        targs = self.template(args)
        tkw = self.template(kwargs)
        writes = []
        out = tkw.get("out") if kwargs else None
        if out is not None:
            outs = out if isinstance(out, tuple) else (out,)
            writes.extend(r.i for r in outs if isinstance(r, Ref))
        if kind == "call" and targs and isinstance(targs[0], Ref):
            if fn in _WRITING_FUNCTIONS or getattr(fn, "__name__", "") == "at":
                writes.append(targs[0].i)
        return self._finish(kind, fn, targs, tkw, result, writes, (args, kwargs))

    def log_method(self, name, self_arr, args, kwargs, result, base):
        """Log ``self_arr.name(*args, **kwargs)``."""
        targs = (Ref(self._slot_of(self_arr)),) + self.template(args)
        tkw = self.template(kwargs)
        writes = [targs[0].i] if name in _WRITING_METHODS else []
        return self._finish("method", name, targs, tkw, result, writes, (self_arr,) + args)

    def log_rng(self, generator, name, args, kwargs, result):
        if generator not in self.rng_used:
            self.rng_used.append(generator)
        if not isinstance(result, np.ndarray):
            self.on_read(f"a random Python number from {name}()")
            return result
        return self._finish(
            "rng", (generator, name), self.template(args), self.template(kwargs), result, [], ()
        )

    def _finish(self, kind, fn, targs, tkw, result, writes, raw_args):
        for w in writes:
            self._mark_written(w)
        wrap_scalar = False
        if isinstance(result, np.generic):
            result = np.asarray(result)
            wrap_scalar = True
        first_new = len(self.slots)
        if result is None:
            tres, out = None, None
        elif isinstance(result, np.ndarray):
            tres, out = self._result_array(result, raw_args)
        elif isinstance(result, (tuple, list)) and any(isinstance(r, np.ndarray) for r in result):
            pairs = [
                self._result_array(r, raw_args) if isinstance(r, np.ndarray) else (r, r)
                for r in result
            ]
            tres = type(result)(p[0] for p in pairs)
            out = type(result)(p[1] for p in pairs)
        else:
            if fn not in _METADATA:
                name = getattr(fn, "__name__", str(fn))
                self.on_read(f"{name}() returning a Python value")
            return result
        defines = [
            r.i
            for r in (tres if isinstance(tres, (tuple, list)) else (tres,))
            if type(r) is Ref and r.i >= first_new
        ]
        self.ops.append(Op(kind, fn, targs, tkw, tres, writes, user_line(), wrap_scalar, defines))
        return out

    def _result_array(self, array, raw_args):
        if array.size:
            i = self.by_layout.get(_key(array))
            if i is not None:  # the result is an existing array (out=, or an identical view)
                return Ref(i), self.objects[i]
        root = None
        if array.base is not None:
            for a in _arrays_in(raw_args):
                if np.may_share_memory(array, plain(a)):
                    root = self.roots[self._slot_of(a)]
                    break
        traced = self.new_slot(array, ("op",), root)
        return Ref(traced._tg_slot), traced

    def _mark_written(self, i):
        root = self.roots[i]
        origin = self.slots[root]
        if origin[0] == "const" and len(origin) == 2:
            self.slots[root] = origin + ("written",)

    def check(self, fn, args):
        """Run and log ``fn(*args)``, a value check of tapegrad._trace that returns None."""
        fn(*plain(args))
        self.log(fn, args, {}, None)

    def before_write(self, fn, args, kwargs):
        """Register the plain arrays that ``fn`` is about to write as constants *now*.

        A constant's value is snapshotted at its first use; for an array written by
        the call (``out=``, ``np.put_along_axis(a, ...)``) that must happen before the
        write, or the replay would start from the written value.
        """
        out = kwargs.get("out") if kwargs else None
        targets = list(out) if isinstance(out, tuple) else [out]
        if args and (fn in _WRITING_FUNCTIONS or getattr(fn, "__name__", "") == "at"):
            targets.append(args[0])
        for a in targets:
            if type(a) is np.ndarray:
                self._slot_of(a)

    def on_read(self, how):
        self.refusals.append(f"reads a tensor value into Python ({how} at {user_line()})")


def _arrays_in(x):
    if isinstance(x, np.ndarray):
        yield x
    elif isinstance(x, (tuple, list)):
        for v in x:
            yield from _arrays_in(v)
    elif isinstance(x, dict):
        for v in x.values():
            yield from _arrays_in(v)
