"""Tensor creation: from data, filled, ranges, identity, and seeded random tensors."""

from __future__ import annotations

import numpy as np

from . import _backend, _dtypes
from .tensor import Tensor

__all__ = [
    "tensor",
    "as_tensor",
    "from_numpy",
    "zeros",
    "ones",
    "full",
    "empty",
    "arange",
    "linspace",
    "logspace",
    "eye",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "rand",
    "randn",
    "randint",
    "rand_like",
    "randn_like",
    "manual_seed",
    "default_generator",
    "Generator",
]


def tensor(data, dtype=None, requires_grad=False, device="cpu") -> Tensor:
    """A new tensor holding a copy of ``data``.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0]).dtype
    dtype('float32')
    """
    return Tensor(data, dtype=dtype, requires_grad=requires_grad, device=device)


def as_tensor(data, dtype=None, device="cpu") -> Tensor:
    """``data`` itself if it is a Tensor of that dtype; otherwise a tensor sharing
    memory with a NumPy array where possible."""
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    if isinstance(data, np.ndarray) and dtype is None:
        return Tensor._wrap(data)
    return Tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``array`` (no copy)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    return Tensor._wrap(array)


def _finish(array, requires_grad):
    t = Tensor._wrap(array)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _size(size, op):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for n in size:
        if not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"{op}: sizes must be non-negative integers, got {list(size)}")
    return tuple(int(n) for n in size)


def _float_dtype(dtype):
    return _dtypes.to_dtype(dtype) or _dtypes.get_default_dtype()


def zeros(*size, dtype=None, requires_grad=False, device="cpu") -> Tensor:
    xp = _backend.namespace_for_device(device)
    return _finish(xp.zeros(_size(size, "zeros"), _float_dtype(dtype)), requires_grad)


def ones(*size, dtype=None, requires_grad=False, device="cpu") -> Tensor:
    xp = _backend.namespace_for_device(device)
    return _finish(xp.ones(_size(size, "ones"), _float_dtype(dtype)), requires_grad)


def empty(*size, dtype=None, requires_grad=False, device="cpu") -> Tensor:
    xp = _backend.namespace_for_device(device)
    return _finish(xp.empty(_size(size, "empty"), _float_dtype(dtype)), requires_grad)


def full(size, fill_value, dtype=None, requires_grad=False, device="cpu") -> Tensor:
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from it if not given)."""
    if dtype is None:
        if isinstance(fill_value, bool):
            dtype = _dtypes.bool_
        elif isinstance(fill_value, int):
            dtype = _dtypes.int64
        else:
            dtype = _dtypes.get_default_dtype()
    xp = _backend.namespace_for_device(device)
    size = _size((size,), "full")
    return _finish(xp.full(size, fill_value, _dtypes.to_dtype(dtype)), requires_grad)


def _like(t, dtype):
    return _dtypes.to_dtype(dtype) or t.dtype


def zeros_like(input, dtype=None, requires_grad=False) -> Tensor:
    return _finish(np.zeros(input.shape, _like(input, dtype)), requires_grad)


def ones_like(input, dtype=None, requires_grad=False) -> Tensor:
    return _finish(np.ones(input.shape, _like(input, dtype)), requires_grad)


def empty_like(input, dtype=None, requires_grad=False) -> Tensor:
    return _finish(np.empty(input.shape, _like(input, dtype)), requires_grad)


def full_like(input, fill_value, dtype=None, requires_grad=False) -> Tensor:
    return _finish(np.full(input.shape, fill_value, _like(input, dtype)), requires_grad)


def arange(start, end=None, step=1, dtype=None, requires_grad=False, device="cpu") -> Tensor:
    """Values from ``start`` to ``end`` (exclusive); int64 for integer arguments."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        ints = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = _dtypes.int64 if ints else _dtypes.get_default_dtype()
    xp = _backend.namespace_for_device(device)
    return _finish(xp.arange(start, end, step, dtype=_dtypes.to_dtype(dtype)), requires_grad)


def linspace(start, end, steps, dtype=None, requires_grad=False, device="cpu", **_) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive.

    Computed from both ends, as PyTorch, and truncated toward zero for an integer dtype
    (``linspace(5, -5, 20, dtype=int32)`` ends ``..., -3, -4, -5``).
    """
    xp = _backend.namespace_for_device(device)
    dtype = _float_dtype(dtype)
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    if dtype.kind == "f":
        return _finish(xp.linspace(start, end, steps, dtype=dtype), requires_grad)
    i = xp.arange(steps, dtype=np.float64)
    step = (end - start) / max(steps - 1, 1)
    values = xp.where(i < steps // 2, start + i * step, end - (steps - 1 - i) * step)
    return _finish(xp.trunc(values).astype(dtype), requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, requires_grad=False, device="cpu", **_):
    """``base ** linspace(start, end, steps)``."""
    exps = linspace(start, end, steps, dtype=np.float64, device=device)._data
    out = np.power(base, exps)
    dtype = _float_dtype(dtype)
    out = np.trunc(out).astype(dtype) if dtype.kind != "f" else out.astype(dtype)
    return _finish(out, requires_grad)


def eye(n, m=None, *, dtype=None, requires_grad=False, device="cpu") -> Tensor:
    xp = _backend.namespace_for_device(device)
    return _finish(xp.eye(n, m, dtype=_float_dtype(dtype)), requires_grad)


# -- random ---------------------------------------------------------------------------


class Generator:
    """A seedable source of random numbers (wraps ``numpy.random.Generator``)."""

    def __init__(self, seed=None):
        self._rng = np.random.default_rng(seed)

    def manual_seed(self, seed: int) -> Generator:
        self._rng = np.random.default_rng(seed)
        return self

    def get_state(self):
        return self._rng.bit_generator.state

    def set_state(self, state) -> None:
        self._rng.bit_generator.state = state

    @property
    def numpy(self) -> np.random.Generator:
        """The NumPy generator behind this one."""
        return self._rng


default_generator = Generator(0)


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (used by rand, randn, dropout, init, shuffling)."""
    return default_generator.manual_seed(seed)


