"""Forward-mode transforms of tg.func: jvp, jacfwd (true forward mode), linearize, vjp.

``jvp`` and ``jacfwd`` push tangents through the ops as they run (dual tensors,
Note [Forward-mode tangents] in autograd/forward_ad.py). ``jacfwd`` pushes all n
basis directions at once as one batch of tangents, checks the batched result
against one unbatched push of a random combination of the directions, and falls
back to one push per direction if that check fails or a rule cannot run batched.
Under an already open dual level (``jacfwd(jacfwd(f))``, ``jvp`` of ``jvp``) the
inner transform computes ``J t`` as the derivative of a vector-Jacobian product
(``d/du <Jᵀu, t>``), which needs no second level.
"""

from __future__ import annotations

import numpy as np

from .autograd import engine, graph
from .autograd import forward_ad as fwAD
from .autograd.batched import vjp_rows
from .grad_mode import STATE, enable_grad
from .tensor import Tensor

__all__ = ["jvp", "jacfwd", "linearize", "vjp"]


def _func():
    from . import func  # noqa: PLC0415 - func imports this module

    return func


def _as_tuple(x, what, name):
    if isinstance(x, Tensor):
        return (x,)
    if isinstance(x, (tuple, list)) and all(isinstance(t, Tensor) for t in x):
        return tuple(x)
    raise TypeError(f"{name}: expected {what} to be a Tensor or a tuple of Tensors")


def _check_pairs(primals, tangents, name):
    if len(primals) != len(tangents):
        raise RuntimeError(
            f"{name}: expected primals and tangents to have the same length, got "
            f"{len(primals)} primals and {len(tangents)} tangents"
        )
    for i, (p, t) in enumerate(zip(primals, tangents)):
        if p.dtype.kind != "f":
            raise TypeError(f"{name}: primal {i} must be floating point, got dtype {p.dtype}")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(
                f"{name}: expected primal {i} (shape {list(p.shape)}) and its tangent "
                f"(shape {list(t.shape)}) to have the same shape"
            )


def _outs(out, name):
    is_tuple = isinstance(out, (tuple, list))
    outs = tuple(out) if is_tuple else (out,)
    for o in outs:
        if not isinstance(o, Tensor):
            raise TypeError(f"{name}: f must return Tensors, got {type(o).__name__}")
    return is_tuple, outs


