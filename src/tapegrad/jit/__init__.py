"""Graph cache: record a function's array program once per signature, replay it fast.

``tg.jit.cache(fn)`` (see :func:`tapegrad.jit.cache.cache`). The pieces:
tracer.py (the tracing ndarray), recorder.py (slots and ops), state.py (what a
function reaches), rng.py (random draws as sources), record.py (one recording),
program.py (code generation), signature.py (cache keys), cache.py (the cache).
"""

from .cache import CachedFunction, CacheInfo, ReplayMismatchError, cache
from . import torchscript
from .torchscript import *  # noqa: F403  (torch.jit's TorchScript names: Note [TorchScript is eager here])

__all__ = ["cache", "CachedFunction", "CacheInfo", "ReplayMismatchError"]
__all__ += torchscript.__all__
