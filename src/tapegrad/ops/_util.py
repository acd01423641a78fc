"""Small helpers shared by the op families: operand coercion and argument checks."""

from __future__ import annotations

import functools

import numpy as np

from .. import _dtypes
from ..autograd.graph import sum_to, sum_to_array
from ..tensor import Tensor, _as_array, _init

_SCALARS = (int, float, bool, complex)


def as_tensor_or_scalar(x, op: str):
    """Return ``(tensor_or_None, data)`` for an operand.

    Python scalars stay Python scalars (weak: float32 * 2.0 stays float32);
    arrays and NumPy scalars become constant Tensors.
    """
    if isinstance(x, Tensor):
        if x.__class__ is not Tensor and x.is_sparse and op in ("add", "sub"):  # as PyTorch
            x = x.to_dense()
        return x, x._data
    if isinstance(x, _SCALARS):
        return None, x
    if isinstance(x, (np.ndarray, np.generic, list, tuple)):
        t = constant(x)
        return t, t._data
    raise TypeError(f"{op}: unsupported operand type {type(x).__name__}")


def constant(x, dtype=None) -> Tensor:
    """A tensor holding a copy of ``x``, its dtype inferred as ``tg.tensor`` does (the
    ``Tensor(...)`` constructor is PyTorch's legacy one, which always makes floats)."""
    t = object.__new__(Tensor)
    _init(t, _as_array(x, dtype, "cpu"))
    return t


def as_tensor(x, op: str) -> Tensor:
    """Coerce ``x`` to a Tensor (scalars become 0-d tensors of a fitting dtype)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, _SCALARS + (np.ndarray, np.generic, list, tuple)):
        return constant(x)
    raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")


def float_data(t: Tensor):
    """``t._data``, cast to the default float dtype when it is an integer or bool array;
    a bfloat16 array as float32 :class:`~tapegrad._dtypes.Opmath`, which the op's result
    carries and Tensor._wrap rounds to bfloat16 once (Note [bfloat16 opmath])."""
    data = t._data
    if data.dtype.kind in "fc":
        if data.dtype.itemsize == 1:  # float8_e5m2 (ml_dtypes gives it kind "f")
            _no_float8(data.dtype)
        return data
    if data.dtype.kind == "V":
        if data.dtype.itemsize == 1:
            _no_float8(data.dtype)
        return _dtypes.opmath(data)
    return data.astype(_dtypes.get_default_dtype())


def _no_float8(dtype):
    """torch has no float8 arithmetic on CPU (Note [float8 as torch] in _float8.py)."""
    import inspect  # noqa: PLC0415 - error path only

    from .. import _float8  # noqa: PLC0415

    caller = inspect.stack()[2].function.lstrip("_")  # the op that asked for float data
    _float8.not_implemented(caller, dtype)


def kernel_result(out, x):
    """A kernel's result ``out`` as an array of its input ``x``'s dtype, and of its class
    where ``x`` is :class:`~tapegrad._dtypes.Opmath` (``np.where`` and ``np.asarray`` drop
    the subclass that rounds a bfloat16 op's result: Note [bfloat16 opmath])."""
    out = np.asarray(out, dtype=x.dtype)
    return out if x.__class__ is not _dtypes.Opmath else out.view(_dtypes.Opmath)


def bfloat16_in_float32(fn):
    """``fn``, a function composed of tapegrad ops, run on float32 copies of its bfloat16
    tensor arguments when the first one is bfloat16, its Tensor results cast back to
    bfloat16 once. The casts are ops of the graph, so the backward runs in float32 too and
    each input's gradient rounds once (Note [bfloat16 opmath]). Other inputs pay one dtype
    test."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        first = args[0] if args else None
        if first.__class__ is not Tensor or first._data.dtype.kind != "V":
            return fn(*args, **kwargs)
        f32 = _dtypes.float32
        args = tuple(_bf16_to(a, f32) for a in args)
        kwargs = {k: _bf16_to(v, f32) for k, v in kwargs.items()}
        return _f32_to(fn(*args, **kwargs), first._data.dtype)

    return wrapper


def _bf16_to(x, dtype):
    if isinstance(x, Tensor) and x._data.dtype.kind == "V":
        return x.to(dtype)
    return x


def _f32_to(out, dtype):
    # every function bfloat16_in_float32 wraps returns one Tensor
    return out.to(dtype) if out._data.dtype == _dtypes.float32 else out


def reduce_grad(g, t: Tensor):
    """``g`` summed back to ``t``'s shape (undoing broadcasting) and cast to ``t``'s dtype."""
    g = sum_to(g, t._data.shape)
    if g._data.dtype != t._data.dtype:
        g = g._cast(t._data.dtype)
    return g


def reduce_grad_array(g, t: Tensor):
    """:func:`reduce_grad` on an array rule's gradient array (Note [Array backward]): the
    same sums; a cast (rare: mixed dtypes) as the Tensor op makes it."""
    data = t._data
    g = sum_to_array(g, data.shape)
    if g.dtype != data.dtype:
        g = Tensor._wrap(g)._cast(data.dtype)._data
    return g


class BroadcastError(RuntimeError, ValueError):
    """Shapes that do not broadcast: a RuntimeError, as PyTorch raises (and a ValueError,
    as tapegrad raised before)."""


def broadcast_error(op: str, *shapes) -> ValueError:
    joined = " and ".join(str(list(s)) for s in shapes)
    return BroadcastError(f"{op}: shapes {joined} cannot be broadcast together")


def normalize_dims(dim, ndim: int, op: str) -> tuple:
    """``dim`` (None, int or sequence) as a sorted tuple of non-negative axes."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        dims = (dim,)
    else:
        dims = tuple(dim)
    n = max(ndim, 1)
    out = []
    for d in dims:
        if not isinstance(d, (int, np.integer)) or not -n <= d < n:
            raise IndexError(
                f"{op}: dimension {d!r} out of range for a tensor with {ndim} dims "
                f"(expected in [{-n}, {n - 1}])"
            )
        d = int(d) % n
        if d in out:
            raise RuntimeError(f"{op}: dimension {d} appears more than once in dim={dim!r}")
        out.append(d)
    if ndim == 0:
        return ()
    return tuple(sorted(out))


def shape_arg(args, op: str) -> tuple:
    """Accept ``f(2, 3)`` and ``f((2, 3))`` alike."""
    if len(args) == 1 and type(args[0]) is tuple:  # the hot path: a tuple of plain ints
        for a in args[0]:
            if type(a) is not int:
                break
        else:
            return args[0]
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    out = []
    for a in args:
        if isinstance(a, Tensor):
            a = int(a.item())
        if not isinstance(a, (int, np.integer)):
            raise TypeError(f"{op}: sizes must be integers, got {a!r}")
        out.append(int(a))
    return tuple(out)
