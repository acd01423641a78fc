"""The op table's rows run on bfloat16 (or float16) inputs, against torch's results.

``check_row(case, torch, dtype)`` builds the row's inputs in the half dtype (the same
values for both libraries: torch rounds the float64 samples, tapegrad takes torch's
values), runs the row in both, and compares each output's dtype, shape and values, then the
dtype and values of the input gradients of a weighted sum of the outputs. It returns None
where torch itself does not compute the row in that dtype, "ok", or raises
:class:`HalfMismatch` naming what differs.

Tolerances are bfloat16's / float16's (torch.testing's defaults for them, with an absolute
floor for values near zero): torch computes most half-precision ops in float32 and rounds
once, tapegrad likewise, but composite rows round after every step, in both libraries, and
one rounding apart becomes an ulp apart.

Used by tests/test_bfloat16_results.py and tools/half_parity.py. Imports torch only when
called.
"""

from __future__ import annotations

import numpy as np

import tapegrad as tg

#: (rtol, atol) per dtype: torch.testing's rtol; an atol for values near zero.
TOL = {"bfloat16": (1.6e-2, 1e-2), "float16": (1e-3, 1e-3)}
#: gradients pass through more roundings (the weighted sum, the backward's steps)
GRAD_TOL = {"bfloat16": (4e-2, 2e-2), "float16": (4e-3, 4e-3)}


class HalfMismatch(AssertionError):
    """tapegrad's half-precision result differs from torch's."""


def _np(t):
    """A torch or tapegrad tensor's values as float64."""
    return np.asarray(t.detach().float().numpy(), dtype=np.float64)


def _name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    return [value]


def _compare(ours, ref, what, tol):
    import torch  # noqa: PLC0415

    if not isinstance(ref, torch.Tensor):
        return
    if not isinstance(ours, tg.Tensor):
        raise HalfMismatch(f"{what}: {type(ours).__name__}, torch gives a Tensor")
    if type(ours._data) is not np.ndarray:  # an Opmath array leaked (Note [bfloat16 opmath])
        raise HalfMismatch(f"{what}: holds a {type(ours._data).__name__}, not an ndarray")
    if _name(ours.dtype) != _name(ref.dtype):
        raise HalfMismatch(f"{what}: dtype {_name(ours.dtype)}, torch's {_name(ref.dtype)}")
    if tuple(ours.shape) != tuple(ref.shape):
        raise HalfMismatch(f"{what}: shape {tuple(ours.shape)}, torch's {tuple(ref.shape)}")
    if ref.dtype.is_floating_point or ref.dtype.is_complex:
        got, want = _np(ours), _np(ref)
    else:
        got, want = ours.numpy(), ref.numpy()
    if not np.allclose(got, want, rtol=tol[0], atol=tol[1], equal_nan=True):
        diff = np.abs(np.asarray(got, np.float64) - want)
        err = np.max(np.where(np.isnan(diff), 0, diff)) if want.size else 0
        raise HalfMismatch(f"{what}: values differ (max abs err {err:.3g})")


def check_row(case, torch, dtype: str, seed: int = 2):
    """Compare one op-table row on ``dtype`` inputs; None where torch does not compute it."""
    arrays = case.make_inputs(seed=seed)
    theirs = [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True) for a in arrays]
    try:
        ref = case.fn(torch, *theirs)
    except (RuntimeError, NotImplementedError, TypeError):
        return None  # torch has no kernel for this dtype
    ours = [
        tg.tensor(t.detach().float().numpy(), dtype=getattr(tg, dtype), requires_grad=True)
        for t in theirs
    ]
    try:
        out = case.fn(tg, *ours)
    except Exception as e:  # noqa: BLE001 - any error where torch computes is a mismatch
        raise HalfMismatch(f"forward raises {type(e).__name__}: {e}"[:200]) from None
    refs, outs = _flat(ref), _flat(out)
    if len(refs) != len(outs):
        raise HalfMismatch(f"{len(outs)} outputs, torch gives {len(refs)}")
    for i, (o, r) in enumerate(zip(outs, refs)):
        _compare(o, r, f"output {i}", TOL[dtype])
    rng = np.random.default_rng(3)
    loss_ref = loss_ours = None
    for o, r in zip(outs, refs):
        if isinstance(r, torch.Tensor) and r.requires_grad and r.dtype.is_floating_point:
            w = rng.uniform(-1, 1, size=tuple(r.shape))
            term_ref = (r * torch.tensor(w, dtype=r.dtype)).sum()
            term_ours = (o * tg.tensor(_np(torch.tensor(w, dtype=r.dtype)), dtype=o.dtype)).sum()
            loss_ref = term_ref if loss_ref is None else loss_ref + term_ref
            loss_ours = term_ours if loss_ours is None else loss_ours + term_ours
    if loss_ref is None:
        return "ok"
    try:
        want = torch.autograd.grad(loss_ref, theirs, allow_unused=True)
    except (RuntimeError, NotImplementedError):
        return "ok"  # no bfloat16 backward in torch
    if not loss_ours.requires_grad:
        raise HalfMismatch("the output does not require grad; torch's does")
    try:
        got = tg.autograd.grad(loss_ours, ours, allow_unused=True)
    except Exception as e:  # noqa: BLE001
        raise HalfMismatch(f"backward raises {type(e).__name__}: {e}"[:200]) from None
    for i, (g, w) in enumerate(zip(got, want)):
        if w is None:
            continue
        if g is None:
            if w.abs().sum() > 0:
                raise HalfMismatch(f"input {i}: no gradient; torch's is non-zero")
            continue
        _compare(g, w, f"gradient of input {i}", GRAD_TOL[dtype])
    return "ok"
