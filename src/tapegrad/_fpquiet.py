"""NumPy's floating-point warnings off inside tapegrad's kernels, cheaply.

Note [No floating-point warnings]
PyTorch never warns for ``0/0``, ``x/0``, ``log(0)``, ``sqrt(-1)``, overflow to inf or
``inf - inf``: it returns inf or NaN silently. NumPy's ufuncs emit a RuntimeWarning for
each (and raise under ``warnings.simplefilter("error")``). A module-level
``np.seterr`` would change the user's own NumPy state, and ``with np.errstate(...)``
costs several microseconds a call (as much as the whole op on a small tensor).

NumPy (>= 2) keeps its error state in a ContextVar; setting it to an "ignore
everything" value and resetting it is two C calls (about 0.15 us with the try/finally
around them, against 3-5 us for ``np.errstate``), and is exactly what ``np.errstate``
does underneath, minus the Python-level argument handling. Even that is 5-7% of an
eager op's overhead, so add/sub/mul (the hottest ops, which warn only on overflow or
inf - inf) are left alone; division, powers, exp and the trigonometric functions,
casts, log_softmax and normalisation statistics are quiet. So:

* the autograd engine runs each backward pass inside one :func:`enter`/:func:`leave`
  pair (every backward rule at once, for the price of one);
* the graph cache (``tg.jit.cache``) replays a recorded step inside one pair;
* forward kernels that can meet 0/0, overflow or inf - inf call :func:`call`
  (arithmetic, pow, exp, casts, ...) or hold ``np.errstate`` on a rare path.

The user's NumPy error state outside tapegrad is untouched. Where NumPy lacks the
ContextVar (an older or newer layout), ``np.errstate`` stands in (slower, same result).
"""

from __future__ import annotations

import functools

import numpy as np

try:  # NumPy >= 2.0
    from numpy._core._ufunc_config import _extobj_contextvar as _VAR

    with np.errstate(all="ignore"):
        _IGNORE = _VAR.get()
except (ImportError, AttributeError):  # pragma: no cover - other NumPy layouts
    _VAR = None
    _IGNORE = None

__all__ = ["call", "enter", "leave"]

if _VAR is not None:
    # C-level callables (no Python frame): enter() -> token, leave(token).
    enter = functools.partial(_VAR.set, _IGNORE)
    enter.__doc__ = "Turn NumPy's floating-point warnings off; returns a token for leave()."
    leave = _VAR.reset

    def call(fn, *args, **kwargs):
        """``fn(*args, **kwargs)`` with NumPy's floating-point warnings off."""
        token = _VAR.set(_IGNORE)
        try:
            return fn(*args, **kwargs)
        finally:
            _VAR.reset(token)

else:  # pragma: no cover - other NumPy layouts: np.errstate, slower

    def enter():
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def leave(token) -> None:
        token.__exit__(None, None, None)

    def call(fn, *args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
