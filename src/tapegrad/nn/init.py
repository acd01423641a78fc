"""Parameter initialisation, in place, with PyTorch's formulas and a seedable generator.

Each function writes into ``tensor._data`` (no graph is recorded), bumps the
tensor's version counter, and returns the tensor. Random ones draw from
``generator`` (a ``tg.Generator``), by default ``tg.default_generator``, so
``tg.manual_seed`` makes model construction reproducible.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..creation import default_generator

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "constant_",
    "zeros_",
    "ones_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "trunc_normal_",
    "orthogonal_",
    "dirac_",
    "eye_",
    "sparse_",
    # torch's deprecated spellings (Note [Deprecated init names])
    "uniform",
    "normal",
    "constant",
    "eye",
    "dirac",
    "xavier_uniform",
    "xavier_normal",
    "kaiming_uniform",
    "kaiming_normal",
    "orthogonal",
    "sparse",
]


def _rng(generator):
    return (generator or default_generator).numpy


def _write(tensor, values, op):
    tensor._data[...] = values
    tensor._vc.bump(op)
    return tensor


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity`` (PyTorch's table).

    >>> round(calculate_gain('relu'), 4)
    1.4142
    """
    linear = (
        "linear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "sigmoid",
    )
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _fans(tensor):
    shape = tensor._data.shape
    if len(shape) < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with samples of U(a, b)."""
    values = _rng(generator).uniform(a, b, size=tensor._data.shape)
    return _write(tensor, values, "uniform_")


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with samples of N(mean, std²)."""
    values = _rng(generator).normal(mean, std, size=tensor._data.shape)
    return _write(tensor, values, "normal_")


def constant_(tensor, val):
    return _write(tensor, val, "constant_")


def zeros_(tensor):
    return _write(tensor, 0, "zeros_")