def _zeros(shape, dtype) -> Tensor:
    return Tensor._wrap(np.zeros(shape, dtype))


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J·tangents)``: a Jacobian-vector product in forward mode.

    Args:
        func: a function of Tensors returning a Tensor or a tuple of Tensors
            (``(output, aux)`` with ``has_aux``).
        primals: a tuple of float Tensors, the point.
        tangents: a tuple of Tensors of the primals' shapes, the direction.

    Returns:
        ``(output, jvp_out)`` (``(output, jvp_out, aux)`` with has_aux); ``jvp_out``
        has the output's structure and shapes.

    >>> import tapegrad as tg
    >>> x = tg.tensor([1.0, 2.0])
    >>> tg.func.jvp(lambda x: x * x, (x,), (tg.tensor([1.0, 1.0]),))[1]
    tensor([2., 4.])
    """
    primals = _as_tuple(primals, "primals", "jvp")
    tangents = _as_tuple(tangents, "tangents", "jvp")
    _check_pairs(primals, tangents, "jvp")
    keep = STATE.enabled
    f = _func()
    if fwAD.check_transform_nesting("jvp"):  # nested: no second level; differentiate a vjp
        out, tans, aux, own = _jvp_by_vjp(func, primals, tangents, has_aux)
    elif f._batched.LEVELS.active:  # under vmap: duals of the physical values
        out, tans, aux, own = _jvp_under_vmap(func, primals, tangents, has_aux)
    else:
        with fwAD.transform_level(), enable_grad():
            duals = tuple(fwAD.make_dual(p, t) for p, t in zip(primals, tangents))
            out, aux = f._split_aux(func(*duals), has_aux, "jvp")
            is_tuple, outs = _outs(out, "jvp")
            tans = tuple(
                fwAD.tangent_of(o) if fwAD.tangent_of(o) is not None else _zeros(o.shape, o.dtype)
                for o in outs
            )
            out = out if is_tuple else outs[0]
            own = duals
    is_tuple, outs = _outs(out, "jvp")
    outs = tuple(f._release(o, keep, own) for o in outs)
    tans = tuple(f._release(t, keep, own) for t in tans)
    res = (outs, tans) if is_tuple else (outs[0], tans[0])
    return (*res, aux) if has_aux else res


def _jvp_under_vmap(func, primals, tangents, has_aux):
    """jvp inside vmap: every primal and tangent expanded to all open levels (Note [grad
    under vmap]), made dual physically, rewrapped; the batching rules carry the tangents."""
    f = _func()
    vg = f._vmap_grad
    with fwAD.transform_level(), enable_grad():
        duals = []
        for p, t in zip(primals, tangents):
            pp, rewrap = vg.expand_physical(p)
            tp, _ = vg.expand_physical(t)
            duals.append(rewrap(fwAD.make_dual(pp, tp)))
        out, aux = f._split_aux(func(*duals), has_aux, "jvp")
        is_tuple, outs = _outs(out, "jvp")
        tans = []
        for o in outs:
            t = fwAD.tangent_of(vg.physical(o))
            tans.append(_zeros(o.shape, o.dtype) if t is None else vg.rewrap_like(t, o))
    return (out if is_tuple else outs[0]), tuple(tans), aux, tuple(duals)


def _jvp_by_vjp(func, primals, tangents, has_aux):
    """``J t`` as ``d/du <Jᵀu, t>`` (reverse over reverse), for use under an open level."""
    f = _func()
    with enable_grad():
        lifted, diff = f._lift(primals, tuple(range(len(primals))), "jvp")
        out, aux = f._split_aux(func(*lifted), has_aux, "jvp")
        is_tuple, outs = _outs(out, "jvp")
        us = [_zeros(o.shape, o.dtype).requires_grad_(True) for o in outs]
        live = [(o, u) for o, u in zip(outs, us) if o._rg]
        tans = [_zeros(o.shape, o.dtype) for o in outs]
        if live:
            gs = engine.grad(
                [o for o, _ in live],
                diff,
                [u for _, u in live],
                create_graph=True,
                allow_unused=True,
            )
            pairs = [(g, t) for g, t in zip(gs, tangents) if g is not None and g._rg]
            if pairs:
                got = engine.grad(
                    [g for g, _ in pairs],
                    [u for _, u in live],
                    [t for _, t in pairs],
                    create_graph=True,
                    allow_unused=True,
                )
                it = iter(got)
                for k, o in enumerate(outs):
                    if o._rg:
                        g = next(it)
                        if g is not None:
                            tans[k] = g
    return (out if is_tuple else outs[0]), tuple(tans), aux, diff


def _jacfwd_basis(args, nums):
    """jacfwd's differentiated arguments (checked), their sizes and the identity basis of
    directions over all of them (also under vmap: _func_fwd_vmap.py)."""
    for i in nums:
        if not isinstance(args[i], Tensor) or args[i].dtype.kind != "f":
            raise TypeError(f"jacfwd: argument {i} must be a floating point Tensor")
    xs = [args[i] for i in nums]
    sizes = [x.numel() for x in xs]
    return xs, sizes, np.eye(sum(sizes), dtype=np.result_type(*[x.dtype for x in xs]))


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` in forward mode: one push of all basis tangents at once.

    Returns:
        A function whose result has shape ``out.shape + arg.shape`` (tuples for a tuple
        output or argnums, outer level outputs, inner level arguments); with has_aux,
        ``(jac, aux)``. Cheaper than :func:`jacrev` when inputs are fewer than outputs.

    >>> import tapegrad as tg
    >>> tg.func.jacfwd(lambda x: x.sin())(tg.tensor([0.0, 0.0]))
    tensor([[1., 0.],
            [0., 1.]])
    """
    f = _func()

    def wrapper(*args, **kwargs):
        nested = fwAD.check_transform_nesting("jacfwd")
        if f._batched.LEVELS.active and not nested:
            from ._func_fwd_vmap import jacfwd_under_vmap  # noqa: PLC0415 - it imports us

            return jacfwd_under_vmap(func, argnums, has_aux, args, kwargs)
        if f._batched.LEVELS.active:  # nested in a transform's level under vmap: reverse
            return f.jacrev(func, argnums, has_aux)(*args, **kwargs)
        single, nums = f._argnums(argnums, len(args), "jacfwd")
        if any(isinstance(args[i], (tuple, list, dict)) for i in nums):
            return _jacfwd_of_nests(func, args, kwargs, single, nums, has_aux)
        xs, sizes, basis = _jacfwd_basis(args, nums)
        keep = STATE.enabled
        n = len(basis)

        def directions(rows):
            """Per argument, the tangents ``rows @ basis`` split and shaped (batch in front)."""
            out, start = [], 0
            for x, k in zip(xs, sizes):
                block = rows[..., start : start + k].astype(x._data.dtype)
                out.append(Tensor._wrap(block.reshape(rows.shape[:-1] + tuple(x.shape))))
                start += k
            return out

        def push(rows, batch):
            call_args = list(args)
            with fwAD.transform_level(), fwAD.batched_tangents(batch), enable_grad():
                duals = [fwAD.make_dual(x, t) for x, t in zip(xs, directions(rows))]
                for i, d in zip(nums, duals):
                    call_args[i] = d
                out, aux = f._split_aux(func(*call_args, **kwargs), has_aux, "jacfwd")
                is_tuple, outs = _outs(out, "jacfwd")
                tans = [fwAD.tangent_of(o) for o in outs]
                tans = [
                    _zeros(batch + tuple(o.shape), o.dtype) if t is None else t
                    for o, t in zip(outs, tans)
                ]
            return is_tuple, outs, tans, aux, duals

        if nested:
            is_tuple, outs, cols, aux, own = _columns_by_vjp(func, args, nums, kwargs, has_aux, n)
        else:
            try:
                is_tuple, outs, cols, aux, own = push(basis, (n,))
                if n > 1 and not _probe(push, basis, cols):
                    raise graph.BatchingError("batched tangents disagree with the probe")
            except graph.BatchingError:
                is_tuple, outs, cols, aux, own = _loop(push, basis, n)
        jac = []
        for o, col in zip(outs, cols):
            flat = col.reshape((n, -1)).T.reshape(tuple(o.shape) + (n,))
            row, start = [], 0
            for x, k in zip(xs, sizes):
                block = flat.narrow(-1, start, k) if len(xs) > 1 else flat
                row.append(f._release(block.reshape(tuple(o.shape) + tuple(x.shape)), keep, own))
                start += k
            jac.append(row[0] if single else tuple(row))
        jac = tuple(jac) if is_tuple else jac[0]
        return (jac, aux) if has_aux else jac

    return wrapper


