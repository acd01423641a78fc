"""Adagrad, Adadelta and Adamax: per-coordinate adaptive rates, PyTorch's update rules.

Each step follows torch's single-tensor implementation operation by operation
(same order, same rounding), in place with NumPy (Note [In-place updates]).

Note [Step arrays]
Step-dependent factors (bias corrections, decayed rates) are computed from the 0-d
``step`` array in float64, never from ``float(step)``, then cast to the parameter's
dtype (as a Python float would be): a training step recorded by ``tapegrad.jit``
then replays with the current count instead of falling back to eager. Where torch
branches on such a value, the recorded path uses an equivalent branch-free form.
"""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .optimizer import Optimizer, bump_version, check_hyper, compat_flags, new_step

__all__ = ["Adagrad", "Adadelta", "Adamax"]


class Adagrad(Optimizer):
    """Adagrad::

        g = g + weight_decay * p;  clr = lr / (1 + (step - 1) * lr_decay)
        sum = sum + g * g;         p = p - clr * g / (sqrt(sum) + eps)

    State (created for every parameter at construction, as torch): ``step``, ``sum``.

    >>> import tapegrad as tg
    >>> w = tg.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = tg.optim.Adagrad([w], lr=0.5)
    >>> (w * w).sum().backward(); opt.step(); w
    tensor([ 0.5000, -1.5000], requires_grad=True)
    """

    def __init__(
        self,
        params,
        lr=1e-2,
        lr_decay=0.0,
        weight_decay=0.0,
        initial_accumulator_value=0.0,
        eps=1e-10,
        foreach=None,
        *,
        maximize=False,
        differentiable=False,
        fused=None,
    ):
        check_hyper("learning rate", lr)
        check_hyper("lr_decay value", lr_decay)
        check_hyper("weight_decay value", weight_decay)
        check_hyper("initial_accumulator_value value", initial_accumulator_value)
        check_hyper("epsilon value", eps)
        defaults = dict(
            lr=lr,
            lr_decay=lr_decay,
            eps=eps,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            maximize=maximize,
            **compat_flags("Adagrad", foreach=foreach, differentiable=differentiable, fused=fused),
        )
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p, group):
        state = self.state[p]
        state["step"] = new_step()
        init = float(group["initial_accumulator_value"])
        state["sum"] = Tensor._wrap(np.full_like(p._data, init))

    def _step_group(self, group):
        lr, lr_decay, eps = float(group["lr"]), float(group["lr_decay"]), float(group["eps"])
        weight_decay = float(group["weight_decay"])
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:  # a parameter added by add_param_group after construction
                self._init_state(p, group)
            state["step"]._data += 1
            step = state["step"]._data.astype(np.float64)  # array math: see Note [Step arrays]
            grad = self._grad(p, group["maximize"], weight_decay)
            clr = (lr / (1 + (step - 1) * lr_decay)).astype(p._data.dtype)
            total = state["sum"]._data
            work = self._scratch(grad)
            np.multiply(grad, grad, out=work)
            np.add(total, work, out=total)
            np.sqrt(total, out=work)
            np.add(work, eps, out=work)
            np.divide(grad, work, out=work)
            np.multiply(work, -clr, out=work)
            np.add(p._data, work, out=p._data)
            bump_version(p)


class Adadelta(Optimizer):
    """Adadelta::

        v = rho * v + (1 - rho) * g * g
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta;   p = p - lr * delta

    State: ``step``, ``square_avg`` (v), ``acc_delta`` (u).
    """

    def __init__(
        self,
        params,
        lr=1.0,
        rho=0.9,
        eps=1e-6,
        weight_decay=0.0,
        foreach=None,
        *,
        capturable=False,
        maximize=False,
        differentiable=False,
    ):
        check_hyper("learning rate", lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_hyper("epsilon value", eps)
        check_hyper("weight_decay value", weight_decay)
        defaults = dict(
            lr=lr,
            rho=rho,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            **compat_flags(
                "Adadelta",
                capturable=capturable,
                foreach=foreach,
                differentiable=differentiable,
            ),
        )
        super().__init__(params, defaults)

    def _step_group(self, group):
        lr, rho, eps = float(group["lr"]), float(group["rho"]), float(group["eps"])
        weight_decay = float(group["weight_decay"])
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                state["step"] = new_step()
                state["square_avg"] = Tensor._wrap(np.zeros_like(p._data))
                state["acc_delta"] = Tensor._wrap(np.zeros_like(p._data))
            state["step"]._data += 1
            grad = self._grad(p, group["maximize"], weight_decay)
            square_avg, acc_delta = state["square_avg"]._data, state["acc_delta"]._data
            work = self._scratch(grad)
            delta = self._scratch(grad, slot=2)
            np.multiply(square_avg, rho, out=square_avg)
            np.multiply(grad, 1 - rho, out=work)
            np.multiply(work, grad, out=work)
            np.add(square_avg, work, out=square_avg)
            np.add(square_avg, eps, out=work)
            std = np.sqrt(work, out=work)
            np.add(acc_delta, eps, out=delta)
            np.sqrt(delta, out=delta)
            np.divide(delta, std, out=delta)
            np.multiply(delta, grad, out=delta)
            np.multiply(acc_delta, rho, out=acc_delta)
            np.multiply(delta, 1 - rho, out=work)
            np.multiply(work, delta, out=work)
            np.add(acc_delta, work, out=acc_delta)
            np.multiply(delta, -lr, out=delta)
            np.add(p._data, delta, out=p._data)
            bump_version(p)


class Adamax(Optimizer):
    """Adamax (Adam with the infinity norm)::

        m = m + (1 - beta1) * (g - m);   u = max(beta2 * u, |g| + eps)
        p = p - lr / (1 - beta1**step) * m / u

    State: ``step``, ``exp_avg`` (m), ``exp_inf`` (u).
    """

    def __init__(
        self,
        params,
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0.0,
        foreach=None,
        *,
        maximize=False,
        differentiable=False,
        capturable=False,
    ):
        check_hyper("learning rate", lr)
        check_hyper("epsilon value", eps)
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        check_hyper("weight_decay value", weight_decay)
        defaults = dict(
            lr=lr,
            betas=tuple(betas),
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            **compat_flags(
                "Adamax", foreach=foreach, differentiable=differentiable, capturable=capturable
            ),
        )
        super().__init__(params, defaults)

    def _step_group(self, group):
        lr, eps = float(group["lr"]), float(group["eps"])
        beta1, beta2 = (float(b) for b in group["betas"])
        weight_decay = float(group["weight_decay"])
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                state["step"] = new_step()
                state["exp_avg"] = Tensor._wrap(np.zeros_like(p._data))
                state["exp_inf"] = Tensor._wrap(np.zeros_like(p._data))
            state["step"]._data += 1
            step = state["step"]._data.astype(np.float64)
            grad = self._grad(p, group["maximize"], weight_decay)
            exp_avg, exp_inf = state["exp_avg"]._data, state["exp_inf"]._data
            work = self._scratch(grad)
            np.subtract(grad, exp_avg, out=work)
            np.multiply(work, 1 - beta1, out=work)
            np.add(exp_avg, work, out=exp_avg)
            np.multiply(exp_inf, beta2, out=exp_inf)
            np.abs(grad, out=work)
            np.add(work, eps, out=work)
            np.maximum(exp_inf, work, out=exp_inf)
            clr = (lr / (1 - beta1**step)).astype(p._data.dtype)
            np.divide(exp_avg, exp_inf, out=work)
            np.multiply(work, -clr, out=work)
            np.add(p._data, work, out=p._data)
            bump_version(p)
