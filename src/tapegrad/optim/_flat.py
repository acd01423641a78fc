"""One flat buffer per state entry of a parameter group: the optimizers' whole-group path.

Note [Flat optimizer state]
An optimizer that loops over parameters issues some twenty NumPy calls per parameter
(AdamW on the benchmarks' small GPT: 560 calls, 1.7 ms a step, most of it call
overhead on arrays of a few thousand elements). The flat path, like torch's
``foreach`` kernels, keeps each state entry of a group (``exp_avg``, ``exp_avg_sq``,
``momentum_buffer``) in one contiguous buffer, gathers the gradients into one more
with a single ``concatenate``, runs the update as a handful of whole-buffer ufuncs, and
touches each parameter only to add its slice of the update (and to decay it). Every
element goes through the same float operations in the same order as in the loop, so the
two paths agree bit for bit (tests/test_optim_flat.py).

The per-parameter state that users, ``state_dict`` and torch see is unchanged: each
``state[p][key]`` is a Tensor over a view of the group's buffer, and ``step`` stays one
0-d tensor per parameter. A group takes the flat path when every parameter it updates
this step is a dense NumPy array with a gradient of its own shape and dtype, all of one
floating dtype, and either has no state yet or (outside a ``tapegrad.jit`` recording,
which must not read values into Python) has state whose step counts all agree; its
buffers are then created or gathered from the existing state once. Otherwise (a
parameter without a gradient on this step, mixed dtypes, diverged steps, ``foreach=False``)
the group runs the per-parameter loop on the same state, and the flat buffers are dropped.

Buffers live in ``opt._flat[group_index]``, a dict of arrays that ``tapegrad.jit``'s state
walk reaches (Note [Reachable state]), so replays read and update them in place; the
Python-side layout (which parameter owns which slice) is opaque to the walk.
``load_state_dict`` empties ``opt._flat``, which both makes the next eager step gather the
loaded state and fails the replay guards on ``opt._flat``'s length, so a cached step
records again.
"""

from __future__ import annotations

import numpy as np

from .. import _trace
from ..tensor import Tensor

__all__ = ["flat_state", "flat_params", "flat_grad", "add_to_params", "gather", "slices"]


class _Layout:
    """Which parameter owns which slice (Python bookkeeping, not walked by tapegrad.jit)."""

    _tg_jit_opaque = True
    __slots__ = ("params", "tensors", "spans", "fresh")

    def __init__(self, params, tensors, spans, fresh):
        self.params = params  # tuple of parameters, in group order
        self.tensors = tensors  # {key: [the state Tensor of each parameter]}
        self.spans = spans  # [(start, stop, shape)]
        self.fresh = fresh  # the buffers were created, not gathered (SGD's first step)

    def holds(self, params, state, keys) -> bool:
        """Whether the state of ``params`` is still the Tensors over this layout's buffers."""
        mine = self.params
        if len(mine) != len(params) or any(a is not b for a, b in zip(mine, params)):
            return False
        if len(keys) != len(self.tensors) or any(k not in self.tensors for k in keys):
            return False  # amsgrad or momentum switched on or off
        for key, tensors in self.tensors.items():
            for p, t in zip(params, tensors):
                s = state.get(p)
                if s is None or s.get(key) is not t:
                    return False
        return True


def flat_params(group):
    """The parameters of ``group`` that the flat path updates, or None where it does not
    apply (Note [Flat optimizer state])."""
    if group.get("foreach") is False:
        return None
    params = group["params"]
    if not params:
        return None
    dtype = None
    for p in params:
        g = p.grad
        if g is None:
            return None
        a, ga = p._data, g._data
        if not isinstance(a, np.ndarray) or not isinstance(ga, np.ndarray):  # or jit's tracer
            return None
        if dtype is None:
            dtype = a.dtype
            if dtype.kind != "f":
                return None
        if a.dtype != dtype or ga.dtype != dtype or ga.shape != a.shape:
            return None
    return params


def flat_state(opt, index, params, keys, new_state):
    """The flat buffers of group ``index`` (a dict: one array per key, plus ``"grad"`` and
    ``"work"``), created or gathered as needed; None when the group must run the
    per-parameter loop.

    Args:
        opt: the optimizer.
        index: the group's position in ``opt.param_groups``.
        params: the parameters updated (:func:`flat_params`).
        keys: the state entries kept flat, in state order (``("exp_avg", "exp_avg_sq")``).
        new_state: ``new_state(p)`` -> the state dict of a parameter with no state yet,
            holding everything except ``keys`` (such as ``step``), in torch's order.
    """
    flat = opt._flat.get(index)
    if flat is not None and flat["layout"].holds(params, opt.state, keys):
        return flat
    opt._flat.pop(index, None)
    states = [opt.state.get(p) for p in params]
    fresh = all(not s for s in states)
    if not fresh:
        if _trace.recording() or not _adoptable(states, keys, params):
            return None
    dtype = params[0]._data.dtype
    spans, start = [], 0
    for p in params:
        spans.append((start, start + p._data.size, p._data.shape))
        start += p._data.size
    flat = {k: np.zeros(start, dtype) for k in keys}
    flat["grad"] = np.empty(start, dtype)
    flat["work"] = np.empty(start, dtype)
    tensors = {k: [] for k in keys}
    views = {k: slices(flat[k], spans) for k in keys}
    for i, p in enumerate(params):
        if not keys:
            continue  # nothing kept per parameter (SGD without momentum)
        if fresh:
            state = opt.state[p] = new_state(p)
        else:
            state = opt.state[p]
        for k in keys:
            view = views[k][i]
            if not fresh:
                view[...] = state[k]._data
            state[k] = t = Tensor._wrap(view)
            tensors[k].append(t)
    flat["layout"] = _Layout(tuple(params), tensors, spans, fresh)
    opt._flat[index] = flat
    return flat


def _adoptable(states, keys, params) -> bool:
    """Existing state that can move into flat buffers: every entry present with its
    parameter's shape and dtype, and one step count for all."""
    steps = set()
    for s, p in zip(states, params):
        if not s or any(k not in s for k in keys):
            return False
        for k in keys:
            a = s[k]._data
            if type(a) is not np.ndarray or a.shape != p._data.shape or a.dtype != p._data.dtype:
                return False
        if "step" in s:
            steps.add(float(s["step"]._data))
    return len(steps) <= 1


def slices(buffer, spans):
    """Each parameter's view of a flat buffer, in its own shape."""
    return [buffer[a:b].reshape(shape) for a, b, shape in spans]


def gather(arrays, out):
    """Copy ``arrays`` one after another into the flat buffer ``out``."""
    return np.concatenate([a.reshape(-1) for a in arrays], out=out)


def flat_grad(params, flat, maximize, weight_decay):
    """The group's gradients in ``flat["grad"]``, as ``Optimizer._grad`` makes them:
    negated when maximizing, plus ``weight_decay * p`` (``flat["work"]`` is overwritten)."""
    grad = gather([p.grad._data for p in params], flat["grad"])
    if weight_decay != 0:
        work = flat["work"]
        decay = np.multiply(gather([p._data for p in params], work), weight_decay, out=work)
        return (np.subtract if maximize else np.add)(decay, grad, out=grad)
    if maximize:
        np.negative(grad, out=grad)
    return grad


def add_to_params(params, flat, update):
    """``p += update[p's slice]`` for every parameter, each counted as one in-place update."""
    for p, (a, b, shape) in zip(params, flat["layout"].spans):
        np.add(p._data, update[a:b].reshape(shape), out=p._data)
        p._vc.value += 1
