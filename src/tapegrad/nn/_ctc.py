"""``F.ctc_loss``: connectionist temporal classification, one fused Node.

Note [CTC gradient]
The forward pass runs the alpha recursion over the extended label sequence
l' = (blank, l1, blank, l2, ..., blank) in log space; the backward pass runs the beta
recursion and returns PyTorch's gradient with respect to ``log_probs``::

    d/dlp[t, c] = g · (exp(lp[t, c]) − exp(log Σ_{s: l'_s = c} α_t(s) β_t(s) + nll − lp[t, c]))

The first term is the one PyTorch adds (it assumes ``log_probs`` come from
log_softmax, whose backward removes it: Σ_c exp(lp) = 1); keeping it makes gradients
equal to torch's both for ``log_probs`` and for the logits before a log_softmax. As in
PyTorch, there is no double backward: a second derivative raises.
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import make_result
from ..grad_mode import STATE
from ..tensor import Tensor

__all__ = ["ctc_loss"]


def _lse(*arrays):
    stacked = np.stack(arrays)
    top = stacked.max(axis=0)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.exp(stacked - safe).sum(axis=0))


def _int_list(values, name):
    if isinstance(values, (list, tuple)):  # of ints (_check_length_types)
        values = [int(v) for v in values]
    if isinstance(values, Tensor):
        values = values._data
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu":
        raise RuntimeError(f"ctc_loss: {name} must be integers, got dtype {arr.dtype}")
    return arr.astype(np.int64).reshape(-1)


def _is_int(v):
    """An element of an int list as torch's parser takes it: an int (not a bool), a
    one-element integer or bool tensor, a 0-D integer array."""
    if isinstance(v, Tensor):
        return v.numel() == 1 and v.dtype.kind in "iub"
    if isinstance(v, np.ndarray):
        return v.ndim == 0 and v.dtype.kind in "iu"
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _check_length_types(input_lengths, target_lengths):
    """torch's two signatures: both lengths Tensors, or both sequences of ints (a bare int,
    a NumPy array or a float does not fit either: TypeError)."""
    both = (input_lengths, target_lengths)
    if all(isinstance(v, Tensor) for v in both):
        return
    if all(isinstance(v, (list, tuple)) and all(_is_int(e) for e in v) for v in both):
        return
    raise TypeError(
        "ctc_loss(): input_lengths and target_lengths must be both Tensors or both "
        f"sequences of ints, got {type(input_lengths).__name__} and "
        f"{type(target_lengths).__name__}"
    )


def _alpha_beta(lp, labels, T, blank):
    """log α and log β (T, 2S+1) and the nll for one sample; lp is (T_max, C)."""
    ext = np.full(2 * len(labels) + 1, -1, np.int64)
    ext[1::2] = labels
    ext[0::2] = blank
    L = ext.size
    lpe = lp[:T, ext]  # (T, L)
    skip = np.zeros(L, bool)
    skip[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    neg = -np.inf
    alpha = np.full((T, L), neg)
    alpha[0, 0] = lpe[0, 0]
    if L > 1:
        alpha[0, 1] = lpe[0, 1]
    for t in range(1, T):
        prev = alpha[t - 1]
        one = np.concatenate(([neg], prev[:-1]))
        two = np.where(skip, np.concatenate(([neg, neg], prev))[:L], neg)  # L = 1: empty target
        alpha[t] = lpe[t] + _lse(prev, one, two)
    ends = [alpha[T - 1, L - 1]] + ([alpha[T - 1, L - 2]] if L > 1 else [])
    nll = -_lse(*[np.asarray(e) for e in ends])
    beta = np.full((T, L), neg)
    beta[T - 1, L - 1] = lpe[T - 1, L - 1]
    if L > 1:
        beta[T - 1, L - 2] = lpe[T - 1, L - 2]
    skip_next = np.zeros(L, bool)
    skip_next[:-2] = skip[2:]
    for t in range(T - 2, -1, -1):
        nxt = beta[t + 1]
        one = np.concatenate((nxt[1:], [neg]))
        two = np.where(skip_next, np.concatenate((nxt[2:], [neg, neg]))[:L], neg)
        beta[t] = lpe[t] + _lse(nxt, one, two)
    return alpha, beta, float(nll), ext


def ctc_loss(
    log_probs,
    targets,
    input_lengths,
    target_lengths,
    blank=0,
    reduction="mean",
    zero_infinity=False,
):
    """CTC loss of ``log_probs`` (T, N, C) or (T, C) against ``targets`` (N, S) padded,
    or 1-D concatenated. 'mean' divides each loss by its target length, then averages.
    See Note [CTC gradient].

    Raises:
        RuntimeError: shapes or lengths that do not fit, or a target equal to ``blank``.
        ValueError: an unknown reduction.
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    _check_length_types(input_lengths, target_lengths)
    unbatched = log_probs.ndim == 2
    lp_t = log_probs.unsqueeze(1) if unbatched else log_probs
    if lp_t.ndim != 3:
        raise RuntimeError(
            f"ctc_loss: log_probs must be (T, N, C) or (T, C), got {list(log_probs.shape)}"
        )
    lp = lp_t._data
    T_max, n, c = lp.shape
    tgt = targets._data if isinstance(targets, Tensor) else np.asarray(targets)
    in_len = _int_list(input_lengths, "input_lengths")
    tg_len = _int_list(target_lengths, "target_lengths")
    if in_len.size != n or tg_len.size != n:
        raise RuntimeError(
            f"ctc_loss: expected {n} input and target lengths, got {in_len.size} and {tg_len.size}"
        )
    if not 0 <= blank < c:
        raise RuntimeError(f"ctc_loss: blank must be in label range, got {blank} for {c} classes")
    if (in_len > T_max).any() or (in_len < 1).any():
        raise RuntimeError(
            f"ctc_loss: input_lengths must be in [1, {T_max}], got {in_len.tolist()}"
        )
    offsets = np.concatenate(([0], np.cumsum(tg_len)[:-1]))
    losses = np.zeros(n)
    grads = np.zeros((T_max, n, c))
    for b in range(n):
        if tgt.ndim == 1:
            labels = tgt[offsets[b] : offsets[b] + tg_len[b]]
        else:
            labels = tgt[b, : tg_len[b]]
        labels = np.asarray(labels, np.int64)
        if (labels == blank).any() or (labels < 0).any() or (labels >= c).any():
            raise RuntimeError(f"ctc_loss: targets of sample {b} must be in [0, {c}) and not blank")
        T = int(in_len[b])
        alpha, beta, nll, ext = _alpha_beta(lp[:, b].astype(np.float64), labels, T, blank)
        losses[b] = nll
        lpb = lp[:T, b].astype(np.float64)
        lcab = np.full((T, c), -np.inf)
        ab = alpha + beta
        for s, label in enumerate(ext):
            lcab[:, label] = _lse(lcab[:, label], ab[:, s])
        with np.errstate(over="ignore", invalid="ignore"):
            g = np.exp(lpb) - np.exp(lcab + nll - lpb)
        if zero_infinity and not np.isfinite(nll):
            g = np.zeros_like(g)
        grads[:T, b] = g
    if zero_infinity:
        losses = np.where(np.isinf(losses), 0.0, losses)
    dtype = lp.dtype
    if reduction == "none":
        scale = np.ones(n)
        out = losses
    elif reduction == "sum":
        scale = np.ones(n)
        out = losses.sum()
    else:
        scale = 1.0 / np.maximum(tg_len, 1) / n
        out = (losses * scale).sum()
    per_sample = (grads * scale[None, :, None]).astype(dtype)

    def backward(gout):
        if STATE.enabled:
            raise NotImplementedError("ctc_loss: double backward is not supported (as in PyTorch)")
        gb = gout if reduction != "none" else gout.reshape(1, n, 1)
        return (gb * Tensor._wrap(per_sample),)

    result = make_result(np.asarray(out, dtype=dtype), (lp_t,), backward, "CtcLossBackward")
    if unbatched and reduction == "none":
        return result.squeeze(0)
    return result
