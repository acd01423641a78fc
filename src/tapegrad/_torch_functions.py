"""The rest of torch's top level that programs meet: constants (``pi e inf nan newaxis``),
Tensor methods as functions (``torch.detach(x)``, ``torch.is_neg(x)``...), the deprecated
norms JIT kept (``frobenius_norm``, ``nuclear_norm``, ``norm_except_dim``), ``vander``,
``unravel_index``, ``typename``, ``vmap``, and process settings (default device, anomaly
mode, warn-always, flush-denormal).
"""

from __future__ import annotations

import itertools
import math
import operator

import numpy as np

from . import _warn, linalg
from ._device import device as _device
from ._inplace_exports import method_as_function
from .autograd import anomaly as _anomaly
from .func import vmap
from .tensor import Tensor

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None

#: torch's top-level functions that are the Tensor method of the same name, tensor first
METHODS = "absolute adjoint detach ger get_device is_conj is_inference is_neg is_signed".split()


globals().update({_name: method_as_function(_name, "the method") for _name in METHODS})


def _tensor(op, name, t):
    if not isinstance(t, Tensor):
        raise TypeError(
            f"{op}(): argument '{name}' (position 1) must be Tensor, not {type(t).__name__}"
        )


def _deprecated(name, instead):
    _warn.warn(
        f"at::{name} is deprecated and it is just left for JIT compatibility. It will be "
        f"removed in a future PyTorch release. Please use `{instead}` instead"
    )


def frobenius_norm(input, dim, keepdim=False):
    """``linalg.vector_norm(input, 2, dim, keepdim)``, with torch's deprecation warning."""
    _tensor("frobenius_norm", "input", input)
    _deprecated("frobenius_norm", "linalg.vector_norm(A, 2., dim, keepdim)")
    return linalg.vector_norm(input, 2, dim, keepdim)


def nuclear_norm(input, dim=None, keepdim=False):
    """``linalg.matrix_norm(input, 'nuc', dim, keepdim)``, over the last two dims without
    ``dim`` (torch's two overloads: ``nuclear_norm(x, keepdim)``, ``(x, dim, keepdim)``)."""
    if isinstance(dim, bool):  # nuclear_norm(x, True): the first overload's keepdim
        dim, keepdim = None, dim
    _tensor("nuclear_norm", "input", input)
    _deprecated("nuclear_norm", "linalg.matrix_norm(A, 'nuc', dim, keepdim)")
    return linalg.matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim)


def norm_except_dim(v, pow=2, dim=0):  # noqa: A002 - torch's keyword
    """The ``pow``-norm over every dim but ``dim``, kept as size-1 dims (weight_norm's
    helper); ``dim=-1`` is the norm of the whole tensor, 0-d."""
    _tensor("norm_except_dim", "v", v)
    if dim == -1:
        return linalg.vector_norm(v, pow)
    return linalg.vector_norm(v, pow, [d for d in range(v.ndim) if d != dim], keepdim=True)


def vander(x, N=None, increasing=False):  # noqa: N803 - torch's keyword
    """Columns ``x**(N-1) ... x**0`` (``x**0 ... x**(N-1)`` with ``increasing``); 1-D ``x``.

    Raises:
        RuntimeError: ``x`` is not 1-D or ``N`` is negative.
    """
    _tensor("vander", "x", x)
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if n < 2:  # linalg.vander needs two columns; x**0 alone is ones, a constant (as torch's)
        v = Tensor._wrap(np.ones((x.shape[0], n), dtype=x.dtype))
    else:
        v = linalg.vander(x, N=n)
    if v.dtype.kind == "b" or (v.dtype.kind in "iu" and v.dtype != np.int64):
        v = v.to(np.int64)  # torch: integral vanders are int64
    return v if increasing else v.flip(-1)


