"""``tapegrad.cpu``, as ``torch.cpu``: the device module of the CPU, for device-agnostic code
(``torch.get_device_module(x.device).synchronize()``).

As in torch, there is one CPU device and nothing to wait for: the streams and events exist
so that code written for ``torch.cuda`` runs unchanged. ``tapegrad.cpu.amp`` (the deprecated
``autocast``/``GradScaler`` spellings) is bound by ``tapegrad.amp``.
"""

from __future__ import annotations

import contextlib

__all__ = [
    "current_device",
    "current_stream",
    "device_count",
    "is_available",
    "is_initialized",
    "set_device",
    "stream",
    "synchronize",
    "Event",
    "Stream",
    "StreamContext",
]


def is_available() -> bool:
    """True: the CPU is always there."""
    return True


def is_initialized() -> bool:
    return True


def device_count() -> int:
    """1: torch counts the CPU as one device, whatever its cores."""
    return 1


def current_device() -> str:
    """``"cpu"`` (a str, as torch's, not an index)."""
    return "cpu"


def set_device(device) -> None:
    """Nothing to select: there is one CPU device."""


def synchronize(device=None) -> None:
    """Returns at once: CPU work is done when its call returns."""


class Stream:
    """A stream for device-agnostic code; work on the CPU runs in call order anyway."""

    def __init__(self, priority: int = -1) -> None:
        pass

    def wait_stream(self, stream) -> None:
        pass

    def record_event(self) -> None:
        pass

    def wait_event(self, event) -> None:
        pass


class Event:
    """An event that has always happened (``query()`` is True)."""

    def query(self) -> bool:
        return True

    def record(self, stream=None) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait(self, stream=None) -> None:
        pass


_DEFAULT_STREAM = Stream()
_STATE = {"stream": _DEFAULT_STREAM}


def current_stream(device=None) -> Stream:
    """The stream selected by the innermost :func:`stream` block (one default stream)."""
    return _STATE["stream"]


class StreamContext(contextlib.AbstractContextManager):
    """Makes ``stream`` current inside the block (None: leaves it as it is); the block's
    value is None, as torch's."""

    def __init__(self, stream):
        self.stream = stream
        self.prev_stream = _DEFAULT_STREAM

    def __enter__(self):
        if self.stream is not None:
            self.prev_stream, _STATE["stream"] = _STATE["stream"], self.stream

    def __exit__(self, *exc) -> None:
        if self.stream is not None:
            _STATE["stream"] = self.prev_stream


def stream(stream) -> contextlib.AbstractContextManager:
    """``StreamContext(stream)``."""
    return StreamContext(stream)
