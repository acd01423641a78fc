"""Adafactor (Shazeer & Stern 2018) with torch 2.13's update rule (``torch.optim.Adafactor``)."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .optimizer import Optimizer, bump_version, new_step

__all__ = ["Adafactor"]


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


class Adafactor(Optimizer):
    """Adafactor: second moments factored into row and column averages for matrices.

    With ``g`` the gradient (negated when ``maximize``), at step ``t``::

        beta2_t = 1 - t ** beta2_decay;  rho = min(lr, 1 / sqrt(t))
        alpha = max(eps2, rms(p)) * rho            (rms of p before this step)
        p = p * (1 - lr * weight_decay)
        R = lerp(R, mean(g², dim=-1), 1 - beta2_t);  C = lerp(C, mean(g², dim=-2), ...)
        v = R @ C / max(mean(R, dim=-2), eps1)      (a vector: v = lerp(v, g², ...))
        u = g / sqrt(max(v, eps1²));  p = p - alpha / max(1, rms(u) / d) * u

    Args:
        params: parameters or parameter groups (see :class:`Optimizer`).
        lr: learning rate (the ``rho`` cap).
        beta2_decay: the exponent of the second-moment decay (<= 0).
        eps: ``(eps1, eps2)``; ``eps1=None`` takes the machine epsilon of the first
            parameter's dtype, as torch.
        d: clipping threshold of the update's RMS (>= 1).
        weight_decay: decoupled weight decay (scaled by ``lr``).
        foreach: accepted for torch's signature (chooses kernels there).
        maximize: maximize the objective.

    State per parameter: ``step`` (0-d float32), and ``row_var``/``col_var`` for tensors of
    2 or more dims (shaped like the gradient with the last, resp. second-to-last, dim 1)
    or ``variance`` for vectors and scalars.
    """

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):  # fmt: skip
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _check(0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}")
        _check(0.0 >= beta2_decay, f"beta2_decay should be <= 0 but is: {beta2_decay}")
        _check(eps[0] is None or 0.0 <= eps[0], f"epsilon1 should be >= 0 but is: {eps[0]}")
        _check(0.0 <= eps[1], f"epsilon2 should be >= 0 but is: {eps[1]}")
        _check(1.0 <= d, f"Clipping threshold d should be >= 1 but is: {d}")
        _check(0.0 <= weight_decay, f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize)  # fmt: skip
        super().__init__(params, defaults)

    def _step_group(self, group: dict) -> None:
        lr = float(group["lr"])
        beta2_decay = float(group["beta2_decay"])
        eps1, eps2 = group["eps"]
        d = float(group["d"])
        weight_decay = float(group["weight_decay"])
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.is_complex():
                raise RuntimeError("Adafactor does not support complex parameters")
            grad = p.grad._data
            state = self.state[p]
            if not state:
                state["step"] = new_step()
                if grad.ndim > 1:
                    state["row_var"] = Tensor._wrap(np.zeros(grad.shape[:-1] + (1,), grad.dtype))
                    col_shape = grad.shape[:-2] + (1,) + grad.shape[-1:]
                    state["col_var"] = Tensor._wrap(np.zeros(col_shape, grad.dtype))
                else:
                    state["variance"] = Tensor._wrap(np.zeros_like(grad))
            if group["maximize"]:
                grad = -grad
            if eps1 is None:  # torch fixes it from the first parameter, for the whole group
                eps1 = float(np.finfo(p._data.dtype).eps)
            step_array = state["step"]._data
            step_array += 1
            step = float(step_array)
            one_minus_beta2_t = step**beta2_decay
            rho_t = min(lr, 1 / (step**0.5))
            data = p._data
            alpha = max(eps2, float(np.sqrt(np.sum(data * data))) / (data.size**0.5)) * rho_t
            if weight_decay != 0:
                np.multiply(data, 1 - lr * weight_decay, out=data)
            dtype = data.dtype
            if grad.ndim > 1:
                row_var, col_var = state["row_var"]._data, state["col_var"]._data
                sq = grad * grad
                row_mean = np.square(np.sqrt(sq.sum(-1, keepdims=True))) / grad.shape[-1]
                _lerp_(row_var, row_mean.astype(dtype), one_minus_beta2_t)
                col_mean = np.square(np.sqrt(sq.sum(-2, keepdims=True))) / grad.shape[-2]
                _lerp_(col_var, col_mean.astype(dtype), one_minus_beta2_t)
                var_estimate = row_var @ col_var
                row_mean_of = np.maximum(row_var.mean(-2, keepdims=True), dtype.type(eps1))
                var_estimate = var_estimate / row_mean_of
            else:
                variance = state["variance"]._data
                _lerp_(variance, grad * grad, one_minus_beta2_t)
                var_estimate = variance.copy()
            update = 1 / np.sqrt(np.maximum(var_estimate, dtype.type(eps1 * eps1)))
            update = update * grad
            rms = float(np.sqrt(np.sum(update * update))) / ((update.size**0.5) * d)
            denom = max(1.0, rms)
            np.add(data, update * dtype.type(-alpha / denom), out=data)
            bump_version(p)


def _lerp_(a, b, weight: float) -> None:
    """``a.lerp_(b, weight)`` with torch's two-sided formula, in place."""
    if abs(weight) < 0.5:
        np.add(a, (b - a) * a.dtype.type(weight), out=a)
    else:
        a[...] = b - (b - a) * a.dtype.type(1 - weight)
