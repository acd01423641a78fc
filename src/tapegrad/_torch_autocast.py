"""torch's top-level autocast state: ``torch.is_autocast_enabled("cpu")``,
``get_autocast_dtype``, the ``set_autocast_*`` setters, the cache flag, the nesting counter,
and the deprecated per-device spellings (``is_autocast_cpu_enabled()``...).

They read and write the state ``tapegrad.amp.autocast`` keeps (per thread and device type),
so ``with torch.autocast("cpu"): torch.is_autocast_enabled("cpu")`` is True, as in torch.
tapegrad computes in the inputs' dtypes whatever the state says (see ``tapegrad.amp``):
the state is for code that asks, such as ``custom_fwd``.
"""

from __future__ import annotations

import numpy as np

from . import amp
from ._device import device as _device
from ._warn import warn

# the device types torch keeps an autocast state for; others raise torch's RuntimeError
_TYPES = ("cpu", "cuda", "ipu", "xpu", "maia", "xla", "mps", "hpu", "mtia", "privateuseone")


_MISSING = object()


def _torch_type_name(value):
    """The type as torch's argument parser names it: ``torch.device``, ``torch.dtype``..."""
    if isinstance(value, _device):
        return "torch.device"
    return "torch.dtype" if isinstance(value, np.dtype) else type(value).__name__


def _required(fn, value, name):
    if value is _MISSING:  # torch's parser's words
        raise TypeError(f'{fn}() missing 1 required positional arguments: "{name}"')


def _type(fn, device_type, position=1):
    _required(fn, device_type, "device_type")
    if not isinstance(device_type, str) or isinstance(device_type, _device):
        raise TypeError(
            f"{fn}(): argument 'device_type' (position {position}) must be str, "
            f"not {_torch_type_name(device_type)}"
        )
    kind = _device(device_type).type  # torch's RuntimeError for an unknown type
    if kind not in _TYPES:
        raise RuntimeError(
            "unknown device type for autocast in get_autocast_dispatch_key_from_device_type"
        )
    return kind


def _bool(fn, value, position, parser=True):
    if not isinstance(value, bool):
        if parser:  # torch's argument parser's words, or its setters' own
            raise TypeError(
                f"{fn}(): argument 'enabled' (position {position}) must be bool, "
                f"not {_torch_type_name(value)}"
            )
        raise TypeError(f"enabled must be a bool (got {type(value).__name__})")
    return value


def _dtype(fn, value, position=2, parser=True):
    if not isinstance(value, np.dtype):
        if parser:
            raise TypeError(
                f"{fn}(): argument 'dtype' (position {position}) must be torch.dtype, "
                f"not {_torch_type_name(value)}"
            )
        raise TypeError(f"dtype must be a torch.dtype (got {type(value).__name__})")
    return value


def is_autocast_enabled(device_type=None) -> bool:
    """Whether autocast is on for ``device_type`` in this thread (no argument: "cuda")."""
    kind = "cuda" if device_type is None else _type("is_autocast_enabled", device_type)
    return amp._autocast_state(kind)[0]


def get_autocast_dtype(device_type=_MISSING):
    """The dtype autocast would use on ``device_type`` (torch's default: bfloat16 for the CPU,
    float16 for CUDA) unless an autocast block or :func:`set_autocast_dtype` chose one."""
    kind = _type("get_autocast_dtype", device_type)
    dtype = amp._autocast_state(kind)[1]
    return amp._autocast_default(kind) if dtype is None else dtype


def set_autocast_enabled(*args, **kwargs):
    """``set_autocast_enabled(device_type, enabled)``, or ``(enabled)`` for "cuda"."""
    if len(args) + len(kwargs) == 1:
        (enabled,) = args or (kwargs.pop("enabled"),)
        kind, enabled = "cuda", _bool("set_autocast_enabled", enabled, 1)
    elif len(args) + len(kwargs) == 2:
        names = ("device_type", "enabled")
        values = dict(zip(names, args), **kwargs)
        kind = _type("set_autocast_enabled", values["device_type"])
        enabled = _bool("set_autocast_enabled", values["enabled"], 2)
    else:
        raise TypeError(
            "set_autocast_enabled() takes (device_type, enabled) or (enabled), got "
            f"{len(args) + len(kwargs)} arguments"
        )
    _set(kind, enabled=enabled)