def _jacfwd_of_nests(func, args, kwargs, single, nums, has_aux):
    """jacfwd with tuple/list/dict arguments: over their flattened tensors, rebuilt."""
    f = _func()
    leaves: list = []
    for i in nums:
        _flatten(args[i], leaves)

    def flat_func(*flat):
        call = list(args)
        it = iter(flat)
        for i in nums:
            call[i] = f._rebuild(args[i], it)
        return func(*call, **kwargs)

    res = jacfwd(flat_func, tuple(range(len(leaves))), has_aux)(*leaves)
    jac, aux = res if has_aux else (res, None)
    multi = isinstance(jac[0], tuple)  # a tuple output: per output, a tuple over leaves
    out = []
    for row in jac if multi else (jac,):
        it = iter(row)
        per_arg = tuple(f._rebuild(args[i], it) for i in nums)
        out.append(per_arg[0] if single else per_arg)
    jac = tuple(out) if multi else out[0]
    return (jac, aux) if has_aux else jac


def _flatten(t, out: list) -> None:
    if isinstance(t, (tuple, list)):
        for x in t:
            _flatten(x, out)
    elif isinstance(t, dict):
        for x in t.values():
            _flatten(x, out)
    else:
        out.append(t)


def _probe(push, basis, cols) -> bool:
    """One unbatched push along ``Σ c_b e_b`` must equal ``Σ c_b`` (batched column b)."""
    coef = np.random.default_rng(4321).standard_normal(basis.shape[0])
    _, _, ref, _, _ = push(coef @ basis, ())
    for got, want in zip(cols, ref):
        combined = np.tensordot(coef, got._data, axes=1)
        scale = max(
            float(np.max(np.abs(want._data), initial=0.0)),
            float(np.max(np.abs(combined), initial=0.0)),
            1e-30,
        )
        rtol = 1e-3 if want._data.dtype.itemsize <= 4 else 1e-8
        with np.errstate(invalid="ignore"):
            err = float(np.max(np.abs(combined - want._data), initial=0.0))
        if err <= rtol * scale:
            continue
        same_nans = np.array_equal(np.isfinite(combined), np.isfinite(want._data))
        if not (np.isnan(err) and same_nans):
            return False
    return True


def _loop(push, basis, n):
    cols_per_dir, own = [], []
    for b in range(n):
        is_tuple, outs, tans, aux, duals = push(basis[b], ())
        cols_per_dir.append(tans)
        own.extend(duals)
    from .autograd.batched import stack_rows  # noqa: PLC0415

    cols = [stack_rows([c[k] for c in cols_per_dir]) for k in range(len(outs))]
    return is_tuple, outs, cols, aux, own


