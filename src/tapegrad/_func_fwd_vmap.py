"""jacfwd under vmap: true forward mode, the basis pushed as one batch of tangents.

Note [jacfwd under vmap]
``vmap(jacfwd(f))`` (and jacfwd called anywhere inside a vmap) makes every argument
dual on its physical value, expanded to all open vmap levels (a stride-0 view where it
is not batched, as Note [grad under vmap]). Its tangents carry the n basis directions of
the *logical* argument in front, ``(n, *vmap dims, *logical shape)``, broadcast along the
vmap dims; the batching rules run the physical ops, and the tangents flow through them
(Note [Forward-mode tangents]) with batch elements never mixed, so the tangent of an
output holds, per vmap element, that element's n Jacobian columns. As for jacfwd outside
vmap, one unbatched push along a random combination of the directions checks the batched
push; if it disagrees, or a rule cannot run with batched tangents, the directions are
pushed one at a time (still forward mode).
"""

from __future__ import annotations

import numpy as np

from ._batched import LEVELS
from .autograd import forward_ad as fwAD
from .autograd import graph
from .grad_mode import STATE, enable_grad
from .tensor import Tensor

__all__ = ["jacfwd_under_vmap"]


def _mods():
    from . import _func_fwd, func  # noqa: PLC0415 - both import this module lazily

    return func, _func_fwd


def jacfwd_under_vmap(func, argnums, has_aux, args, kwargs):
    """``jacfwd(func, argnums, has_aux)(*args, **kwargs)`` while a vmap level is open."""
    f, fwd = _mods()
    vg = f._vmap_grad
    single, nums = f._argnums(argnums, len(args), "jacfwd")
    if any(isinstance(args[i], (tuple, list, dict)) for i in nums):
        return fwd._jacfwd_of_nests(func, args, kwargs, single, nums, has_aux)
    xs, sizes, basis = fwd._jacfwd_basis(args, nums)
    keep = STATE.enabled
    n = len(basis)
    nlev = len(LEVELS.active)

    def push(rows, batch):
        call_args = list(args)
        with fwAD.transform_level(), fwAD.batched_tangents(batch), enable_grad():
            duals, start = [], 0
            for x, k in zip(xs, sizes):
                pp, rewrap = vg.expand_physical(x)
                block = rows[..., start : start + k].astype(x.dtype)
                block = block.reshape(batch + (1,) * nlev + tuple(x.shape))
                tan = np.ascontiguousarray(np.broadcast_to(block, batch + tuple(pp.shape)))
                duals.append(rewrap(fwAD.make_dual(pp, Tensor._wrap(tan))))
                start += k
            for i, d in zip(nums, duals):
                call_args[i] = d
            out, aux = f._split_aux(func(*call_args, **kwargs), has_aux, "jacfwd")
            is_tuple, outs = fwd._outs(out, "jacfwd")
            tans = []
            for o in outs:
                phys = vg.physical(o)
                t = fwAD.tangent_of(phys)
                if t is not None and phys.ndim != nlev + o.ndim:
                    raise graph.BatchingError("jacfwd under vmap: an output batched at few levels")
                tans.append(t if t is not None else fwd._zeros(batch + tuple(phys.shape), o.dtype))
        return is_tuple, outs, tans, aux, duals

    try:
        try:
            is_tuple, outs, cols, aux, own = push(basis, (n,))
            if n > 1 and not fwd._probe(push, basis, cols):
                raise graph.BatchingError("batched tangents disagree with the probe")
        except graph.BatchingError:
            is_tuple, outs, cols, aux, own = fwd._loop(push, basis, n)
    except graph.BatchingError:  # an output not batched at every level: reverse mode
        return f.jacrev(func, argnums, has_aux)(*args, **kwargs)
    jac = []
    for o, col in zip(outs, cols):
        phys = vg.physical(o)
        lo = tuple(o.shape)
        lead = tuple(phys.shape)[: phys.ndim - len(lo)]
        moved = col.movedim(0, -1) if n else col.reshape(lead + lo + (0,))
        row, start = [], 0
        for x, k in zip(xs, sizes):
            block = moved.narrow(-1, start, k) if len(xs) > 1 else moved
            block = block.reshape(lead + lo + tuple(x.shape))
            block = vg.rewrap_like(block, o) if lead else block
            row.append(f._release(block, keep, own))
            start += k
        jac.append(row[0] if single else tuple(row))
    jac = tuple(jac) if is_tuple else jac[0]
    return (jac, aux) if has_aux else jac
