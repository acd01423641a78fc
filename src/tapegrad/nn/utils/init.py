"""``skip_init``, as ``torch.nn.utils.init``."""

from __future__ import annotations

import inspect

from ...random import get_rng_state, set_rng_state
from ..module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` whose parameter and buffer values are to be treated
    as uninitialised (set them yourself).

    torch builds the module on the meta device, so no initialiser draws random numbers;
    tapegrad has no meta device: it builds the module on ``device`` and restores the
    global random state afterwards, so the draws torch skips leave no trace either.

    Raises:
        RuntimeError: ``module_cls`` is no Module class, or takes no ``device`` argument.
    """
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    state = get_rng_state()
    try:
        return module_cls(*args, **kwargs)
    finally:
        set_rng_state(state)
