"""grad and jacrev inside vmap: leaves batched at every open level (Note [grad under vmap]).

func.py's transforms call these when a vmap level is open (``LEVELS.active``).
"""

from __future__ import annotations

import numpy as np

from ._batched import LEVELS, BatchedTensor, _trap, op, wrap
from .autograd.graph import AccumulateGrad
from .tensor import Tensor

__all__ = ["physical", "lift_leaf", "lifter", "rewrap_like", "jacobian", "plan_backward"]


# -- grad under vmap ------------------------------------------------------------------------

# Note [grad under vmap]
# ``vmap(grad(f))``: grad lifts its arguments to leaves batched at EVERY open vmap level,
# expanding (a stride-0 view, no copy) along the levels an argument is not batched at, and
# differentiates the physical graph. Batch elements never mix in a batching rule, so the
# gradient of the sum of the physical outputs with respect to the physical leaf holds each
# element's own gradient: per-sample gradients, also for parameters that are not mapped
# (in_dims=None), whose physical leaf is the expanded one, never summed over the batch.


def physical(t):
    """The plain tensor under every BatchedTensor wrapper of ``t``."""
    while type(t) is BatchedTensor:
        t = t._bval
    return t


def lift_leaf(t, attached: bool):
    """``t`` as a leaf batched at every open level (Note [grad under vmap]).

    attached: ``t`` requires grad for an enclosing transform; keep it in that graph.
    """
    if type(t) is not BatchedTensor and not (attached and t._rg):
        # A plain tensor: the stride-0 expansion straight on the array (the ops below
        # would record an unsqueeze and an expand only for the leaf to drop them).
        sizes = LEVELS.sizes
        p = Tensor._wrap(_expand_front(t._data, tuple([sizes[lv] for lv in LEVELS.active])))
        p._vc_ = t._vc  # the slot behind the _vc property: the leaf shares t's counter
        p._rg = True
    else:
        p = _expanded(t)
        if attached and p.requires_grad:
            p = op("reshape", p, tuple(p.shape))
        else:
            p = p.detach().requires_grad_(True)
    out = p
    for level in LEVELS.active:
        out = wrap(out, level)
    return out


def lifter(enabled: bool):
    """``lift(t)``: :func:`lift_leaf` for the open levels as they are now, ``attached``
    being ``t.requires_grad and enabled``; the common case (a plain tensor) inlined."""
    active = tuple(LEVELS.active)
    sizes = tuple([LEVELS.sizes[lv] for lv in active])

    def lift(t):
        if type(t) is BatchedTensor or (enabled and t._rg):
            return lift_leaf(t, enabled and t.requires_grad)
        p = Tensor._wrap(_expand_front(t._data, sizes))
        p._vc_ = t._vc  # the slot behind the _vc property: the leaf shares t's counter
        p._rg = True
        for level in active:
            p = wrap(p, level)
        return p

    return lift


def _expand_front(arr, sizes: tuple):
    """``np.broadcast_to(arr, sizes + arr.shape)`` (read-only, stride 0 along ``sizes``),
    built directly for a contiguous array: a third of broadcast_to's cost."""
    if type(arr) is np.ndarray and arr.size and (arr.flags.c_contiguous or arr.flags.f_contiguous):
        v = np.ndarray(sizes + arr.shape, arr.dtype, arr, 0, (0,) * len(sizes) + arr.strides)
        v.flags.writeable = False
        return v
    return np.broadcast_to(arr, sizes + arr.shape)


def expand_physical(t):
    """The physical value of ``t`` with a batch dim for every open level (stride-0 where
    ``t`` is not batched), and ``t`` rewrapped around it: ``(physical, rewrap)``."""
    p = _expanded(t)

    def rewrap(x):
        for level in LEVELS.active:
            x = wrap(x, level)
        return x

    return p, rewrap


