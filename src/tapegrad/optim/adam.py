"""Adam and AdamW (decoupled weight decay), both with optional AMSGrad."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from ._flat import add_to_params, flat_grad, flat_params, flat_state
from .optimizer import Optimizer, bump_version, check_hyper, compat_flags, new_step

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam, with PyTorch's update rule.

    With ``g`` the gradient (negated when ``maximize``), at step ``t``::

        p = p * (1 - lr * weight_decay)       (decoupled_weight_decay, i.e. AdamW)
        g = g + weight_decay * p               (otherwise, when weight_decay != 0)
        m = m + (1 - beta1) * (g - m)
        v = beta2 * v + (1 - beta2) * g * g
        v_hat = max(v_hat, v)                  (amsgrad; then v_hat replaces v below)
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    Args:
        params: parameters or parameter groups (see :class:`Optimizer`).
        lr: learning rate.
        betas: decay rates of the first and second moment averages.
        eps: added to the denominator for numerical stability.
        weight_decay: L2 penalty (or decoupled decay with ``decoupled_weight_decay``).
        amsgrad: use the maximum of past second moments (AMSGrad).
        maximize: maximize the objective instead of minimizing it.
        decoupled_weight_decay: decay the weights directly, as AdamW.

    State per parameter: ``step`` (0-d float32 tensor), ``exp_avg``, ``exp_avg_sq``
    and, with amsgrad, ``max_exp_avg_sq``.
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
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
            amsgrad=amsgrad,
            maximize=maximize,
            decoupled_weight_decay=decoupled_weight_decay,
            **compat_flags(
                type(self).__name__,
                foreach=foreach,
                capturable=capturable,
                differentiable=differentiable,
                fused=fused,
            ),
        )
        super().__init__(params, defaults)

    def _step_group(self, group: dict) -> None:
        index = next(i for i, g in enumerate(self.param_groups) if g is group)
        params = flat_params(group)
        if params is not None:
            keys = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())
            flat = flat_state(self, index, params, keys, lambda p: {"step": new_step()})
            if flat is not None:
                self._step_flat(group, params, flat)
                return
        self._flat.pop(index, None)  # the loop may set steps apart (Note [Flat optimizer state])
        self._step_loop(group)

    def _step_flat(self, group: dict, params: list, flat: dict) -> None:
        """The whole group at once (Note [Flat optimizer state]): the loop's float
        operations on one buffer per state entry, so the results are bitwise the loop's."""
        lr = float(group["lr"])
        beta1, beta2 = (float(b) for b in group["betas"])
        eps = float(group["eps"])
        weight_decay = float(group["weight_decay"])
        maximize = group["maximize"]
        state = self.state
        for p in params:
            state[p]["step"]._data += 1
        step = state[params[0]]["step"]._data  # all steps agree on the flat path
        if group["decoupled_weight_decay"]:
            if weight_decay != 0:
                for p in params:
                    np.multiply(p._data, 1 - lr * weight_decay, out=p._data)
            grad = flat_grad(params, flat, maximize, 0.0)
        else:
            grad = flat_grad(params, flat, maximize, weight_decay)
        work = flat["work"]
        exp_avg, exp_avg_sq = flat["exp_avg"], flat["exp_avg_sq"]
        np.subtract(grad, exp_avg, out=work)
        np.multiply(work, 1 - beta1, out=work)
        np.add(exp_avg, work, out=exp_avg)
        np.multiply(exp_avg_sq, beta2, out=exp_avg_sq)
        np.multiply(grad, 1 - beta2, out=work)
        np.multiply(work, grad, out=work)
        np.add(exp_avg_sq, work, out=exp_avg_sq)
        dtype = work.dtype
        bias_correction2_sqrt = ((1 - np.power(beta2, step, dtype=np.float64)) ** 0.5).astype(dtype)
        neg_step_size = (-lr / (1 - np.power(beta1, step, dtype=np.float64))).astype(dtype)
        second = exp_avg_sq
        if group["amsgrad"]:
            second = flat["max_exp_avg_sq"]
            np.maximum(second, exp_avg_sq, out=second)
        denom = np.sqrt(second, out=work)
        np.divide(denom, bias_correction2_sqrt, out=denom)
        np.add(denom, eps, out=denom)
        np.divide(exp_avg, denom, out=denom)
        np.multiply(denom, neg_step_size, out=denom)
        add_to_params(params, flat, denom)

    def _step_loop(self, group: dict) -> None:
        lr = float(group["lr"])
        beta1, beta2 = (float(b) for b in group["betas"])
        eps = float(group["eps"])
        weight_decay = float(group["weight_decay"])
        amsgrad = group["amsgrad"]
        maximize = group["maximize"]
        decoupled = group["decoupled_weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                state["step"] = Tensor._wrap(np.zeros((), np.float32))
                state["exp_avg"] = Tensor._wrap(np.zeros_like(p._data))
                state["exp_avg_sq"] = Tensor._wrap(np.zeros_like(p._data))
                if amsgrad:
                    state["max_exp_avg_sq"] = Tensor._wrap(np.zeros_like(p._data))
            step_array = state["step"]._data
            step_array += 1
            # A 0-d array, not float(step): the bias corrections stay array math, so a
            # step recorded by tapegrad.jit replays with the current count.
            step = step_array

            if decoupled:
                if weight_decay != 0:
                    np.multiply(p._data, 1 - lr * weight_decay, out=p._data)
                grad = self._grad(p, maximize, 0.0)
            else:
                grad = self._grad(p, maximize, weight_decay)

            work = self._scratch(grad)
            exp_avg = state["exp_avg"]._data
            exp_avg_sq = state["exp_avg_sq"]._data
            # m += (1 - beta1) * (g - m): torch's lerp_, same rounding
            np.subtract(grad, exp_avg, out=work)
            np.multiply(work, 1 - beta1, out=work)
            np.add(exp_avg, work, out=exp_avg)
            # v = beta2 * v + (1 - beta2) * g * g
            np.multiply(exp_avg_sq, beta2, out=exp_avg_sq)
            np.multiply(grad, 1 - beta2, out=work)
            np.multiply(work, grad, out=work)
            np.add(exp_avg_sq, work, out=exp_avg_sq)

            # Corrections in float64 (as torch's Python floats), applied in the param's
            # dtype so the array math below stays float32 for float32 parameters.
            dtype = p._data.dtype
            # np.power(float, float32 step, dtype=float64): the step widened exactly, no
            # separate cast; -lr / x is -(lr / x) exactly, so no negation pass below.
            bias_correction2_sqrt = ((1 - np.power(beta2, step, dtype=np.float64)) ** 0.5).astype(
                dtype
            )
            neg_step_size = (-lr / (1 - np.power(beta1, step, dtype=np.float64))).astype(dtype)
            if amsgrad:
                second = state["max_exp_avg_sq"]._data
                np.maximum(second, exp_avg_sq, out=second)
            else:
                second = exp_avg_sq
            denom = np.sqrt(second, out=work)
            np.divide(denom, bias_correction2_sqrt, out=denom)
            np.add(denom, eps, out=denom)
            np.divide(exp_avg, denom, out=denom)
            np.multiply(denom, neg_step_size, out=denom)
            np.add(p._data, denom, out=p._data)
            bump_version(p)


class AdamW(Adam):
    """Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` before the update).

    Same arguments as :class:`Adam`; ``weight_decay`` defaults to 0.01.

    >>> import tapegrad as tg
    >>> w = tg.tensor([1.0, -1.0], requires_grad=True)
    >>> opt = tg.optim.AdamW([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.8990, -0.8990], requires_grad=True)
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ):
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )
