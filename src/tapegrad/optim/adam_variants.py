"""NAdam and RAdam, PyTorch's update rules (single-tensor path, same operation order)."""

from __future__ import annotations

import numpy as np

from .. import _trace
from ..tensor import Tensor
from .optimizer import Optimizer, bump_version, check_hyper, compat_flags, new_step

__all__ = ["NAdam", "RAdam"]


def _check_adam_hypers(lr, betas, eps, weight_decay):
    check_hyper("learning rate", lr)
    check_hyper("epsilon value", eps)
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
    check_hyper("weight_decay value", weight_decay)


def _moments(opt, p, grad, beta1, beta2):
    """m += (1 - beta1)(g - m) (torch's lerp_); v = beta2 v + (1 - beta2) g²."""
    state = opt.state[p]
    exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
    work = opt._scratch(grad)
    np.subtract(grad, exp_avg, out=work)
    np.multiply(work, 1 - beta1, out=work)
    np.add(exp_avg, work, out=exp_avg)
    np.multiply(exp_avg_sq, beta2, out=exp_avg_sq)
    np.multiply(grad, 1 - beta2, out=work)
    np.multiply(work, grad, out=work)
    np.add(exp_avg_sq, work, out=exp_avg_sq)
    return exp_avg, exp_avg_sq


def _weight_decay_grad(opt, p, group):
    """The gradient after weight decay: decoupled decays ``p`` in place first (AdamW style)."""
    weight_decay = float(group["weight_decay"])
    if group["decoupled_weight_decay"]:
        if weight_decay != 0:
            np.multiply(p._data, 1 - float(group["lr"]) * weight_decay, out=p._data)
        return opt._grad(p, group["maximize"], 0.0)
    return opt._grad(p, group["maximize"], weight_decay)


class NAdam(Optimizer):
    """Adam with Nesterov momentum (Dozat), with torch's momentum schedule::

        mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay));  prod *= mu_t
        p -= lr (1 - mu_t) / (1 - prod) * g / d + lr mu_{t+1} / (1 - prod mu_{t+1}) * m / d
        with d = sqrt(v / (1 - beta2**t)) + eps

    ``decoupled_weight_decay`` decays the weights directly (NAdamW).
    State: ``step``, ``mu_product`` (0-d float32, as torch), ``exp_avg``, ``exp_avg_sq``.
    """

    def __init__(
        self,
        params,
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0.0,
        momentum_decay=4e-3,
        decoupled_weight_decay=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
    ):
        _check_adam_hypers(lr, betas, eps, weight_decay)
        check_hyper("momentum_decay value", momentum_decay)
        defaults = dict(
            lr=lr,
            betas=tuple(betas),
            eps=eps,
            weight_decay=weight_decay,
            momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
            **compat_flags(
                "NAdam", foreach=foreach, capturable=capturable, differentiable=differentiable
            ),
        )
        super().__init__(params, defaults)

    def _step_group(self, group):
        lr, eps = float(group["lr"]), float(group["eps"])
        beta1, beta2 = (float(b) for b in group["betas"])
        momentum_decay = float(group["momentum_decay"])
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                state["step"] = new_step()
                state["mu_product"] = Tensor._wrap(np.ones((), np.float32))
                state["exp_avg"] = Tensor._wrap(np.zeros_like(p._data))
                state["exp_avg_sq"] = Tensor._wrap(np.zeros_like(p._data))
            state["step"]._data += 1
            # array math on the step count: Note [Step arrays] in adaptive.py
            step = state["step"]._data.astype(np.float64)
            dtype = p._data.dtype
            bias_correction2 = (1 - beta2**step).astype(dtype)
            grad = _weight_decay_grad(self, p, group)
            mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
            mu_product = state["mu_product"]._data
            mu_product *= mu.astype(mu_product.dtype)  # float32, as torch's 0-d tensor
            exp_avg, exp_avg_sq = _moments(self, p, grad, beta1, beta2)
            mu_prod = mu_product.astype(np.float64)
            denom = self._scratch(grad, slot=2)
            np.divide(exp_avg_sq, bias_correction2, out=denom)
            np.sqrt(denom, out=denom)
            np.add(denom, eps, out=denom)
            work = self._scratch(grad)
            np.divide(grad, denom, out=work)
            np.multiply(work, (-lr * (1.0 - mu) / (1.0 - mu_prod)).astype(dtype), out=work)
            np.add(p._data, work, out=p._data)
            np.divide(exp_avg, denom, out=work)
            coef = ((-lr * mu_next) / (1.0 - mu_prod * mu_next)).astype(dtype)
            np.multiply(work, coef, out=work)
            np.add(p._data, work, out=p._data)
            bump_version(p)


class RAdam(Optimizer):
    """Rectified Adam: plain momentum SGD while the variance estimate is unreliable
    (rho_t <= 5), then Adam scaled by the rectification term (torch's rule).

    State: ``step``, ``exp_avg``, ``exp_avg_sq``.
    """

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0.0,
        decoupled_weight_decay=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
    ):
        _check_adam_hypers(lr, betas, eps, weight_decay)
        defaults = dict(
            lr=lr,
            betas=tuple(betas),
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            decoupled_weight_decay=decoupled_weight_decay,
            **compat_flags(
                "RAdam", foreach=foreach, capturable=capturable, differentiable=differentiable
            ),
        )
        super().__init__(params, defaults)

    def _step_group(self, group):
        lr, eps = float(group["lr"]), float(group["eps"])
        beta1, beta2 = (float(b) for b in group["betas"])
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                state["step"] = new_step()
                state["exp_avg"] = Tensor._wrap(np.zeros_like(p._data))
                state["exp_avg_sq"] = Tensor._wrap(np.zeros_like(p._data))
            state["step"]._data += 1
            step = state["step"]._data.astype(np.float64)  # Note [Step arrays]
            dtype = p._data.dtype
            grad = _weight_decay_grad(self, p, group)
            exp_avg, exp_avg_sq = _moments(self, p, grad, beta1, beta2)
            bias_correction1 = 1 - beta1**step
            bias_correction2 = 1 - beta2**step
            update = self._scratch(grad, slot=2)
            np.divide(exp_avg, bias_correction1.astype(dtype), out=update)
            np.multiply(update, lr, out=update)
            rho_inf = 2 / (1 - beta2) - 1
            rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
            rectify = rho_t > 5.0
            if _trace.recording() or rectify:
                with np.errstate(divide="ignore", invalid="ignore"):  # unused where rho_t <= 5
                    ratio = (
                        (rho_t - 4)
                        * (rho_t - 2)
                        * rho_inf
                        / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
                    )
                    rect = np.sqrt(np.maximum(ratio, 0.0)).astype(dtype)
                work = self._scratch(grad)
                np.sqrt(exp_avg_sq, out=work)
                np.add(work, eps, out=work)
                np.divide((bias_correction2**0.5).astype(dtype), work, out=work)
                if _trace.recording():  # branch-free: factor 1 while rho_t <= 5
                    np.multiply(work, rect, out=work)
                    np.copyto(work, np.asarray(1.0, dtype), where=~rectify)
                    np.multiply(update, work, out=update)
                else:  # torch's order: ((m_hat * lr) * adaptive) * rect
                    np.multiply(update, work, out=update)
                    np.multiply(update, rect, out=update)
            np.subtract(p._data, update, out=p._data)
            bump_version(p)
