"""``tapegrad.mps``, ``tapegrad.xpu`` and ``tapegrad.mtia``: the device modules of backends
tapegrad does not have, answering as torch's CPU-only build does.

Note [Device modules without the device]
Programs probe accelerators in a row (``if torch.cuda.is_available(): ... elif
torch.backends.mps.is_available() or torch.mps.is_available(): ... elif torch.xpu...``),
and device-agnostic code calls ``torch.get_device_module(dev).manual_seed(s)``. Each module
below is built from a table of rows ``name -> (answer, error)``: the queries torch answers
without the backend return torch's value (``is_available() == False``,
``device_count() == 0``, the seeding functions accept and ignore their seed), and the ones
that need the device raise torch's error type and message. tests/test_torch_namespace2.py
checks every row against torch.
"""

from __future__ import annotations

import sys
import types

__all__ = ["mps", "mtia", "xpu"]


def _no(backend, what, error=RuntimeError):
    return (None, error(f"Cannot execute {what}() without {backend} backend."))


_XPU = (None, AssertionError("Torch not compiled with XPU enabled"))

# module -> {function: (return value, or None when error is set; error to raise)}
_ROWS = {
    "mps": {
        "is_available": (False, None),
        "device_count": (0, None),
        "manual_seed": (None, None),
        "synchronize": _no("MPS", "deviceSynchronize"),
        "empty_cache": _no("MPS", "emptyCache"),
        "current_allocated_memory": _no("MPS", "getCurrentAllocatedMemory"),
        "driver_allocated_memory": _no("MPS", "getDriverAllocatedMemory"),
        "recommended_max_memory": _no("MPS", "getRecommendedMaxMemory"),
        "set_per_process_memory_fraction": _no("MPS", "setMemoryFraction"),
        "get_rng_state": _no("MPS", "getDefaultGenerator"),
        "set_rng_state": _no("MPS", "getDefaultGenerator"),
        "seed": _no("MPS", "getDefaultGenerator"),
    },
    "xpu": {
        "is_available": (False, None),
        "device_count": (0, None),
        "is_initialized": (False, None),
        "is_bf16_supported": (False, None),
        "memory_allocated": (0, None),
        "empty_cache": (None, None),
        "manual_seed": (None, None),
        "manual_seed_all": (None, None),
        "seed": (None, None),
        "synchronize": _XPU,
        "current_device": _XPU,
        "init": _XPU,
    },
    "mtia": {
        "is_available": (False, None),
        "device_count": (0, None),
        "is_initialized": (False, None),
        "is_bf16_supported": (True, None),  # torch 2.13's CPU build says so
        "memory_allocated": (0, None),
        "manual_seed": (None, None),
        "manual_seed_all": (None, None),
        "seed": (None, None),
        "synchronize": _no("MTIA", "getCurrentDevice"),
        "current_device": _no("MTIA", "getCurrentDevice"),
        "empty_cache": _no("MTIA", "emptyCache"),
    },
}


def _function(module, name, answer, error):
    def function(*args, **kwargs):
        if error is not None:
            raise type(error)(*error.args)
        return answer

    function.__name__ = function.__qualname__ = name
    function.__module__ = f"tapegrad.{module}"
    function.__doc__ = f"``torch.{module}.{name}`` on a build without {module}: " + (
        f"raises {type(error).__name__}." if error else f"returns {answer!r}."
    )
    return function


def _module(name, rows):
    mod = types.ModuleType(
        f"tapegrad.{name}", f"torch.{name} without the backend: Note [Device modules without "
        "the device] in tapegrad/_device_stubs.py."
    )  # fmt: skip
    for fn, (answer, error) in rows.items():
        setattr(mod, fn, _function(name, fn, answer, error))
    mod.__all__ = list(rows)
    sys.modules[mod.__name__] = mod
    return mod


mps = _module("mps", _ROWS["mps"])
xpu = _module("xpu", _ROWS["xpu"])
mtia = _module("mtia", _ROWS["mtia"])
