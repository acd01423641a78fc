"""More of ``torch.nn.functional``: group/instance/RMS/local-response norm, pixel
(un)shuffle, bilinear and embedding_bag, composed from fused and core ops."""

from __future__ import annotations

import numpy as np

from ..ops import _dtype_errors
from ..ops.einsum import einsum
from ..ops.joining import pad as _pad
from ..ops.joining import stack
from ..tensor import Tensor
from . import _norm_ops
from ._fused import embedding as _embedding

__all__ = [
    "group_norm",
    "instance_norm",
    "rms_norm",
    "local_response_norm",
    "pixel_shuffle",
    "pixel_unshuffle",
    "bilinear",
    "embedding_bag",
]


def _channel_view(t, ndim):
    return t.reshape((t.shape[0],) + (1,) * (ndim - 2))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise (N, C, *) over each group of C / num_groups channels (and all other dims),
    then an affine per channel."""
    if input.ndim < 2:
        raise RuntimeError(
            f"group_norm: Expected at least 2 dimensions for input tensor but received {input.ndim}"
        )
    n, c = input.shape[:2]
    if c % num_groups:
        raise RuntimeError(
            f"group_norm: Expected number of channels in input to be divisible by num_groups, "
            f"but got input of shape {list(input.shape)} and num_groups={num_groups}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != (c,):
            raise RuntimeError(f"group_norm: {name} must have shape [{c}], got {list(t.shape)}")
    xr = input.reshape((n, num_groups, -1))
    out = _norm_ops.normalize(xr, None, None, (2,), (0, 1, 2), (1, 1, 1), eps)[0]
    out = out.reshape(input.shape)
    if weight is not None:
        out = out * _channel_view(weight, input.ndim)
    if bias is not None:
        out = out + _channel_view(bias, input.ndim)
    return out


def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats=True,
    momentum=0.1,
    eps=1e-5,
):
    """Normalise each (sample, channel) of (N, C, *) over its spatial dims."""
    if input.ndim < 3:
        raise ValueError(
            f"instance_norm: expected an input with a batch, channel and spatial dims, got "
            f"shape {list(input.shape)}"
        )
    c = input.shape[1]
    spatial = tuple(range(2, input.ndim))
    view = (1, c) + (1,) * len(spatial)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError(
                "instance_norm: Expected running_mean and running_var to be defined when "
                "use_input_stats is false"
            )
        invstd = Tensor._wrap((1.0 / np.sqrt(running_var._data + eps)).astype(input.dtype))
        out = (input - running_mean.detach().reshape(view)) * invstd.reshape(view)
        if weight is not None:
            out = out * weight.reshape(view)
        if bias is not None:
            out = out + bias.reshape(view)
        return out
    if int(np.prod(input.shape[2:])) <= 1:
        raise ValueError(
            f"Expected more than 1 spatial element when training, got input size "
            f"{list(input.shape)}"
        )
    param_axes = (0,) + spatial
    if (running_mean is None) != (running_var is None):  # as torch
        raise ValueError(
            "instance_norm: running_mean and running_var must either both be None or neither "
            "be None"
        )
    out, mean, var = _norm_ops.normalize(input, weight, bias, spatial, param_axes, view, eps)
    if running_mean is not None or running_var is not None:
        count = int(np.prod(input.shape[2:]))
        if running_mean is not None:
            running_mean._data *= 1.0 - momentum
            running_mean._data += momentum * mean.reshape(-1, c).mean(0)
            running_mean._vc.bump("instance_norm")
        if running_var is not None:
            unbiased = var.reshape(-1, c).mean(0) * (count / (count - 1))
            running_var._data *= 1.0 - momentum
            running_var._data += momentum * unbiased
            running_var._vc.bump("instance_norm")
    return out


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / √(mean(x²) + eps) over the trailing ``normalized_shape`` dims, times ``weight``;
    ``eps`` defaults to the dtype's machine epsilon (as torch)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or input.ndim < k or tuple(input.shape[input.ndim - k :]) != shape:
        raise RuntimeError(
            f"rms_norm: normalized_shape {list(shape)} does not match the trailing dims of "
            f"input of shape {list(input.shape)}"
        )
    if eps is None:
        eps = float(np.finfo(input.dtype).eps)  # dtype, not _data: batched under vmap
    dims = tuple(range(-k, 0))
    out = input * ((input * input).mean(dim=dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + α/size · Σ_{window of ``size`` channels} x²)^β, as torch."""
    if input.ndim < 3:
        raise ValueError(
            f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)"
        )
    if input.numel() == 0:
        return input
    sq = input * input
    c = input.shape[1]
    widths = [0, 0] * (input.ndim - 2) + [size // 2, (size - 1) // 2]
    padded = _pad(sq, widths)
    total = padded.narrow(1, 0, c)
    for j in range(1, size):
        total = total + padded.narrow(1, j, c)
    div = (total * (alpha / size) + k) ** beta
    return input / div


def pixel_shuffle(input, upscale_factor):
    """(*, C·r², H, W) → (*, C, H·r, W·r)."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(
            "pixel_shuffle expects input to have at least 3 dimensions, but got input with "
            f"{input.ndim} dimension(s)"
        )
    if input.shape[-3] % (r * r):
        raise RuntimeError(
            f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
            f"square of upscale_factor, but input.size(-3)={input.shape[-3]}"
            f" is not divisible by {r * r}"
        )
    *lead, c, h, w = input.shape
    oc = c // (r * r)
    x = input.reshape(tuple(lead) + (oc, r, r, h, w))
    n = len(lead)
    x = x.permute(tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return x.reshape(tuple(lead) + (oc, h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H·r, W·r) → (*, C·r², H, W)."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(
            "pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
            f"{input.ndim} dimension(s)"
        )
    if input.shape[-2] % r or input.shape[-1] % r:
        raise RuntimeError(
            f"pixel_unshuffle expects height and width to be divisible by downscale_factor "
            f"{r}, got input of shape {list(input.shape)}"
        )
    *lead, c, h, w = input.shape
    x = input.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    n = len(lead)
    x = x.permute(tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return x.reshape(tuple(lead) + (c * r * r, h // r, w // r))


def bilinear(input1, input2, weight, bias=None):
    """y_o = x1ᵀ A_o x2 + b_o for weight A (out, in1, in2)."""
    for name, t in (("input1", input1), ("input2", input2), ("weight", weight), ("bias", bias)):
        if not isinstance(t, Tensor) and (t is not None or name != "bias"):
            raise TypeError(f"bilinear: {name} must be a Tensor, got {type(t).__name__}")
    if (
        weight.ndim != 3
        or input1.shape[-1] != weight.shape[1]
        or input2.shape[-1] != weight.shape[2]
    ):
        raise RuntimeError(
            f"bilinear: input1 {list(input1.shape)}, input2 {list(input2.shape)} and weight "
            f"{list(weight.shape)} don't match"
        )
    named = [("input1", input1), ("input2", input2), ("weight", weight), ("bias", bias)]
    named = [(k, t) for k, t in named if t is not None]
    if len({t._data.dtype for _, t in named}) > 1:
        got = ", ".join(f"{k}: {_dtype_errors.cpp(t._data.dtype)}" for k, t in named)
        raise RuntimeError(f"All tensors must have the same dtype, got {got}")
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias


def _check_offsets(off, size):
    """torch's checks of a 1-D ``embedding_bag``'s offsets (Python's slicing would accept bad
    ones silently)."""
    if off and off[0] != 0:
        raise RuntimeError(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
            f"from position 0. However, got {off[0]}"
        )
    if off and off[-1] > size:
        raise RuntimeError(
            f"offsets[-1] can not be greater than input's length {size} but got offsets[-1] "
            f"of {off[-1]}"
        )
    if any(b < a for a, b in zip(off, off[1:])):
        raise RuntimeError(f"embedding_bag: offsets must be non-decreasing, got {off}")


def embedding_bag(
    input,
    weight,
    offsets=None,
    max_norm=None,
    norm_type=2,
    scale_grad_by_freq=False,
    mode="mean",
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=None,
):
    """Sum, mean or max of the embeddings of each bag: rows of a 2-D ``input``, or the
    slices of a 1-D ``input`` that start at ``offsets``."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
    if max_norm is not None or scale_grad_by_freq:
        raise NotImplementedError("embedding_bag: max_norm and scale_grad_by_freq")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub."
        )
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    idx = input._data if isinstance(input, Tensor) else np.asarray(input)
    n = weight.shape[0]
    if padding_idx is not None and padding_idx < 0:
        padding_idx += n
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None")
        bounds = [(i * idx.shape[1], (i + 1) * idx.shape[1]) for i in range(idx.shape[0])]
        flat = idx.reshape(-1)
        psw = None if per_sample_weights is None else per_sample_weights.reshape(-1)
    elif idx.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        off = (offsets._data if isinstance(offsets, Tensor) else np.asarray(offsets)).tolist()
        _check_offsets(off, idx.size)
        # as ATen: the last bag runs to the end of input, whatever offsets[-1] says
        off = (off[:-1] if include_last_offset else off) + [idx.size]
        bounds = list(zip(off[:-1], off[1:]))
        flat = idx
        psw = per_sample_weights
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {idx.ndim}")
    if flat.size and (flat.min() < 0 or flat.max() >= n):
        raise RuntimeError(f"embedding_bag: index out of range in self (num_embeddings={n})")
    rows = _embedding(flat.astype(np.int64), weight, padding_idx)
    if psw is not None:
        rows = rows * psw.reshape(-1, 1)
    keep = np.ones(flat.shape, bool) if padding_idx is None else flat != padding_idx
    zero = Tensor._wrap(np.zeros(weight.shape[1], weight._data.dtype))
    bags = []
    for lo, hi in bounds:
        sel = np.nonzero(keep[lo:hi])[0] + lo
        if sel.size == 0:
            bags.append(zero)
            continue
        part = rows[Tensor._wrap(sel)] if sel.size != hi - lo else rows[lo:hi]
        if mode == "sum":
            bags.append(part.sum(0))
        elif mode == "mean":
            bags.append(part.mean(0))
        else:
            bags.append(part.amax(0))
    if not bags:
        return Tensor._wrap(np.zeros((0, weight.shape[1]), weight._data.dtype))
    return stack(bags, 0)


# group_norm's statistics read the data: under vmap, its batching rule (_batch_rules_nn.py).
from ..ops._registry import vmap_hooked as _vmap_hooked  # noqa: E402

group_norm = _vmap_hooked("group_norm", group_norm)
