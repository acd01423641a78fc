"""Recurrent cells: ``lstm_cell``, ``gru_cell``, ``rnn_tanh_cell``, ``rnn_relu_cell``
(PyTorch's ``torch.lstm_cell`` etc.), and the fused pointwise steps behind them.

A recurrent layer runs one cell per time step, so the per-step work is the product:
the input projection of all steps is one GEMM done by the layer (rnn.py); a step is
then one GEMM for the hidden state and one fused pointwise Node (LSTM and GRU), whose
backward reuses the gate activations saved by the forward. Note [Fused cell backward].
"""

from __future__ import annotations

import functools

import numpy as np

from ..autograd.graph import make_result, make_results
from ..grad_mode import STATE
from ..ops._registry import register
from ..ops.joining import cat
from ..tensor import Tensor
from ._fused import linear

__all__ = ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "lstm_pointwise"]


def _sigmoid(a):
    """σ(a) = (1 + tanh(a/2)) / 2: one transcendental pass, no overflow."""
    out = np.tanh(a * a.dtype.type(0.5))
    out *= 0.5
    out += 0.5
    return out


# Note [Fused cell backward]
# The pointwise part of an LSTM/GRU step is one Node. Its backward is written in
# tapegrad ops: under create_graph it recomputes the gate activations from the inputs with
# differentiable ops, so that second derivatives see their dependence on the inputs.
# Without create_graph the same formulas start from the activations the forward saved;
# for the LSTM (the hot one) they then run directly on the arrays, as nothing is
# recorded anyway. All dims are counted from the right (Note [Batched gradients]).


def lstm_pointwise(gx, gh, c):
    """The LSTM step after its two GEMMs: gates = gx + gh (N, 4H) in PyTorch's order
    i, f, g, o; returns ``(h', c')`` with c' = σ(f)·c + σ(i)·tanh(g), h' = σ(o)·tanh(c').

    dc = g_c' + g_h'·σ(o)·(1 − tanh²c');  d gates = [dc·g·i(1−i), dc·c·f(1−f),
    dc·i·(1−g²), g_h'·tanh(c')·o(1−o)];  d c = dc·f.
    """
    a = gx._data + gh._data
    hsz = c._data.shape[-1]
    act = np.tanh(a * _gate_scale(hsz, a.dtype))  # one pass: σ(x) = (1 + tanh(x/2)) / 2
    act[..., : 2 * hsz] += 1
    act[..., : 2 * hsz] *= 0.5
    act[..., 3 * hsz :] += 1
    act[..., 3 * hsz :] *= 0.5
    i, f, g, o = (act[..., k * hsz : (k + 1) * hsz] for k in range(4))
    c_new = f * c._data + i * g
    tc = np.tanh(c_new)
    h_new = o * tc
    need_c = c._rg

    def backward(gh_, gc_):
        if not STATE.enabled:  # the hot path: the same formulas on the saved arrays
            dc = gh_._data * o
            dc *= 1.0 - tc * tc
            dc += gc_._data
            da = np.concatenate(
                [dc * g * (i - i * i), dc * c._data * (f - f * f), dc * i * (1.0 - g * g),
                 gh_._data * tc * (o - o * o)],
                -1,
            )  # fmt: skip
            da = Tensor._wrap(da)
            return da, da, (Tensor._wrap(dc * f) if need_c else None)
        A = gx + gh
        gi_, gf_, gg_, go_ = A.chunk(4, -1)
        I, F, G, O = gi_.sigmoid(), gf_.sigmoid(), gg_.tanh(), go_.sigmoid()
        C = c
        TC = (F * C + I * G).tanh()
        dc = gc_ + gh_ * O * (1.0 - TC * TC)
        da = cat(
            [
                dc * G * I * (1.0 - I),
                dc * C * F * (1.0 - F),
                dc * I * (1.0 - G * G),
                gh_ * TC * O * (1.0 - O),
            ],
            -1,
        )
        return da, da, (dc * F if need_c else None)

    return make_results(
        (h_new, c_new), (gx, gh, c), backward, "LstmCellBackward", saved=(gx, gh, c)
    )


@functools.lru_cache(maxsize=64)
def _gate_scale(hsz, dtype):
    """The per-gate input scale of the one-pass tanh (cached: one constant per shape, so
    tapegrad.jit records it once)."""
    s = np.full(4 * hsz, 0.5, dtype)
    s[2 * hsz : 3 * hsz] = 1.0
    s.flags.writeable = False
    return s


