"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from ._flat import add_to_params, flat_grad, flat_params, flat_state
from .optimizer import Optimizer, bump_version, check_hyper, compat_flags

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, with PyTorch's update rule.

    With ``g`` the gradient (negated when ``maximize``) plus ``weight_decay * p``::

        b = g                                   (first step)
        b = momentum * b + (1 - dampening) * g  (later steps)
        d = g + momentum * b if nesterov else b   (d = g when momentum == 0)
        p = p - lr * d

    Args:
        params: parameters or parameter groups (see :class:`Optimizer`).
        lr: learning rate.
        momentum: momentum factor (0 disables the buffer).
        dampening: dampening of the momentum.
        weight_decay: L2 penalty added to the gradient.
        nesterov: use Nesterov momentum (needs momentum > 0 and dampening == 0).
        maximize: maximize the objective instead of minimizing it.

    >>> import tapegrad as tg
    >>> w = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> opt = tg.optim.SGD([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([0.8000, 1.6000], requires_grad=True)
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ):
        check_hyper("learning rate", lr)
        check_hyper("momentum value", momentum)
        check_hyper("weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
            **compat_flags("SGD", foreach=foreach, differentiable=differentiable, fused=fused),
        )
        super().__init__(params, defaults)

    def _step_group(self, group: dict) -> None:
        index = next(i for i, g in enumerate(self.param_groups) if g is group)
        params = flat_params(group)
        if params is not None:
            keys = ("momentum_buffer",) if float(group["momentum"]) != 0 else ()
            flat = flat_state(self, index, params, keys, lambda p: {})
            if flat is not None:
                self._step_flat(group, params, flat)
                return
        self._flat.pop(index, None)
        self._step_loop(group)

    def _step_flat(self, group: dict, params: list, flat: dict) -> None:
        """The whole group at once (Note [Flat optimizer state]), bitwise the loop."""
        lr = float(group["lr"])
        momentum = float(group["momentum"])
        dampening = float(group["dampening"])
        grad = flat_grad(params, flat, group["maximize"], float(group["weight_decay"]))
        work = flat["work"]
        if momentum != 0:
            buf = flat["momentum_buffer"]
            layout = flat["layout"]
            if layout.fresh:  # the first step: the buffer is the gradient
                layout.fresh = False
                np.positive(grad, out=buf)
            else:
                np.multiply(buf, momentum, out=buf)
                if dampening == 0:
                    np.add(buf, grad, out=buf)
                else:
                    np.multiply(grad, 1 - dampening, out=work)
                    np.add(buf, work, out=buf)
            if group["nesterov"]:
                np.multiply(buf, momentum, out=work)
                grad = np.add(grad, work, out=work)
            else:
                grad = buf
        np.multiply(grad, -lr, out=work)
        add_to_params(params, flat, work)

    def _step_loop(self, group: dict) -> None:
        lr = float(group["lr"])
        momentum = float(group["momentum"])
        dampening = float(group["dampening"])
        weight_decay = float(group["weight_decay"])
        nesterov = group["nesterov"]
        maximize = group["maximize"]
        for p in group["params"]:
            if p.grad is None:
                continue
            grad = self._grad(p, maximize, weight_decay)
            work = self._scratch(grad)
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = state["momentum_buffer"] = Tensor._wrap(grad.copy())
                else:
                    np.multiply(buf._data, momentum, out=buf._data)
                    if dampening == 0:
                        np.add(buf._data, grad, out=buf._data)
                    else:
                        np.multiply(grad, 1 - dampening, out=work)
                        np.add(buf._data, work, out=buf._data)
                if nesterov:
                    np.multiply(buf._data, momentum, out=work)
                    grad = np.add(grad, work, out=work)
                else:
                    grad = buf._data
            np.multiply(grad, -lr, out=work)
            np.add(p._data, work, out=p._data)
            bump_version(p)