def ones_(tensor):
    return _write(tensor, 1, "ones_")


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(−a, a) with a = gain·√(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std²) with std = gain·√(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _calculate_fan_in_and_fan_out(tensor):
    """torch's private helper, which ported ``reset_parameters`` code calls: (fan_in, fan_out)."""
    return _fans(tensor)


def _calculate_correct_fan(tensor, mode):
    """The fan ``mode`` names ("fan_in" or "fan_out", any case), as torch's helper."""
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _fans(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _kaiming_std(tensor, a, mode, nonlinearity):
    """gain / sqrt(fan); None (after torch's warning) for a tensor with a zero-size dim."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(−b, b) with b = gain·√(3 / fan) (He et al.); PyTorch's Linear/Conv use a = √5."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor  # zero-element tensor: nothing to fill
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std²) with std = gain / √fan."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)


def _norm_cdf(x: float) -> float:
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with samples of N(mean, std²) conditioned on [a, b] (torch's two samplers).

    When [a, b] holds more than 30% of the normal's mass, out-of-range draws are redrawn;
    otherwise uniform proposals on [a, b] are accepted with the normal's density relative
    to its peak in [a, b]. Both give the exact truncated normal.

    >>> import tapegrad as tg
    >>> w = trunc_normal_(tg.empty(3, 5), std=0.02, a=-0.04, b=0.04)
    >>> bool((w.abs() <= 0.04).all())
    True
    """
    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
            "The distribution of values may be incorrect.",
            stacklevel=2,
        )
    rng = _rng(generator)
    shape = tensor._data.shape
    dtype = tensor._data.dtype
    # Bounds in the tensor's dtype, so the rejection agrees with the values it stores.
    lo, hi = (float(np.asarray(v, dtype)) for v in (a, b))
    if _norm_cdf((b - mean) / std) - _norm_cdf((a - mean) / std) > 0.3:
        values = rng.normal(mean, std, size=shape).astype(dtype)
        bad = (values < lo) | (values > hi)
        while bad.any():
            values[bad] = rng.normal(mean, std, size=int(bad.sum())).astype(dtype)
            bad = (values < lo) | (values > hi)
    else:
        mode = max(a, min(mean, b))
        log_peak = -0.5 * ((mode - mean) / std) ** 2
        values = np.empty(shape, np.float64)
        pending = np.ones(shape, bool)
        while pending.any():
            n = int(pending.sum())
            cand = rng.uniform(a, b, size=n)
            log_pdf = -0.5 * ((cand - mean) / std) ** 2 - log_peak
            take = np.log(rng.uniform(size=n)) <= log_pdf
            idx = np.flatnonzero(pending)[take]
            values.flat[idx] = cand[take]
            pending.flat[idx] = False
        values = np.clip(values.astype(dtype), lo, hi)
    return _write(tensor, values, "trunc_normal_")


def orthogonal_(tensor, gain=1, generator=None):
    """Fill with a (semi-)orthogonal matrix times ``gain`` (Saxe et al. 2013).

    The tensor is viewed as ``(rows, numel // rows)``; Q of a Gaussian matrix's QR, its
    columns signed by ``sign(diag(R))`` so Q is Haar-distributed. Rows (or columns, the
    shorter side) are orthonormal: ``W Wᵀ = gain² I`` when rows <= cols.

    Raises:
        ValueError: for a tensor with fewer than 2 dimensions.
    """
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _rng(generator).normal(0.0, 1.0, size=(rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _write(tensor, (q * gain).reshape(tensor._data.shape), "orthogonal_")


def dirac_(tensor, groups=1):
    """Fill a 3-, 4- or 5-d conv weight with the Dirac delta (identity per group).

    Raises:
        ValueError: for another number of dimensions, or ``size(0)`` not divisible by groups.
    """
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = sizes[0] // groups
    values = np.zeros(sizes, tensor._data.dtype)
    centre = tuple(n // 2 for n in sizes[2:])
    for g in range(groups):
        for d in range(min(per_group, sizes[1])):
            values[(g * per_group + d, d) + centre] = 1
    return _write(tensor, values, "dirac_")


def eye_(tensor):
    """Fill a 2-d tensor with the identity matrix (as many ones as fit).

    Raises:
        ValueError: for a tensor that is not 2-d.
    """
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _write(tensor, np.eye(*tensor.shape), "eye_")


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """N(0, std²) with ``ceil(sparsity * rows)`` random entries of each column set to zero.

    As torch, the values come from ``generator`` and the zeroed rows from the default
    generator (torch's ``randperm`` there takes no generator).

    Raises:
        ValueError: for a tensor that is not 2-d.
    """
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    values = _rng(generator).normal(0.0, std, size=(rows, cols))
    perm_rng = default_generator.numpy
    for col in range(cols):
        values[perm_rng.permutation(rows)[:num_zeros], col] = 0
    return _write(tensor, values, "sparse_")


# Note [Deprecated init names]
# torch keeps the pre-0.4 names without the trailing underscore; each warns (FutureWarning,
# at the caller's line) and runs the in-place function. Programs ported from old code call
# them, so they are rows here rather than errors.
def _deprecated(fn):
    new_name = fn.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(
            f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.",
            FutureWarning,
            stacklevel=2,
        )
        return fn(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    deprecated_init.__doc__ = f"Deprecated: use :func:`{new_name}` (warns FutureWarning)."
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)


# torch's private no-grad helpers, which copied init code imports (tapegrad's fills never
# record a graph, so they are the public functions)
def _no_grad_uniform_(tensor, a, b, generator=None):
    return uniform_(tensor, a, b, generator)


def _no_grad_normal_(tensor, mean, std, generator=None):
    return normal_(tensor, mean, std, generator)


def _no_grad_trunc_normal_(tensor, mean, std, a, b, generator=None):
    return trunc_normal_(tensor, mean, std, a, b, generator)


def _no_grad_fill_(tensor, val):
    return constant_(tensor, val)


def _no_grad_zero_(tensor):
    return zeros_(tensor)