def _columns_by_vjp(func, args, nums, kwargs, has_aux, n):
    """Under an open level: all columns ``J e_b`` as ``d/du <Jᵀu, e_b>`` in batched passes."""
    f = _func()
    with enable_grad():
        lifted, diff = f._lift(args, nums, "jacfwd")
        out, aux = f._split_aux(func(*lifted, **kwargs), has_aux, "jacfwd")
        is_tuple, outs = _outs(out, "jacfwd")
        us = [_zeros(o.shape, o.dtype).requires_grad_(True) for o in outs]
        live = [k for k, o in enumerate(outs) if o._rg]
        cols = [_zeros((n,) + tuple(o.shape), o.dtype) for o in outs]
        if live:
            gs = engine.grad(
                [outs[k] for k in live],
                diff,
                [us[k] for k in live],
                create_graph=True,
                allow_unused=True,
            )
            flat = [
                g.reshape(-1) if g is not None else _zeros((d.numel(),), d.dtype)
                for g, d in zip(gs, diff)
            ]
            from .ops.joining import cat  # noqa: PLC0415

            vec = cat(flat) if len(flat) > 1 else flat[0]
            if vec._rg:
                eye = Tensor._wrap(np.eye(n, dtype=vec._data.dtype))
                got = vjp_rows((vec,), tuple(us[k] for k in live), (eye,), create_graph=True)
                for k, g in zip(live, got):
                    if g is not None:
                        cols[k] = g
    return is_tuple, outs, cols, aux, diff


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` returns one gradient per primal.

    >>> import tapegrad as tg
    >>> out, vjp_fn = tg.func.vjp(lambda x: x * x, tg.tensor([1.0, 2.0]))
    >>> vjp_fn(tg.tensor([1.0, 1.0]))
    (tensor([2., 4.]),)
    """
    f = _func()
    keep = STATE.enabled
    with enable_grad():
        lifted, diff = f._lift(primals, tuple(range(len(primals))), "vjp")
        out, aux = f._split_aux(func(*lifted), has_aux, "vjp")
        is_tuple, outs = _outs(out, "vjp")

    def vjp_fn(cotangents):
        cts = _as_tuple(cotangents, "cotangents", "vjp_fn")
        if len(cts) != len(outs):
            raise RuntimeError(
                f"vjp_fn: expected {len(outs)} cotangents (one per output), got {len(cts)}"
            )
        for o, c in zip(outs, cts):
            if tuple(o.shape) != tuple(c.shape):
                raise RuntimeError(
                    f"vjp_fn: a cotangent of shape {list(c.shape)} for an output of shape "
                    f"{list(o.shape)}; they must match"
                )
        live = [(o, c) for o, c in zip(outs, cts) if o._rg]
        grads = [None] * len(diff)
        if live:
            with enable_grad() if keep else _nullcontext():
                grads = engine.grad(
                    [o for o, _ in live],
                    diff,
                    [c for _, c in live],
                    retain_graph=True,
                    create_graph=keep and STATE.enabled,
                    allow_unused=True,
                )
        return tuple(
            _zeros(d.shape, d.dtype) if g is None else f._release(g, keep, diff)
            for g, d in zip(grads, diff)
        )

    shown = tuple(f._release(o, keep, diff) for o in outs)
    shown = shown if is_tuple else shown[0]
    return (shown, vjp_fn, aux) if has_aux else (shown, vjp_fn)


class _nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)`` where ``jvp_fn(*tangents)`` is ``J·tangents`` at primals.

    The function is run once; each ``jvp_fn`` call is one reverse pass through the
    recorded vector-Jacobian product (``d/du <Jᵀu, t>``), no re-evaluation of ``func``.

    >>> import tapegrad as tg
    >>> out, jvp_fn = tg.func.linearize(lambda x: x.sin(), tg.tensor([0.0, 0.0]))
    >>> jvp_fn(tg.tensor([1.0, 2.0]))
    tensor([1., 2.])
    """
    f = _func()
    with enable_grad():
        lifted, diff = f._lift(primals, tuple(range(len(primals))), "linearize")
        out = func(*lifted)
        is_tuple, outs = _outs(out, "linearize")
        us = [_zeros(o.shape, o.dtype).requires_grad_(True) for o in outs]
        live = [k for k, o in enumerate(outs) if o._rg]
        gs = [None] * len(diff)
        if live:
            gs = engine.grad(
                [outs[k] for k in live],
                diff,
                [us[k] for k in live],
                create_graph=True,
                allow_unused=True,
            )

    def jvp_fn(*tangents):
        _check_pairs(diff, tangents, "linearize")
        pairs = [(g, t) for g, t in zip(gs, tangents) if g is not None and g._rg]
        res = [_zeros(o.shape, o.dtype) for o in outs]
        if pairs and live:
            with enable_grad():
                got = engine.grad(
                    [g for g, _ in pairs],
                    [us[k] for k in live],
                    [t for _, t in pairs],
                    retain_graph=True,
                    allow_unused=True,
                )
            for k, g in zip(live, got):
                if g is not None:
                    res[k] = g.detach()
        return tuple(res) if is_tuple else res[0]

    shown = tuple(o.detach() for o in outs)
    return (shown if is_tuple else shown[0]), jvp_fn