def set_autocast_dtype(device_type=_MISSING, dtype=_MISSING) -> None:
    kind = _type("set_autocast_dtype", device_type)
    _required("set_autocast_dtype", dtype, "dtype")
    _set(kind, dtype=_dtype("set_autocast_dtype", dtype))


def _set(kind, enabled=None, dtype=None):
    old_enabled, old_dtype = amp._autocast_state(kind)
    amp._STATE.by_device[kind] = (
        old_enabled if enabled is None else enabled,
        old_dtype if dtype is None else dtype,
    )


def is_autocast_cache_enabled() -> bool:
    return amp._STATE.cache_enabled


def set_autocast_cache_enabled(enabled) -> None:
    """Remembered per thread (tapegrad casts nothing, so there is no cache to keep)."""
    amp._STATE.cache_enabled = _bool("set_autocast_cache_enabled", enabled, 1, parser=False)


def clear_autocast_cache() -> None:
    """Nothing cached: tapegrad keeps no casted copies of weights."""


def autocast_increment_nesting() -> int:
    """This thread's autocast nesting depth plus one (returned), as torch's counter."""
    amp._STATE.nesting += 1
    return amp._STATE.nesting


def autocast_decrement_nesting() -> int:
    """The depth minus one (returned; it goes below zero as torch's does)."""
    amp._STATE.nesting -= 1
    return amp._STATE.nesting


def _deprecated(name, call, instead):
    warn(f"torch.{name}({call}) is deprecated. Please use torch.{instead} instead.",
         DeprecationWarning)  # fmt: skip


def _per_device(device, spelling):
    """The four deprecated functions for one device: ``is_autocast_<spelling>_enabled``..."""

    def is_enabled():
        _deprecated(f"is_autocast_{spelling}_enabled", "", f"is_autocast_enabled('{device}')")
        return amp._autocast_state(device)[0]

    def get_dtype():
        _deprecated(f"get_autocast_{spelling}_dtype", "", f"get_autocast_dtype('{device}')")
        return get_autocast_dtype(device)

    def set_enabled(enabled):
        _deprecated(f"set_autocast_{spelling}_enabled", "enabled",
                    f"set_autocast_enabled('{device}', enabled)")  # fmt: skip
        _set(device, enabled=_bool("", enabled, 1, parser=False))

    def set_dtype(dtype):
        _deprecated(f"set_autocast_{spelling}_dtype", "dtype",
                    f"set_autocast_dtype('{device}', dtype)")  # fmt: skip
        _set(device, dtype=_dtype("", dtype, parser=False))

    fns = {
        f"is_autocast_{spelling}_enabled": is_enabled,
        f"get_autocast_{spelling}_dtype": get_dtype,
        f"set_autocast_{spelling}_enabled": set_enabled,
        f"set_autocast_{spelling}_dtype": set_dtype,
    }
    for name, fn in fns.items():
        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = f"Deprecated in torch (a DeprecationWarning): the {device!r} state."
    return fns


# torch's per-device spellings; the gpu ones are CUDA's (there is no is_autocast_gpu_enabled)
_DEPRECATED = {
    **_per_device("cpu", "cpu"),
    **_per_device("ipu", "ipu"),
    **_per_device("xla", "xla"),
    **{k: v for k, v in _per_device("cuda", "gpu").items() if k.endswith("dtype")},
}
globals().update(_DEPRECATED)

__all__ = [
    "is_autocast_enabled", "get_autocast_dtype", "set_autocast_enabled", "set_autocast_dtype",
    "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache",
    "autocast_increment_nesting", "autocast_decrement_nesting", *_DEPRECATED,
]  # fmt: skip
