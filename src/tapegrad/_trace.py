"""Hooks that let library code stay replayable under ``tapegrad.jit``.

Library code that must look at array *values* would read them into Python
(``if bad.any(): raise``), which makes ``tapegrad.jit`` refuse to replay the
function (Note [Reads into Python] in tensor.py). Two helpers avoid that:

* :func:`raise_if` for validity checks: eagerly it is the plain test; while a
  call is recorded, the check itself becomes an op of the replay program, so each
  replay tests its own values and raises the same error at the same point.
* :func:`recording` for fast paths that branch on values (NaN present?): while
  recording, code takes a branch-free formulation with the same results.
* :func:`opaque` for whole array kernels (Note [Opaque kernels]).

``HOOK[0]`` is set by ``tapegrad.jit`` while it records (lower layers never import it).
"""

from __future__ import annotations

import numpy as np

__all__ = ["raise_if", "recording", "opaque", "HOOK"]

# HOOK[0](fn, args): log the call ``fn(*args)`` into the recording (and run it); or None.
HOOK: list = [None]


def recording() -> bool:
    """Whether ``tapegrad.jit`` is recording the current call."""
    return HOOK[0] is not None


def raise_if(bad, make_error, *values) -> None:
    """Raise ``make_error(*values)`` when any element of the array ``bad`` is true.

    Args:
        bad: boolean array, true where the input is invalid.
        make_error: a module-level function (recordings compare it by identity) that
            builds the exception from ``values``.
        values: arrays or Python constants the error message needs.
    """
    hook = HOOK[0]
    if hook is not None:
        hook(_raise_if, (bad, make_error) + values)
    else:
        _raise_if(bad, make_error, *values)


def _raise_if(bad, make_error, *values):
    # Callers pass plain arrays (the recorder strips the tracing); the method skips
    # np.any's dispatch, a third of this check's cost on a small array.
    if bad.any() if type(bad) is np.ndarray else np.any(bad):
        raise make_error(*values)


def opaque(kernel, *args):
    """``kernel(*args)``, logged by a ``tapegrad.jit`` recording as ONE call of the program.

    Note [Opaque kernels]
    A recording logs every NumPy call, view and slice that tapegrad makes; a replay then
    pays ~1 us of Python per logged line and cannot branch on values (so kernels record
    branch-free slow paths). A fused kernel (a convolution, a pooling) called through
    ``opaque`` is logged as a single call of ``kernel`` instead: the replay calls the
    same function on its arrays, with the same fast paths and value branches as eager.
    ``kernel`` must be a module-level function (recordings compare it by identity) that
    only reads its array arguments and returns new arrays (or views of new arrays, or a
    tuple of them, None allowed): a write into an argument would be invisible to the
    recording. It receives plain arrays and must not itself consult :func:`recording`.
    The call is routed through NumPy's ``__array_function__`` protocol, which the
    tracing array of ``tapegrad.jit`` implements, so this layer needs no jit import.
    """
    if HOOK[0] is not None:
        for a in args:
            t = type(a)
            if t is not np.ndarray and isinstance(a, np.ndarray):
                hook = t.__array_function__
                if hook is not np.ndarray.__array_function__:
                    return hook(a, kernel, (t,), args, {})
    return kernel(*args)
