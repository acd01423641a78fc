"""Random draws as recordable sources.

While recording, ``tg.Generator.numpy`` (through which ``tg.rand``, ``tg.randn``,
``tg.randint``, dropout and init draw) returns a proxy that logs each draw as an
op naming the tapegrad Generator, the method and its arguments. The replay calls
``generator.numpy.<method>(...)`` again, so every replay draws fresh numbers from
the generator's current state, exactly as the eager call would have.
"""

from __future__ import annotations

import contextlib
from threading import get_ident

from ..creation import Generator
from .tracer import plain

__all__ = ["recording_generators"]


class _RecordingRng:
    __slots__ = ("_gen", "_rec")

    def __init__(self, gen, rec):
        self._gen = gen
        self._rec = rec

    def __getattr__(self, name):
        method = getattr(self._gen._rng, name)
        if not callable(method):
            return method
        gen, rec = self._gen, self._rec

        def draw(*args, **kwargs):
            result = method(*plain(args), **plain(kwargs))
            return rec.log_rng(gen, name, args, kwargs, result)

        return draw


@contextlib.contextmanager
def recording_generators(rec):
    """Route every ``Generator.numpy`` draw of this thread through ``rec`` while the block runs."""
    original = Generator.__dict__["numpy"]
    thread = get_ident()

    def numpy(self):
        if get_ident() != thread:  # another thread's draws are its own (eager or replay)
            return original.__get__(self)
        return _RecordingRng(self, rec)

    Generator.numpy = property(numpy)
    try:
        yield
    finally:
        Generator.numpy = original