def _rng(generator):
    return (generator or default_generator).numpy


def rand(*size, dtype=None, requires_grad=False, generator=None) -> Tensor:
    """Uniform samples in [0, 1)."""
    dtype = _float_dtype(dtype)
    data = _rng(generator).random(_size(size, "rand"), dtype=np.float64).astype(dtype)
    return _finish(data, requires_grad)


def randn(*size, dtype=None, requires_grad=False, generator=None) -> Tensor:
    """Standard normal samples."""
    dtype = _float_dtype(dtype)
    data = _rng(generator).standard_normal(_size(size, "randn")).astype(dtype)
    return _finish(data, requires_grad)


def randint(low, high=None, size=(), dtype=None, generator=None, requires_grad=False) -> Tensor:
    """Integers in [low, high) (or [0, low) when ``high`` is omitted), int64 by default;
    ``randint(high, size)`` as PyTorch."""
    if isinstance(high, (tuple, list)) and size == ():
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    dtype = _dtypes.to_dtype(dtype) or _dtypes.int64
    data = _rng(generator).integers(low, high, size=_size((size,), "randint"), dtype=dtype)
    return Tensor._wrap(np.asarray(data))


def rand_like(input, dtype=None, requires_grad=False, generator=None) -> Tensor:
    return rand(
        input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad, generator=generator
    )


def randn_like(input, dtype=None, requires_grad=False, generator=None) -> Tensor:
    return randn(
        input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad, generator=generator
    )


# -- PyTorch's keywords for every creation function (issue 10) -------------------------------


def randint_like(input, low=0, high=None, *, dtype=None, requires_grad=False, generator=None):
    """Integers in [low, high) (or [0, low)) with ``input``'s shape and (by default) dtype."""
    if high is None:
        low, high = 0, low
    dtype = _dtypes.to_dtype(dtype) or input.dtype
    data = _rng(generator).integers(low, high, size=input.shape).astype(dtype)
    return _finish(data, requires_grad)


def scalar_tensor(s, *, dtype=None, requires_grad=False, device="cpu", **_):
    """A 0-d tensor holding ``s`` (the default float dtype unless ``dtype`` says otherwise)."""
    return Tensor(s, dtype=_float_dtype(dtype), requires_grad=requires_grad, device=device)


def _with_torch_keywords(fn):
    """Accept PyTorch's creation keywords on ``fn``: ``size=`` for the shape, ``out=`` (the
    result is written into that tensor and returned), ``device=`` (checked), and
    ``layout``, ``pin_memory``, ``memory_format`` (accepted; NumPy has one layout)."""
    import functools
    import inspect

    params = inspect.signature(fn).parameters
    takes_device = "device" in params
    takes_size_kw = "size" in params and params["size"].kind != inspect.Parameter.VAR_POSITIONAL

    @functools.wraps(fn)
    def wrapper(
        *args, out=None, layout=None, pin_memory=False, memory_format=None, names=None, **kwargs
    ):
        if "size" in kwargs and not takes_size_kw:
            args = (kwargs.pop("size"),) + args
        if "device" in kwargs and not takes_device:
            device = kwargs.pop("device")
            if device is not None and str(device) not in ("cpu", "cpu:0"):
                _backend.namespace_for_device(str(device))  # raises for an unknown device
        elif kwargs.get("device") is not None:
            kwargs["device"] = str(kwargs["device"])
        if kwargs.get("requires_grad") and kwargs.get("dtype") is not None:
            dtype = _dtypes.to_dtype(kwargs["dtype"])
            if dtype.kind != "f":
                raise RuntimeError(
                    f"{fn.__name__}: only Tensors of floating point dtype can require "
                    f"gradients, got dtype {dtype}"
                )
        result = fn(*args, **kwargs)
        if out is not None:
            if not isinstance(out, Tensor):
                raise TypeError(f"{fn.__name__}(): argument 'out' must be Tensor")
            out.data = result
            return out
        return result

    return wrapper


for _name in (
    "tensor",
    "zeros",
    "ones",
    "empty",
    "full",
    "arange",
    "linspace",
    "logspace",
    "eye",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "rand",
    "randn",
    "randint",
    "rand_like",
    "randn_like",
    "randint_like",
    "scalar_tensor",
):
    globals()[_name] = _with_torch_keywords(globals()[_name])
del _name

__all__ += ["randint_like", "scalar_tensor"]
