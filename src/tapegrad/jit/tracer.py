"""The tracing array: an ndarray subclass that logs every NumPy call made on it.

While :mod:`tapegrad.jit` records a call, the arrays that the function can reach
(argument tensors, parameters, gradients, optimizer state) are replaced by
``TracedArray`` views of the same memory. NumPy hands every ufunc call (``a + b``,
``a += b``, ``np.add.reduce``, ``out=`` writes) to ``__array_ufunc__`` and every
public function (``np.sum``, ``np.where``, ``np.zeros_like``) to
``__array_function__``; the ndarray methods that bypass both (``reshape``,
``astype``, indexing, ``fill``...) are overridden below. Each of them computes on
plain arrays and hands the call to the active :class:`~tapegrad.jit.recorder.Recorder`,
which logs it and wraps the results, so every array op that tapegrad performs
(forward, backward closures, accumulation into ``.grad``, optimizer updates) lands
in one flat program.

Reading a value into Python (``item()``, ``bool()``, ``float()``, ``tolist()``,
iteration of values, ``repr``) is reported to the recorder, which then refuses to
replay that signature (Note [Reads into Python] in tensor.py).

With no recorder active (an array that escaped a recording), every override
simply computes on the plain array and returns plain results.
"""

from __future__ import annotations

from threading import get_ident

import numpy as np

__all__ = ["TracedArray", "plain", "ACTIVE"]

# ACTIVE["recorder"] is the Recorder of the call being recorded, or None; ACTIVE["thread"]
# the thread that records it: traced arrays used by any other thread log nothing
# (Note [Recording and threads] in record.py).
ACTIVE = {"recorder": None, "thread": None}


def _active():
    rec = ACTIVE["recorder"]
    if rec is not None and ACTIVE["thread"] != get_ident():
        return None
    return rec


_view = np.ndarray.view


def plain(x):
    """``x`` with every TracedArray (also inside lists, tuples, dicts, slices) made plain."""
    t = type(x)
    if t is TracedArray:
        return _view(x, np.ndarray)
    if t is tuple or t is list:
        return t(plain(v) for v in x)
    if t is dict:
        return {k: plain(v) for k, v in x.items()}
    if t is slice and (
        type(x.start) is TracedArray or type(x.stop) is TracedArray or type(x.step) is TracedArray
    ):
        return slice(plain(x.start), plain(x.stop), plain(x.step))
    return x


class TracedArray(np.ndarray):
    """An ndarray whose NumPy calls are logged by the active recorder."""

    __slots__ = ("_tg_slot",)

    def __array_finalize__(self, obj):
        # Views made by NumPy internals carry no slot; the recorder rejects them by name.
        self._tg_slot = None

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        fn = ufunc if method == "__call__" else getattr(ufunc, method)
        rec = _active()
        if rec is not None:
            rec.before_write(fn, inputs, kwargs)
        result = fn(*plain(inputs), **plain(kwargs))
        if rec is None:
            return result
        return rec.log(fn, inputs, kwargs, result)

    def __array_function__(self, func, types, args, kwargs):
        rec = _active()
        if rec is not None:
            rec.before_write(func, args, kwargs)
        result = func(*plain(args), **plain(kwargs))
        if rec is None:
            return result
        return rec.log(func, args, kwargs, result)

    # -- reads of values into Python ----------------------------------------------------

    def _read(self, how):
        rec = _active()
        if rec is not None:
            rec.on_read(how)
        return _view(self, np.ndarray)

    def item(self, *args):
        return self._read("item()").item(*args)

    def tolist(self):
        return self._read("tolist()").tolist()

    def __bool__(self):
        return bool(self._read("bool()"))

    def __float__(self):
        return float(self._read("float()"))

    def __int__(self):
        return int(self._read("int()"))

    def __index__(self):
        return self._read("an index").__index__()

    def __complex__(self):
        return complex(self._read("complex()"))

    def __repr__(self):
        return repr(self._read("repr()"))

    def __str__(self):
        return str(self._read("str()"))

    def __format__(self, spec):
        return format(self._read("format()"), spec)

    def tobytes(self, order="C"):
        return self._read("tobytes()").tobytes(order)

    def __reduce__(self):
        return self._read("pickling").__reduce__()

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    @property
    def T(self):  # noqa: N802 - NumPy's name
        return _method_call("transpose", self, (), {})


def _method_call(name, self, args, kwargs):
    """Call ndarray method ``name`` on the plain array and log it."""
    base = _view(self, np.ndarray)
    result = getattr(base, name)(*plain(args), **plain(kwargs))
    rec = _active()
    if rec is None:
        return result
    return rec.log_method(name, self, args, kwargs, result, base)


def _make_method(name):
    def method(self, *args, **kwargs):
        return _method_call(name, self, args, kwargs)

    method.__name__ = name
    method.__qualname__ = f"TracedArray.{name}"
    return method


# ndarray methods that reach neither __array_ufunc__ nor __array_function__ (or that
# we want logged as one call). ``fill``, ``sort`` and ``__setitem__`` write in place.
_METHODS = (
    "reshape",
    "astype",
    "copy",
    "view",
    "transpose",
    "swapaxes",
    "squeeze",
    "ravel",
    "flatten",
    "__getitem__",
    "__setitem__",
    "fill",
    "sort",
    "argsort",
    "argmax",
    "argmin",
    "mean",
    "std",
    "var",
    "cumsum",
    "cumprod",
    "clip",
    "round",
    "repeat",
    "take",
    "dot",
    "diagonal",
    "conj",
    "nonzero",
    "put",
    "__copy__",
    "__deepcopy__",
)
for _name in _METHODS:
    setattr(TracedArray, _name, _make_method(_name))
del _name
