"""Tensor creation: from data, filled, ranges, identity, and seeded random tensors."""

from __future__ import annotations

import math

import numpy as np

from . import _backend, _dtypes
from ._layout import preserve_order
from .tensor import Tensor, _as_array, _init, check_numeric

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
    "randint_like",
    "randperm",
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
    t = _from_data(data, dtype, device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def as_tensor(data, dtype=None, device="cpu") -> Tensor:
    """``data`` itself if it is a Tensor of that dtype; otherwise a tensor sharing
    memory with a NumPy array where possible."""
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    if isinstance(data, np.ndarray) and dtype is None:
        check_numeric(data, "as_tensor")
        return Tensor._wrap(data)
    return _from_data(data, dtype, device)


def _from_data(data, dtype, device) -> Tensor:
    """A tensor holding a copy of ``data``, its dtype inferred (``tg.tensor``'s rule; the
    ``Tensor(...)`` constructor is PyTorch's legacy one, see tapegrad/legacy.py)."""
    t = object.__new__(Tensor)
    _init(t, _as_array(data, _dtypes.to_dtype(dtype), str(device)))
    return t


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``array`` (no copy)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    check_numeric(array, "from_numpy")
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
    size = tuple(int(n) for n in size)
    if math.prod(size) > _MAX_ELEMENTS:
        raise RuntimeError(f"{op}: storage size calculation overflowed with sizes={list(size)}")
    return size


# No array of more elements fits in a 64-bit address space at 16 bytes each (complex128).
_MAX_ELEMENTS = (2**63 - 1) // 16


def _size_or_args(args, size, op):
    """The size given as positional arguments or as ``size=`` (PyTorch accepts both)."""
    if size is None:
        return args
    if args:
        raise TypeError(f"{op}() got multiple values for argument 'size'")
    return (size,)


def _float_dtype(dtype):
    return _dtypes.to_dtype(dtype) or _dtypes.get_default_dtype()


def zeros(*args, size=None, dtype=None, requires_grad=False, device="cpu") -> Tensor:
    xp = _backend.namespace_for_device(device)
    shape = _size(_size_or_args(args, size, "zeros"), "zeros")
    return _finish(_on_device(xp.zeros(shape, _float_dtype(dtype)), device), requires_grad)


def ones(*args, size=None, dtype=None, requires_grad=False, device="cpu") -> Tensor:
    xp = _backend.namespace_for_device(device)
    shape = _size(_size_or_args(args, size, "ones"), "ones")
    return _finish(_on_device(xp.ones(shape, _float_dtype(dtype)), device), requires_grad)


def empty(*args, size=None, dtype=None, requires_grad=False, device="cpu") -> Tensor:
    xp = _backend.namespace_for_device(device)
    shape = _size(_size_or_args(args, size, "empty"), "empty")
    return _finish(_on_device(xp.empty(shape, _float_dtype(dtype)), device), requires_grad)


def full(size, fill_value, dtype=None, requires_grad=False, device="cpu") -> Tensor:
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from it if not given)."""
    if isinstance(fill_value, Tensor):
        if fill_value.ndim:
            raise RuntimeError(
                f"full(): fill_value must be a number or a 0-d tensor, got a tensor of shape "
                f"{list(fill_value.shape)}"
            )
        fill_value = fill_value.item()
    if not isinstance(fill_value, (bool, int, float, complex, np.number, np.bool_)):
        raise TypeError(
            f"full(): argument 'fill_value' (position 2) must be Number, not "
            f"{type(fill_value).__name__}"
        )
    if dtype is None:
        if isinstance(fill_value, complex):
            dtype = np.result_type(_dtypes.get_default_dtype(), np.complex64)
        elif isinstance(fill_value, bool):
            dtype = _dtypes.bool_
        elif isinstance(fill_value, int):
            dtype = _dtypes.int64
        else:
            dtype = _dtypes.get_default_dtype()
    xp = _backend.namespace_for_device(device)
    size = _size((size,), "full")
    dtype = _dtypes.to_dtype(dtype)
    if dtype.itemsize == 1 and dtype.kind in "fV" and xp is np:  # float8: torch's rounding
        from ._float8 import to_float8  # noqa: PLC0415

        array = to_float8(np.full(size, fill_value, np.float64), dtype)
        return _finish(_on_device(array, device), requires_grad)
    return _finish(_on_device(xp.full(size, fill_value, dtype), device), requires_grad)


def _like(t, dtype):
    return _dtypes.to_dtype(dtype) or t.dtype


def _like_device(t, device):
    """torch's ``*_like`` default device: the input's (a meta tensor gives a meta one)."""
    if device is not None or t._data.__class__ is np.ndarray:  # a CPU input: nothing to do
        return device
    return _backend.device_of(t._data)


def _kept(t, dtype, value):
    """``value`` in ``t``'s shape and strides when ``t`` is dense but not C-ordered (torch's
    ``preserve_format``: Note [Torch's result layouts] in _layout.py), else None."""
    data = t._data
    if type(data) is not np.ndarray or preserve_order(data) == "C":
        return None
    return np.full_like(data, value, _like(t, dtype), "K")


def zeros_like(input, dtype=None, requires_grad=False, device=None) -> Tensor:
    array = _kept(input, dtype, 0)
    if array is None:
        array = np.zeros(input.shape, _like(input, dtype))
    return _finish(_on_device(array, _like_device(input, device)), requires_grad)


def ones_like(input, dtype=None, requires_grad=False, device=None) -> Tensor:
    array = _kept(input, dtype, 1)
    if array is None:
        array = np.ones(input.shape, _like(input, dtype))
    return _finish(_on_device(array, _like_device(input, device)), requires_grad)


def empty_like(input, dtype=None, requires_grad=False, device=None) -> Tensor:
    array = _kept(input, dtype, 0)
    if array is None:
        array = np.empty(input.shape, _like(input, dtype))
    return _finish(_on_device(array, _like_device(input, device)), requires_grad)


def full_like(input, fill_value, dtype=None, requires_grad=False, device=None) -> Tensor:
    array = _kept(input, dtype, fill_value)
    if array is None:
        array = np.full(input.shape, fill_value, _like(input, dtype))
    return _finish(_on_device(array, _like_device(input, device)), requires_grad)


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


# -- random (Note [Random streams] in random.py) ---------------------------------------------

from .random import Generator, default_generator, manual_seed  # noqa: E402


def _rng(generator):
    if generator is None:
        return default_generator.numpy
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a tapegrad.Generator, got {type(generator).__name__}")
    return generator.numpy


def _on_device(array, device):
    if device is None or device == "cpu" or str(device) == "cpu":  # (a str compares fast)
        return array
    if str(device) == "meta":  # shape and dtype only, as torch's meta tensors
        return _backend.meta_array(array.shape, array.dtype)
    return _backend.namespace_for_device(device).asarray(array)


def rand(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform samples in [0, 1), drawn from ``generator`` (default: the default generator).

    >>> import tapegrad as tg
    >>> tg.rand(2, 3, generator=tg.Generator().manual_seed(0)).shape
    tapegrad.Size([2, 3])
    """
    size = _size(_size_or_args(args, size, "rand"), "rand")
    dtype = _float_dtype(dtype)
    if dtype.kind == "c":  # real and imaginary parts uniform in [0, 1), as PyTorch
        data = _rng(generator).random(size + (2,), dtype=np.float64).view(np.complex128)
        data = data[..., 0].astype(dtype)
    else:
        data = _rng(generator).random(size, dtype=np.float64).astype(dtype)
    return _finish(_on_device(data, device), requires_grad)


def randn(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal samples, drawn from ``generator`` (default: the default generator)."""
    size = _size(_size_or_args(args, size, "randn"), "randn")
    dtype = _float_dtype(dtype)
    if dtype.kind == "c":  # real and imaginary parts of variance 1/2 each, as PyTorch
        data = _rng(generator).standard_normal(size + (2,)) * np.sqrt(0.5)
        data = data.view(np.complex128)[..., 0].astype(dtype)
    else:
        data = _rng(generator).standard_normal(size).astype(dtype)
    return _finish(_on_device(data, device), requires_grad)


def _no_extra(kw, op):
    if kw:
        raise TypeError(f"{op}() got an unexpected keyword argument {next(iter(kw))!r}")


def randint(
    *args, size=None, generator=None, dtype=None, device=None, requires_grad=False, **kw
) -> Tensor:
    """Integers in [low, high), int64 by default: ``randint(high, size)`` or
    ``randint(low, high, size)`` (``low=``, ``high=``, ``size=`` as keywords too).

    >>> import tapegrad as tg
    >>> tg.randint(10, (4,)).shape, tg.randint(3, 5, (2,)).dtype
    (tapegrad.Size([4]), dtype('int64'))
    """
    low, high = kw.pop("low", None), kw.pop("high", None)
    _no_extra(kw, "randint")
    args = list(args)
    if size is None and args and isinstance(args[-1], (tuple, list)):
        size = args.pop()
    if low is None and high is None:
        if len(args) == 1:
            low, high = 0, args[0]
        elif len(args) == 2:
            low, high = args
    elif high is None and len(args) == 1:
        high = args[0]
    elif low is None and high is not None:
        low = args[0] if args else 0
    if high is None or size is None or len(args) > 2:
        raise TypeError(
            "randint() expects (high, size) or (low, high, size), e.g. randint(10, (4,)); got "
            f"positional {tuple(args)} with size={size!r}"
        )
    low, high = int(low), int(high)
    if low >= high:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    dtype = _dtypes.to_dtype(dtype) or _dtypes.int64
    data = _rng(generator).integers(low, high, size=_size((size,), "randint"), dtype=np.int64)
    t = _finish(_on_device(np.asarray(data).astype(dtype), device), False)
    return t.requires_grad_(True) if requires_grad else t


def rand_like(input, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    return rand(
        input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad,
        generator=generator, device=_like_device(input, device),
    )  # fmt: skip


def randn_like(input, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    return randn(
        input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad,
        generator=generator, device=_like_device(input, device),
    )  # fmt: skip


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, device=None) -> Tensor:
    """``randint`` with the shape (and by default the dtype) of ``input``."""
    if high is None:
        low, high = 0, low
    return randint(low, high, input.shape, dtype=dtype or input.dtype, generator=generator,
                   device=_like_device(input, device))  # fmt: skip


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A random permutation of ``0 .. n-1`` (int64 by default).

    >>> import tapegrad as tg
    >>> sorted(tg.randperm(4).tolist())
    [0, 1, 2, 3]
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise RuntimeError(f"randperm: n must be a non-negative integer, got {n!r}")
    dtype = _dtypes.to_dtype(dtype) or _dtypes.int64
    data = _rng(generator).permutation(int(n)).astype(dtype)
    t = _finish(_on_device(data, device), False)
    return t.requires_grad_(True) if requires_grad else t


# -- PyTorch's keywords for every creation function (issue 10) -------------------------------


def scalar_tensor(s, *, dtype=None, requires_grad=False, device="cpu", **_):
    """A 0-d tensor holding ``s`` (the default float dtype unless ``dtype`` says otherwise)."""
    value = s.item() if isinstance(s, Tensor) else s
    return tensor(value, dtype=_float_dtype(dtype), requires_grad=requires_grad, device=device)


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
            if dtype.kind != "c" and not _dtypes.is_floating(dtype):  # bfloat16 may
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

__all__ += ["scalar_tensor"]
