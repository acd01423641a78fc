"""Grad mode, per thread: whether ops record a graph.

``no_grad``, ``enable_grad``, ``set_grad_enabled`` and ``inference_mode`` are
context managers and decorators. Each entry saves the thread's current mode and
each exit restores it, so nesting always returns to the previous value.
"""

from __future__ import annotations

import functools
import threading

__all__ = [
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
]


class _GradState(threading.local):
    """Thread-local flags; every new thread starts with grad enabled."""

    def __init__(self):
        self.enabled = True
        self.inference = False


STATE = _GradState()


def is_grad_enabled() -> bool:
    """Whether ops in this thread record a graph."""
    return STATE.enabled


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside ``inference_mode``."""
    return STATE.inference


# Set by autograd.forward_ad while a dual level is open: called when grad mode is switched
# off, to warn that ops run with grad mode off propagate no tangent (Note [Forward-mode
# tangents]).
NO_GRAD_HOOK: list = [None]

# Set by tapegrad._inference_tensors: called with +1 when a thread enters inference_mode
# and -1 when it leaves (Note [Inference tensors]).
INFERENCE_HOOK: list = [None]


class _GradModeContext:
    """Base of the grad-mode managers: usable with ``with`` and as a decorator.

    Entries nest: the previous state is kept on a per-object stack so the same
    object may be re-entered, and each exit restores exactly what its entry saw.
    """

    _enabled = True

    def __init__(self):
        self._saved = []

    def __enter__(self):
        self._saved.append((STATE.enabled, STATE.inference))
        STATE.enabled = self._enabled  # (no_grad / enable_grad keep inference mode on)
        if not self._enabled and NO_GRAD_HOOK[0] is not None:
            NO_GRAD_HOOK[0]()
        return self

    def __exit__(self, *exc):
        STATE.enabled, STATE.inference = self._saved.pop()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self._fresh():
                return fn(*args, **kwargs)

        return wrapper

    def _fresh(self):
        """A new manager with the same setting (decorated functions may run concurrently)."""
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone._saved = []
        return clone


class no_grad(_GradModeContext):
    """Disable graph recording: results of ops do not require grad.

    >>> import tapegrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> with tg.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    _enabled = False


class enable_grad(_GradModeContext):
    """Enable graph recording inside a ``no_grad`` region."""

    _enabled = True


class set_grad_enabled(_GradModeContext):
    """Set grad mode to ``mode``.

    Takes effect at once, as in PyTorch; used with ``with`` it restores the
    previous mode on exit, and used as a decorator it sets the mode only while
    the decorated function runs.
    """

    def __init__(self, mode: bool):
        super().__init__()
        self._enabled = bool(mode)
        self._saved.append((STATE.enabled, STATE.inference))
        STATE.enabled = self._enabled
        if not self._enabled and NO_GRAD_HOOK[0] is not None:
            NO_GRAD_HOOK[0]()

    def __enter__(self):
        # The constructor already switched the mode and saved the previous one.
        return self

    def __call__(self, fn):
        # Used as a decorator: undo the constructor's switch, apply it per call.
        STATE.enabled, STATE.inference = self._saved.pop()
        mode = self._enabled

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with enable_grad() if mode else no_grad():
                return fn(*args, **kwargs)

        return wrapper


class inference_mode(_GradModeContext):
    """Like ``no_grad``, and marks the thread as in inference mode: tensors made inside
    are inference tensors (``t.is_inference()``; Note [Inference tensors]).

    ``inference_mode(False)`` turns inference mode off and grad mode on (inside an
    enclosing ``inference_mode()`` or ``no_grad()`` too), as in PyTorch.
    """

    def __init__(self, mode: bool = True):
        super().__init__()
        self._mode = bool(mode)

    def __enter__(self):
        self._saved.append((STATE.enabled, STATE.inference))
        STATE.enabled = not self._mode
        STATE.inference = self._mode
        if self._mode and INFERENCE_HOOK[0] is not None:
            INFERENCE_HOOK[0](1)
        return self

    def __exit__(self, *exc):
        STATE.enabled, STATE.inference = self._saved.pop()
        if self._mode and INFERENCE_HOOK[0] is not None:
            INFERENCE_HOOK[0](-1)
        return False
