"""nn-private fused ops: linear, softmax, log_softmax, erf, gelu, silu, constant pad, embedding.

Each is one Node whose backward is written in tapegrad ops, so ``create_graph``
gives higher derivatives. They live here, not in ``tapegrad.ops``, so that
``nn.functional`` can later point at the core ops with the same names.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.graph import make_result
from ..tensor import Tensor

try:  # SciPy's erf is exact and vectorised; without it fall back to math.erf per element.
    from scipy.special import erf as _erf_array
except ImportError:  # pragma: no cover - scipy is a test dependency
    _erf_vec = np.vectorize(math.erf, otypes=[np.float64])

    def _erf_array(x):
        return _erf_vec(x).astype(x.dtype, copy=False)


def linear(x, w, b=None):
    """y = x @ wᵀ + b for x (*, in), w (out, in), b (out,).

    dx = g @ w,  dw = gᵀ @ x (over all leading dims),  db = Σ g.
    """
    xd, wd = x.data, w.data
    out = np.matmul(xd, wd.T)
    if b is not None:
        out += b.data
    need_x, need_w = x._rg, w._rg
    need_b = b is not None and b._rg
    x_shape = xd.shape
    n_in, n_out = wd.shape[1], wd.shape[0]

    def backward(g):
        gx = gw = gb = None
        if need_x:
            gx = g @ w
        if need_w or need_b:
            g2 = g.reshape(-1, n_out) if len(x_shape) != 2 else g
            if need_w:
                x2 = x.reshape(-1, n_in) if len(x_shape) != 2 else x
                gw = g2.mT @ x2
            if need_b:
                gb = g2.sum(dim=0)
        return gx, gw, gb

    saved = tuple(t for t, need in ((w, need_x), (x, need_w)) if need)
    return make_result(out, (x, w, b), backward, "AddmmBackward", saved=saved)


def _softmax_array(xd, dim):
    e = np.exp(xd - xd.max(axis=dim, keepdims=True))
    e /= e.sum(axis=dim, keepdims=True)
    return e


def softmax(x, dim):
    """exp(x) / Σ exp(x) along ``dim``.  dx = out ⊙ (g − Σ g ⊙ out)."""

    def backward(g, out):
        return (out * (g - (g * out).sum(dim=dim, keepdim=True)),)

    return make_result(_softmax_array(x.data, dim), (x,), backward, "SoftmaxBackward",
                       save_output=True)


def log_softmax(x, dim):
    """x − logsumexp(x) along ``dim``.  dx = g − exp(out) ⊙ Σ g."""
    xd = x.data
    shifted = xd - xd.max(axis=dim, keepdims=True)
    out = shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))

    def backward(g, out):
        return (g - out.exp() * g.sum(dim=dim, keepdim=True),)

    return make_result(out, (x,), backward, "LogSoftmaxBackward", save_output=True)


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def erf(x):
    """The error function.  d/dx = 2/√π · exp(−x²)."""

    def backward(g):
        return (g * ((x * x) * -1.0).exp() * _TWO_OVER_SQRT_PI,)

    return make_result(_erf_array(x.data), (x,), backward, "ErfBackward", saved=(x,))


def gelu(x, approximate="none"):
    """x·Φ(x) (``approximate='tanh'``: the tanh formula, composed of differentiable ops).

    Exact form: d/dx = Φ(x) + x·φ(x), φ the standard normal density.
    """
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
        return x * 0.5 * (inner.tanh() + 1.0)
    if approximate != "none":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    xd = x.data
    out = xd * (0.5 * (1.0 + _erf_array(xd * _INV_SQRT2)))

    def backward(g):
        cdf = (erf(x * _INV_SQRT2) + 1.0) * 0.5
        pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
        return (g * (cdf + x * pdf),)

    return make_result(out, (x,), backward, "GeluBackward", saved=(x,))


def silu(x):
    """x·σ(x).  d/dx = σ(x)·(1 + x·(1 − σ(x)))."""
    xd = x.data
    z = np.exp(-np.abs(xd))  # e^-|x| never overflows
    s = np.where(xd >= 0, 1.0 / (1.0 + z), z / (1.0 + z)).astype(xd.dtype, copy=False)

    def backward(g):
        sig = x.sigmoid()
        return (g * sig * (x * (1.0 - sig) + 1.0),)

    return make_result(xd * s, (x,), backward, "SiluBackward", saved=(x,))


def pad(x, widths, value=0.0):
    """Constant padding; a negative width crops. ``widths``: one (before, after) per dim.

    The adjoint of padding is cropping and vice versa, so dx = pad(g, −widths).
    """
    xd = x.data
    crop = tuple(
        slice(-min(b, 0), n + min(a, 0)) for (b, a), n in zip(widths, xd.shape, strict=True)
    )
    grow = [(max(b, 0), max(a, 0)) for b, a in widths]
    out = xd[crop]
    if any(b or a for b, a in grow):
        out = np.pad(out, grow, mode="constant", constant_values=value)
    else:
        out = out.copy()
    back = tuple((-b, -a) for b, a in widths)

    def backward(g):
        return (pad(g, back, 0.0),)

    return make_result(out, (x,), backward, "ConstantPadNdBackward")


def embedding(idx, weight, padding_idx=None):
    """Rows ``weight[idx]``.  dweight = rows of g added at ``idx`` (none at ``padding_idx``)."""
    out = weight.data[idx]
    n_rows = weight.data.shape[0]

    def backward(g):
        return (_embedding_backward(g, idx, n_rows, padding_idx),)

    return make_result(out, (weight,), backward, "EmbeddingBackward")


def _embedding_backward(g, idx, n_rows, padding_idx):
    gd = g.data
    dim = gd.shape[-1]
    flat_idx = idx.reshape(-1)
    flat_g = gd.reshape(-1, dim)
    if padding_idx is not None:
        keep = flat_idx != padding_idx
        flat_idx, flat_g = flat_idx[keep], flat_g[keep]
    out = np.zeros((n_rows, dim), gd.dtype)
    np.add.at(out, flat_idx, flat_g)

    def backward(v):
        if padding_idx is not None:  # the padding row received no gradient
            keep = (np.arange(n_rows) != padding_idx)[:, None].astype(gd.dtype)
            v = v * Tensor._wrap(keep)
        return (embedding(idx, v),)

    return make_result(out, (g,), backward, "EmbeddingBackwardBackward")