def gru_pointwise(gi, gh, h):
    """The GRU step after its two GEMMs (gates in PyTorch's order r, z, n):
    r = σ(i_r + h_r), z = σ(i_z + h_z), n = tanh(i_n + r·h_n), h' = (1 − z)·n + z·h.
    """
    hsz = h._data.shape[-1]
    gid, ghd = gi._data, gh._data
    rz = _sigmoid(gid[..., : 2 * hsz] + ghd[..., : 2 * hsz])
    r, z = rz[..., :hsz], rz[..., hsz:]
    hn = ghd[..., 2 * hsz :]
    n = np.tanh(gid[..., 2 * hsz :] + r * hn)
    out = n + z * (h._data - n)
    need_h = h._rg

    def backward(g):
        if STATE.enabled:
            ir, iz, in_ = gi.chunk(3, -1)
            hr, hz, hn_ = gh.chunk(3, -1)
            R, Z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
            HN = hn_
            N = (in_ + R * HN).tanh()
        else:
            R, Z, N = (Tensor._wrap(x) for x in (r, z, n))
            HN = Tensor._wrap(hn)
        dn = g * (1.0 - Z) * (1.0 - N * N)
        dr = dn * HN * R * (1.0 - R)
        dz = g * (h - N) * Z * (1.0 - Z)
        dgi = cat([dr, dz, dn], -1)
        dgh = cat([dr, dz, dn * R], -1)
        return dgi, dgh, (g * Z if need_h else None)

    return make_result(out, (gi, gh, h), backward, "GruCellBackward", saved=(gi, gh, h))


def _check_2d(op, t, name):
    """torch's ``rnn_*_cell`` functions take batches only (the cell modules add the batch
    dim to an unbatched input): its IndexError for ``size(1)`` of a 0-D or 1-D tensor."""
    if t.ndim == 0:
        raise IndexError(f"{op}: Dimension specified as 1 but {name} has no dimensions")
    if t.ndim == 1:
        raise IndexError(
            f"{op}: Dimension out of range (expected to be in range of [-1, 0], but got 1): "
            f"{name} must be 2D (batch, features)"
        )
    if t.ndim > 2:
        raise RuntimeError(f"{op}: Expected {name} to be 2D, got {t.ndim}D instead")


def _check_cell(op, input, hx, w_ih, w_hh, gates, c=None):
    """torch's order: the input's size, then each hidden state's batch and size."""
    _check_2d(op, input, "input")
    if w_ih.ndim != 2 or w_ih.shape[0] % gates or input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(
            f"{op}: input of shape {list(input.shape)} and w_ih of shape {list(w_ih.shape)} "
            "don't match"
        )
    hsz = w_ih.shape[0] // gates
    for k, h in enumerate((hx,) if c is None else (hx, c)):
        if h.ndim and h.shape[0] != input.shape[0]:
            raise RuntimeError(
                f"{op}: Input batch size {input.shape[0]} doesn't match hidden{k} batch "
                f"size {h.shape[0]}"
            )
        _check_2d(op, h, f"hidden{k}")
        if h.shape[1] != w_hh.shape[1] or w_hh.shape[0] != gates * hsz:
            raise RuntimeError(
                f"{op}: hidden state of shape {list(h.shape)} and w_hh of shape "
                f"{list(w_hh.shape)} don't match"
            )
    dtypes = {t._data.dtype for t in (input, hx, w_ih, w_hh)}
    if len(dtypes) > 1:
        raise RuntimeError(
            f"{op}: expected input, hidden state and weights of one dtype, got "
            + ", ".join(sorted(str(d) for d in dtypes))
        )


@register("lstm_cell", method=False)
def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step, as ``torch.lstm_cell``: ``hx = (h, c)``; returns ``(h', c')``."""
    h, c = hx
    _check_cell("lstm_cell", input, h, w_ih, w_hh, 4, c)
    return lstm_pointwise(linear(input, w_ih, b_ih), linear(h, w_hh, b_hh), c)


@register("gru_cell", method=False)
def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step, as ``torch.gru_cell``; returns h'."""
    _check_cell("gru_cell", input, hx, w_ih, w_hh, 3)
    return gru_pointwise(linear(input, w_ih, b_ih), linear(hx, w_hh, b_hh), hx)


@register("rnn_tanh_cell", method=False)
def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh), as ``torch.rnn_tanh_cell``."""
    _check_cell("rnn_tanh_cell", input, hx, w_ih, w_hh, 1)
    return (linear(input, w_ih, b_ih) + linear(hx, w_hh, b_hh)).tanh()


@register("rnn_relu_cell", method=False)
def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """h' = relu(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh), as ``torch.rnn_relu_cell``."""
    _check_cell("rnn_relu_cell", input, hx, w_ih, w_hh, 1)
    return (linear(input, w_ih, b_ih) + linear(hx, w_hh, b_hh)).relu()


# vmap dispatch for the cell modules, which call these directly (Note [vmap levels]); the
# batching rules are in tapegrad/_batch_rules_ext.py.
from ..ops._registry import vmap_hooked as _vmap_hooked  # noqa: E402

for _name in ("lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"):
    globals()[_name] = _vmap_hooked(_name, globals()[_name])
