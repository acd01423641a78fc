"""RMSprop, optionally centered and with momentum."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .optimizer import Optimizer, bump_version, check_hyper, compat_flags

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop, with PyTorch's update rule.

    With ``g`` the gradient (negated when ``maximize``) plus ``weight_decay * p``::

        v = alpha * v + (1 - alpha) * g * g
        a = g_avg + (1 - alpha) * (g - g_avg); d = sqrt(v - a * a) + eps  (centered)
        d = sqrt(v) + eps                                              (otherwise)
        b = momentum * b + g / d; p = p - lr * b     (momentum > 0)
        p = p - lr * g / d                           (otherwise)

    Args:
        params: parameters or parameter groups (see :class:`Optimizer`).
        lr: learning rate.
        alpha: smoothing constant of the squared-gradient average.
        eps: added to the denominator for numerical stability.
        weight_decay: L2 penalty added to the gradient.
        momentum: momentum factor.
        centered: normalise by the estimated variance of the gradient.
        maximize: maximize the objective instead of minimizing it.

    State per parameter: ``step``, ``square_avg``, and ``momentum_buffer`` (momentum > 0)
    and ``grad_avg`` (centered).
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        check_hyper("learning rate", lr)
        check_hyper("epsilon value", eps)
        check_hyper("momentum value", momentum)
        check_hyper("weight_decay value", weight_decay)
        check_hyper("alpha value", alpha)
        defaults = dict(
            lr=lr,
            alpha=alpha,
            eps=eps,
            weight_decay=weight_decay,
            momentum=momentum,
            centered=centered,
            maximize=maximize,
            **compat_flags(
                "RMSprop", capturable=capturable, foreach=foreach, differentiable=differentiable
            ),
        )
        super().__init__(params, defaults)

    def _step_group(self, group: dict) -> None:
        lr = float(group["lr"])
        alpha = float(group["alpha"])
        eps = float(group["eps"])
        weight_decay = float(group["weight_decay"])
        momentum = float(group["momentum"])
        centered = group["centered"]
        maximize = group["maximize"]
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                state["step"] = Tensor._wrap(np.zeros((), np.float32))
                state["square_avg"] = Tensor._wrap(np.zeros_like(p._data))
                if momentum > 0:
                    state["momentum_buffer"] = Tensor._wrap(np.zeros_like(p._data))
                if centered:
                    state["grad_avg"] = Tensor._wrap(np.zeros_like(p._data))
            step_array = state["step"]._data
            step_array += 1

            grad = self._grad(p, maximize, weight_decay)
            work = self._scratch(grad)
            square_avg = state["square_avg"]._data
            np.multiply(square_avg, alpha, out=square_avg)
            np.multiply(grad, 1 - alpha, out=work)
            np.multiply(work, grad, out=work)
            np.add(square_avg, work, out=square_avg)

            if centered:
                grad_avg = state["grad_avg"]._data
                # g_avg += (1 - alpha) * (g - g_avg): torch's lerp_
                np.subtract(grad, grad_avg, out=work)
                np.multiply(work, 1 - alpha, out=work)
                np.add(grad_avg, work, out=grad_avg)
                np.multiply(grad_avg, grad_avg, out=work)
                avg = np.subtract(square_avg, work, out=work)
                np.sqrt(avg, out=avg)
            else:
                avg = np.sqrt(square_avg, out=work)
            np.add(avg, eps, out=avg)

            if momentum > 0:
                buf = state["momentum_buffer"]._data
                np.multiply(buf, momentum, out=buf)
                np.divide(grad, avg, out=avg)
                np.add(buf, avg, out=buf)
                np.multiply(buf, -lr, out=work)
            else:
                np.divide(grad, avg, out=work)
                np.multiply(work, -lr, out=work)
            np.add(p._data, work, out=p._data)
            bump_version(p)
