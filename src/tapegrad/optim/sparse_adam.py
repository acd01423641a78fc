"""SparseAdam: Adam that updates only the rows a gradient touches (PyTorch's rule).

PyTorch's SparseAdam takes sparse gradients (``nn.Embedding(sparse=True)``) and updates
the moments and the parameter at the gradient's (coalesced) indices only; every other
row keeps its moments and value, even as the step count grows.

tapegrad's autograd produces dense gradients (``nn.Embedding(sparse=True)`` is accepted
and gives a dense one). So SparseAdam takes either:

* a sparse COO gradient (``tg.sparse_coo_tensor``, set as ``p.grad``): its coalesced
  indices are the rows, exactly as torch; or
* a dense gradient: the rows (slices along dim 0) with a nonzero entry are the rows.

The two agree except for a row that an embedding looked up but whose gradient is exactly
zero: torch's sparse gradient lists it (its moments decay by beta1/beta2, its value
moves by the decayed first moment), the dense one cannot tell it from an untouched row.
PyTorch raises for dense gradients ("please consider Adam instead"); tapegrad accepts
them, because they are what its ``nn.Embedding(sparse=True)`` produces.
"""

from __future__ import annotations

import math

import numpy as np

from .optimizer import Optimizer, bump_version

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Adam restricted to the rows a gradient touches, as ``torch.optim.SparseAdam``.

    At step ``t`` (counted per parameter, on steps where it has a gradient), for the rows
    ``r`` of the gradient ``g`` (negated when ``maximize``)::

        m[r] += (1 - beta1) * (g[r] - m[r])
        v[r] += (1 - beta2) * (g[r]**2 - v[r])
        p[r] -= lr * sqrt(1 - beta2**t) / (1 - beta1**t) * m[r] / (sqrt(v[r]) + eps)

    Args:
        params: parameters or parameter groups (dense tensors).
        lr: learning rate.
        betas: decay rates of the first and second moment averages.
        eps: added to the denominator.
        maximize: maximize the objective instead of minimizing it.

    State per parameter (torch's keys): ``step`` (int), ``exp_avg``, ``exp_avg_sq``.

    >>> import tapegrad as tg
    >>> emb = tg.nn.Embedding(4, 2, sparse=True)
    >>> opt = tg.optim.SparseAdam(emb.parameters(), lr=0.1)
    >>> before = emb.weight.detach().clone()
    >>> emb(tg.tensor([1, 1, 3])).sum().backward(); opt.step()
    >>> (emb.weight != before).any(dim=1).tolist()  # only the rows looked up moved
    [False, True, False, True]
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i in range(2):
            if not 0.0 <= betas[i] < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        sparse, complex_ = [], []
        for gi, group in enumerate(self.param_groups):
            for pi, p in enumerate(group["params"]):
                if getattr(p, "is_sparse", False):
                    sparse.append([gi, pi])
                elif p._data.dtype.kind == "c":
                    complex_.append([gi, pi])
        if sparse:
            raise ValueError(
                f"Sparse params at indices {sparse}: SparseAdam requires dense parameter tensors"
            )
        if complex_:
            raise ValueError(
                f"Complex params at indices {complex_}: SparseAdam does not support complex "
                "parameters"
            )

    def _step_group(self, group):
        lr, eps = float(group["lr"]), float(group["eps"])
        beta1, beta2 = (float(b) for b in group["betas"])
        maximize = group.get("maximize", False)
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                from ..tensor import Tensor  # noqa: PLC0415 - keep the import list short

                state["step"] = 0
                state["exp_avg"] = Tensor._wrap(np.zeros_like(p._data))
                state["exp_avg_sq"] = Tensor._wrap(np.zeros_like(p._data))
            state["step"] += 1
            key, values = _rows(p.grad, p._data.shape)
            if values.size == 0:
                continue
            if maximize:
                values = -values
            exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
            # torch's order of operations (torch.optim._functional.sparse_adam)
            old_m = exp_avg[key]
            upd_m = (values - old_m) * p._data.dtype.type(1 - beta1)
            exp_avg[key] = old_m + upd_m
            old_v = exp_avg_sq[key]
            upd_v = (values * values - old_v) * p._data.dtype.type(1 - beta2)
            exp_avg_sq[key] = old_v + upd_v
            numer = upd_m + old_m
            denom = np.sqrt(upd_v + old_v) + p._data.dtype.type(eps)
            step = state["step"]
            step_size = lr * math.sqrt(1 - beta2**step) / (1 - beta1**step)
            p._data[key] += p._data.dtype.type(-step_size) * (numer / denom)
            bump_version(p)


def _rows(grad, shape):
    """``(key, values)``: the index the update touches and the gradient there.

    A sparse gradient gives its coalesced indices (one tuple entry per sparse dim); a
    dense one the dim-0 slices holding a nonzero entry.
    """
    if getattr(grad, "is_sparse", False):
        g = grad.coalesce()
        idx = g._indices()._data
        return tuple(idx), g._values()._data
    g = grad._data
    if g.ndim == 0:  # a scalar parameter: one row, touched when its gradient is nonzero
        return (), g.reshape(-1)[g.reshape(-1) != 0].reshape(-1)
    nz = np.flatnonzero(np.any(g.reshape(g.shape[0], -1) != 0, axis=1))
    return (nz,), g[nz]