def unravel_index(indices, shape):
    """The coordinates of flat ``indices`` in ``shape``: a tuple of int64 tensors (torch's
    floor-divide and modulo; no bounds check, as torch).

    Raises:
        TypeError: ``indices`` are not integers, or ``shape`` is not int(s).
        ValueError: a negative size in ``shape``.
    """
    if not isinstance(indices, Tensor):
        raise TypeError(f"unravel_index(): indices must be a Tensor, not {type(indices).__name__}")
    if indices.dtype.kind not in "iu":
        raise TypeError(
            f"expected 'indices' to be integer dtype, but got {_torch_name(indices.dtype)}"
        )
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    elif not isinstance(shape, (tuple, list)):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    for size in shape:
        if not isinstance(size, (int, np.integer)):
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(size)}")
    if any(size < 0 for size in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {tuple(shape)}")
    coefs = list(itertools.accumulate(reversed((*shape[1:], 1)), operator.mul))[::-1]
    flat = indices.to(np.int64).unsqueeze(-1)
    res = flat.floor_divide(Tensor._wrap(np.array(coefs, np.int64)))
    res = res % Tensor._wrap(np.array(shape, np.int64))
    return res.unbind(-1)


def _torch_name(dtype):
    return f"torch.{np.dtype(dtype).name}"


def typename(obj) -> str:
    """The type of ``obj`` as a string: ``x.type()`` for a tensor, else ``module.qualname``
    (``"int"``, ``"numpy.ndarray"``), as torch's."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def is_distributed(input) -> bool:  # noqa: A002 - torch's keyword
    """False: a tapegrad tensor lives in one process (``tg.distributed`` sends copies)."""
    _tensor("is_distributed", "input", input)
    return False


def init_num_threads() -> None:
    """Nothing to set up: tapegrad's thread pool starts on first use."""


def get_device_module(device=None):
    """The module of ``device``'s type (``tg.cpu``, ``tg.cuda``, ``tg.mps``...); without
    one, the current accelerator's, else ``tg.cpu``, as torch.

    Raises:
        RuntimeError: ``device`` is not a device or str, names no device type, or a type
            with no module (``"meta"``), with torch's messages.
    """
    import tapegrad

    if isinstance(device, str):  # a tg.device is a str too
        kind = _device(device).type
    elif device is None:
        kind = (tapegrad.accelerator.current_accelerator() or _device("cpu")).type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or None")
    module = getattr(tapegrad, kind, None)
    if module is None:
        raise RuntimeError(
            f"Device '{kind}' does not have a corresponding module registered as 'torch.{kind}'."
        )
    return module


# -- settings -------------------------------------------------------------------------------

_STATE = {"warn_always": False}


def get_default_device():
    """``device(type='cpu')``: tapegrad creates tensors on the CPU unless told otherwise."""
    return _device("cpu")


def set_default_device(device):
    """Accepts ``"cpu"`` (or None, torch's reset), which is already the default.

    Raises:
        RuntimeError: any other device: tapegrad's creation functions take ``device=``
            explicitly, so a default elsewhere would be silently ignored.
    """
    if device is None or _device(device).type == "cpu":
        return
    raise RuntimeError(
        f"set_default_device: tapegrad creates tensors on the CPU by default and cannot "
        f"change that default (got {device!r}); pass device= to the creation functions "
        "or move tensors with .to(device)"
    )


def set_flush_denormal(mode) -> bool:
    """Returns False, torch's answer where flushing denormals is unsupported: NumPy keeps
    the CPU's floating point modes as they are."""
    return False


def set_warn_always(b) -> None:
    """Remembered and reported by :func:`is_warn_always_enabled` (tapegrad's warnings go
    through Python's ``warnings`` filters, which decide how often they show)."""
    _STATE["warn_always"] = bool(b)


def is_warn_always_enabled() -> bool:
    return _STATE["warn_always"]


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on (``tg.autograd.set_detect_anomaly``)."""
    return _anomaly.is_anomaly_enabled()


def is_anomaly_check_nan_enabled() -> bool:
    return _anomaly._STATE["check_nan"]


def set_anomaly_enabled(enabled, check_nan=True) -> None:
    """``tg.autograd.set_detect_anomaly(enabled, check_nan)`` as a plain setter."""
    _anomaly._set(enabled, check_nan)


__all__ = [
    "pi", "e", "inf", "nan", "newaxis", *METHODS, "frobenius_norm", "nuclear_norm",
    "norm_except_dim", "vander", "unravel_index", "typename", "vmap", "is_distributed",
    "init_num_threads", "get_device_module", "get_default_device",
    "set_default_device", "set_flush_denormal", "set_warn_always", "is_warn_always_enabled",
    "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled",
]  # fmt: skip
