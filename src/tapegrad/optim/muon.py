"""Muon (Jordan et al. 2024): momentum orthogonalised by a Newton-Schulz iteration, with
torch 2.13's update rule (``torch.optim.Muon``).

Note [Muon in bfloat16]
torch runs the Newton-Schulz iteration in bfloat16 whatever the parameter's dtype: the
momentum is rounded to bfloat16, and every op of the iteration (norm, divide, the two
``addmm`` per step) computes in float32 and rounds its result to bfloat16. The update
therefore carries bfloat16 rounding, which a float32 or float64 iteration would not
reproduce (its differences are lr * 2**-8 relative). tapegrad rounds at the same points
(``_bf16``), so its parameters follow torch's; a product whose float32 sum lands on a
bfloat16 rounding boundary may still round the other way (rare; one ulp of bfloat16).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtypes
from ..tensor import Tensor
from .optimizer import Optimizer, bump_version

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _bf16(x):
    """Round to bfloat16 (through float32, as torch's conversion) and widen to float32."""
    return np.asarray(x, np.float32).astype(_dtypes._bfloat16()).astype(np.float32)


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps: int, eps: float):
    """The quintic Newton-Schulz iteration of torch (``_zeropower_via_newtonschulz``),
    with bfloat16 rounding after every op (Note [Muon in bfloat16]); float32 values."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = (float(v) for v in ns_coefficients)
    x = _bf16(grad)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    norm = _bf16(np.sqrt(np.sum(x.astype(np.float64) ** 2)))
    norm = np.maximum(norm, _bf16(eps))
    x = _bf16(x / norm)
    for _ in range(ns_steps):
        x64 = x.astype(np.float64)
        gram = _bf16(x64 @ x64.T)
        g64 = gram.astype(np.float64)
        gram_update = _bf16(b * g64 + c * (g64 @ g64))
        x = _bf16(a * x64 + gram_update.astype(np.float64) @ x64)
    return x.T if tall else x


def _adjust_lr(lr: float, adjust_lr_fn, shape) -> float:
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


def _lerp(a, b, weight: float):
    """``a.lerp(b, weight)`` with torch's two-sided formula."""
    w = a.dtype.type(weight)
    if abs(weight) < 0.5:
        return a + w * (b - a)
    return b - (b - a) * a.dtype.type(1 - weight)


class Muon(Optimizer):
    """Muon, for 2-d parameters (hidden layers' weight matrices).

    With ``g`` the gradient, at each step::

        B = lerp(B, g, 1 - momentum)
        U = lerp(g, B, momentum)     (nesterov; otherwise U = B)
        O = NS(U)                    (ns_steps quintic Newton-Schulz steps, in bfloat16)
        p = p * (1 - lr * weight_decay)
        p = p - adjust(lr, p.shape) * O

    ``adjust`` is ``lr * sqrt(max(1, rows / cols))`` ("original", the default) or
    ``lr * 0.2 * sqrt(max(rows, cols))`` ("match_rms_adamw").

    Args:
        params: 2-d parameters or parameter groups (see :class:`Optimizer`).
        lr, weight_decay, momentum, nesterov: as above.
        ns_coefficients: ``(a, b, c)`` of the quintic iteration.
        eps: floor of the norm the momentum is divided by.
        ns_steps: Newton-Schulz steps (< 100).
        adjust_lr_fn: None, "original" or "match_rms_adamw".

    State per parameter: ``momentum_buffer``.

    Raises:
        ValueError: for a negative lr, momentum or weight decay, an unknown
            ``adjust_lr_fn``, or a parameter that is not 2-d.
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS,
                 ns_steps=DEFAULT_NS_STEPS, adjust_lr_fn=None):  # fmt: skip
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn)  # fmt: skip
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(
                        "Muon only supports 2D parameters whereas we found a parameter with "
                        f"size: {p.size()}"
                    )

    def _step_group(self, group: dict) -> None:
        lr = float(group["lr"])
        weight_decay = float(group["weight_decay"])
        momentum = float(group["momentum"])
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.is_complex():
                raise RuntimeError("Muon does not support complex parameters")
            grad = p.grad._data
            if grad.ndim != 2:
                raise ValueError("Param gradient must be a 2D matrix")
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = Tensor._wrap(np.zeros_like(grad))
            buf = state["momentum_buffer"]._data
            buf[...] = _lerp(buf, grad, 1 - momentum)
            update = _lerp(grad, buf, momentum) if group["nesterov"] else buf
            ortho = _zeropower_via_newtonschulz(
                update, group["ns_coefficients"], group["ns_steps"], group["eps"]
            )
            adjusted_lr = _adjust_lr(lr, group["adjust_lr_fn"], p.shape)
            data = p._data
            np.multiply(data, 1 - lr * weight_decay, out=data)
            np.add(data, ortho.astype(data.dtype) * data.dtype.type(-adjusted_lr), out=data)
            bump_version(p)
