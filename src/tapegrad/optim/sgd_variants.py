"""ASGD (averaged SGD) and Rprop (resilient backpropagation), PyTorch's update rules."""

from __future__ import annotations

import numpy as np

from .. import _trace
from ..tensor import Tensor
from .optimizer import Optimizer, bump_version, check_hyper, compat_flags, new_step

__all__ = ["ASGD", "Rprop"]


class ASGD(Optimizer):
    """Averaged SGD::

        p = p * (1 - lambd * eta) - eta * g
        ax = ax + mu * (p - ax)   (ax = p while mu == 1)
        eta = lr / (1 + lambd * lr * step) ** alpha;   mu = 1 / max(1, step - t0)

    State: ``step``, ``eta``, ``mu`` (0-d float32 tensors, as torch) and ``ax``, the average.
    """

    def __init__(
        self,
        params,
        lr=1e-2,
        lambd=1e-4,
        alpha=0.75,
        t0=1e6,
        weight_decay=0.0,
        foreach=None,
        maximize=False,
        differentiable=False,
        capturable=False,
    ):
        check_hyper("learning rate", lr)
        check_hyper("weight_decay value", weight_decay)
        defaults = dict(
            lr=lr,
            lambd=lambd,
            alpha=alpha,
            t0=t0,
            weight_decay=weight_decay,
            maximize=maximize,
            **compat_flags(
                "ASGD", foreach=foreach, differentiable=differentiable, capturable=capturable
            ),
        )
        super().__init__(params, defaults)

    def _step_group(self, group):
        lr, lambd = float(group["lr"]), float(group["lambd"])
        alpha, t0 = float(group["alpha"]), float(group["t0"])
        weight_decay = float(group["weight_decay"])
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                state["step"] = new_step()
                state["eta"] = Tensor._wrap(np.asarray(lr, np.float32))
                state["mu"] = Tensor._wrap(np.ones((), np.float32))
                state["ax"] = Tensor._wrap(np.zeros_like(p._data))
            state["step"]._data += 1
            grad = self._grad(p, group["maximize"], weight_decay)
            # array math on eta, mu and step: Note [Step arrays] in adaptive.py
            dtype = p._data.dtype
            eta = state["eta"]._data.astype(np.float64)
            np.multiply(p._data, (1 - lambd * eta).astype(dtype), out=p._data)
            work = self._scratch(grad)
            np.multiply(grad, (-eta).astype(dtype), out=work)
            np.add(p._data, work, out=p._data)
            ax, mu = state["ax"]._data, state["mu"]._data
            if _trace.recording():  # branch-free: where mu == 1 the average is p itself
                np.subtract(p._data, ax, out=work)
                np.multiply(work, mu.astype(dtype), out=work)
                np.add(ax, work, out=ax)
                np.copyto(ax, p._data, where=(mu == 1))
            elif mu != 1:
                np.subtract(p._data, ax, out=work)
                np.multiply(work, mu.astype(dtype), out=work)
                np.add(ax, work, out=ax)
            else:
                ax[...] = p._data
            step = state["step"]._data.astype(np.float64)
            state["eta"]._data[...] = lr / ((1 + lambd * lr * step) ** alpha)
            state["mu"]._data[...] = 1 / np.maximum(1.0, step - t0)
            bump_version(p)


class Rprop(Optimizer):
    """Resilient backpropagation: per-coordinate step sizes grow by ``etas[1]`` while the
    gradient keeps its sign and shrink by ``etas[0]`` when it flips (then that coordinate
    skips one update); sizes stay within ``step_sizes``.

    State: ``step``, ``prev`` (the last gradient used) and ``step_size``.
    """

    def __init__(
        self,
        params,
        lr=1e-2,
        etas=(0.5, 1.2),
        step_sizes=(1e-6, 50),
        *,
        capturable=False,
        foreach=None,
        maximize=False,
        differentiable=False,
    ):
        check_hyper("learning rate", lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(
            lr=lr,
            etas=tuple(etas),
            step_sizes=tuple(step_sizes),
            maximize=maximize,
            **compat_flags(
                "Rprop", foreach=foreach, differentiable=differentiable, capturable=capturable
            ),
        )
        super().__init__(params, defaults)

    def _step_group(self, group):
        etaminus, etaplus = (float(e) for e in group["etas"])
        size_min, size_max = (float(s) for s in group["step_sizes"])
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                state["step"] = new_step()
                state["prev"] = Tensor._wrap(np.zeros_like(p._data))
                state["step_size"] = Tensor._wrap(np.full_like(p._data, float(group["lr"])))
            state["step"]._data += 1
            grad = p.grad._data
            if group["maximize"]:
                grad = -grad
            prev, step_size = state["prev"]._data, state["step_size"]._data
            sign = np.sign(grad * prev)
            factor = np.where(sign > 0, etaplus, np.where(sign < 0, etaminus, 1.0))
            factor = factor.astype(step_size.dtype)
            np.multiply(step_size, factor, out=step_size)
            np.clip(step_size, size_min, size_max, out=step_size)
            grad = np.where(factor == np.asarray(etaminus, factor.dtype), 0, grad)
            grad = grad.astype(p._data.dtype, copy=False)
            p._data -= np.sign(grad) * step_size
            prev[...] = grad
            bump_version(p)