def _expanded(t):
    present = []
    p = t
    while type(p) is BatchedTensor:
        present.append(p._blevel)
        p = p._bval
    for i, level in enumerate(LEVELS.active):  # physical dim i is level active[i]
        if level not in present:
            shape = tuple(p.shape)
            p = op("expand", op("unsqueeze", p, i), shape[:i] + (LEVELS.sizes[level],) + shape[i:])
    return p


def plan_backward(root, leaves):
    """``(other, nodes, targets)`` for grad's backward from Node ``root`` to the (physical)
    ``leaves``: ``other``, whether a leaf other than them feeds ``root``; when none does
    and no Node or leaf in the graph has a hook, ``nodes`` (the graph's Nodes) and
    ``targets`` (the AccumulateGrads of ``leaves`` with exactly one incoming edge), for
    Note [Deferred outer products] in _vmap_linear.py; else None for both."""
    if root is None:
        return False, None, None
    own = {id(o) for o in leaves}
    seen = {root}
    stack = [root]
    arrivals = {}
    hooked = False
    while stack:
        node = stack.pop()
        if node._pre_hooks or node._hooks or node._tensor_hooks or node._retain_refs:
            hooked = True
        for edge in node.next_functions:
            if edge is not None:
                child = edge[0]
                if type(child) is AccumulateGrad:
                    if id(child.variable) not in own:
                        return True, None, None
                    arrivals[child] = arrivals.get(child, 0) + 1
                elif child not in seen:
                    seen.add(child)
                    stack.append(child)
    if hooked:
        return False, None, None
    targets = set()
    for acc, count in arrivals.items():
        if count == 1 and not (acc._pre_hooks or acc._hooks or acc.variable._hooks):
            targets.add(acc)
    return False, seen, targets


def rewrap_like(g, like):
    """Physical ``g`` wrapped with the levels of ``like`` (innermost wrapper outermost)."""
    if type(like) is BatchedTensor and type(like._bval) is not BatchedTensor:
        return wrap(g, like._blevel)  # one level: the common case
    levels = []
    while type(like) is BatchedTensor:
        levels.append(like._blevel)
        like = like._bval
    for level in reversed(levels):
        g = wrap(g, level)
    return g


def jacobian(outputs, inputs, create_graph: bool):
    """``jacrev`` under vmap: per batch element, the blocks ``[[d out_i / d in_j]]``.

    One batched backward over the logical output basis, broadcast along the batch dims
    (elements never mix, so each element's rows land in its own slice of the gradient).
    ``inputs`` are lifted leaves (batched at every open level, Note [grad under vmap]).
    """
    from .autograd.batched import vjp_rows  # noqa: PLC0415 - autograd sits above tensor

    nb = len(LEVELS.active)
    res = []
    for out in outputs:
        phys = physical(out)
        lo = tuple(out.shape)
        m = int(np.prod(lo, dtype=np.int64))
        if out.requires_grad and m and phys.ndim != nb + len(lo):
            _trap(out)  # an output not batched at every level: the exact fallback
        if not out.requires_grad or m == 0:
            rows = [None] * len(inputs)
        else:
            eye = np.eye(m, dtype=phys.dtype).reshape((m,) + (1,) * nb + lo)
            eye = np.ascontiguousarray(np.broadcast_to(eye, (m,) + tuple(phys.shape)))
            rows = vjp_rows(
                (phys,), tuple(physical(x) for x in inputs), [Tensor._wrap(eye)],
                create_graph=create_graph,
            )  # fmt: skip
        blocks = []
        for x, r in zip(inputs, rows):
            if r is None:
                blocks.append(Tensor._wrap(np.zeros(lo + tuple(x.shape), x.dtype)))
                continue
            batch = tuple(r.shape[1 : 1 + nb])
            r = op("movedim", r, 0, nb)
            blocks.append(rewrap_like(op("reshape", r, batch + lo + tuple(x.shape)), x))
        res.append(blocks)
    return res
