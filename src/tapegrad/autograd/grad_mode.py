"""``tg.autograd.grad_mode``, as ``torch.autograd.grad_mode``: the grad-mode managers (one
implementation, in ``tapegrad.grad_mode``) and ``set_multithreading_enabled``."""

from __future__ import annotations

from ..grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)

__all__ = [
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "set_multithreading_enabled",
    "is_multithreading_enabled",
]

_MULTITHREADING = [True]


def is_multithreading_enabled() -> bool:
    """The flag ``set_multithreading_enabled`` sets (True by default, as torch).

    tapegrad's engine runs every backward on the calling thread, so the flag changes
    nothing; it is kept so programs that save and restore it run.
    """
    return _MULTITHREADING[0]


class set_multithreading_enabled:  # noqa: N801 - torch's name
    """Set the multithreaded-backward flag; as a context manager, restore it on exit.

    Takes effect at once, as torch's (its constructor sets the flag).
    """

    def __init__(self, mode: bool):
        self.prev = _MULTITHREADING[0]
        self.mode = bool(mode)
        _MULTITHREADING[0] = self.mode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _MULTITHREADING[0] = self.prev
        return False

    def clone(self):
        return type(self)(self.mode)
