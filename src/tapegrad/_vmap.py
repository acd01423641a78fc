"""tg.func.vmap: map a function over a batch dimension of its inputs.

vmap runs ``func`` once on BatchedTensors (Note [vmap levels] in _batched.py): each op
runs its batching rule (_batch_rules.py) on the whole batch. An op without a rule
runs once per element (a warning names it); code that reads a batched tensor's data
where no rule can step in (``.item()`` in data-dependent control flow, a function
outside the registry) makes vmap run the whole of ``func`` once per element, the
exact fallback (a warning says where). Random ops: ``randomness="error"`` raises;
under "same" a draw made outside a per-element loop has the logical shape (one draw
serves every element) and the per-op loop resets the generator per element, so the
batched run stands; under "different" a function that draws random numbers runs per
element, so each element gets its own numbers. ``chunk_size`` runs the batch in chunks of that size.
"""

from __future__ import annotations

import numpy as np

from . import _batch_rules  # noqa: F401 - fills _batched.RULES
from . import _blas_threads as _blas
from . import random as tg_random
from ._batched import LEVELS, BatchedAccess, BatchedTensor, install_methods, new_level, op
from ._batched import warn_once as _warn
from ._batched import wrap as _wrap
from .tensor import Tensor

__all__ = ["vmap"]

_RANDOMNESS = ("error", "different", "same")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Vectorize ``func`` over dimension ``in_dims`` of its inputs (torch.func.vmap).

    Args:
        func: a function of Tensors (or nested tuples/lists/dicts of Tensors) returning
            Tensors (or such nests).
        in_dims: per positional argument, the mapped dimension (int), None (not mapped),
            or a nest matching the argument; one int applies to every argument.
        out_dims: where the mapped dimension goes in each output (int or None, or a
            tuple matching a tuple output).
        randomness: ``"error"`` (a random op inside func raises), ``"different"`` (each
            element draws its own numbers) or ``"same"`` (every element draws the same).
        chunk_size: elements computed at a time (None or a positive int).

    Returns:
        A function with func's signature whose outputs carry the batch dimension at
        ``out_dims``.

    >>> import tapegrad as tg
    >>> tg.func.vmap(lambda v: (v * v).sum())(tg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tensor([ 5., 25.])
    """
    if randomness not in _RANDOMNESS:
        raise RuntimeError(
            f"vmap: only supports randomness in {list(_RANDOMNESS)}, got {randomness!r}"
        )
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0 (got {chunk_size!r})")
    if not callable(func):
        raise TypeError(f"vmap: func must be callable, got {type(func).__name__}")

    def wrapped(*args, **kwargs):
        dims = _arg_dims(in_dims, args)
        sizes = []
        for a, d in zip(args, dims):
            _sizes(a, d, sizes)
        if not sizes:
            raise ValueError(
                "vmap: at least one input must be a Tensor mapped over a dimension (got "
                f"in_dims={in_dims!r} for {len(args)} arguments)"
            )
        if len(set(sizes)) != 1:
            raise ValueError(
                "vmap: Expected all tensors to have the same size in the mapped dimension, "
                f"got sizes {sizes} for the mapped dimension"
            )
        n = sizes[0]
        if n == 0:
            raise ValueError("vmap: the mapped dimension has size 0; there is nothing to map")
        install_methods()
        if LEVELS.active:
            return _run(func, args, kwargs, dims, n)
        _blas.HOLD.open = True  # Note [One BLAS block per call]
        try:
            return _run(func, args, kwargs, dims, n)
        finally:
            _blas.release_hold()

    def _run(func, args, kwargs, dims, n):
        gen = tg_random.default_generator
        start = _rng_snapshot(gen)
        try:
            if chunk_size is None or chunk_size >= n:
                out = _batched_call(func, args, kwargs, dims, out_dims, n, randomness)
            else:
                parts = [
                    _batched_call(
                        func, _narrow_args(args, dims, s, min(chunk_size, n - s)),
                        kwargs, dims, out_dims, min(chunk_size, n - s), randomness,
                    )
                    for s in range(0, n, chunk_size)
                ]  # fmt: skip
                out = _cat_outs(parts, out_dims)
        except BatchedAccess as exc:
            _rng_restore(gen, start)
            _warn(
                f"func:{getattr(func, '__qualname__', '')}:{id(getattr(func, '__code__', func))}",
                f"tg.func.vmap: {getattr(func, '__name__', 'func')} reads the data of a batched "
                f"tensor where no batching rule applies ({_where(exc)}); it runs once per "
                "batch element (a Python loop): exact, but slow",
            )
            return _loop(func, args, kwargs, dims, out_dims, n, randomness, gen.get_state())
        if randomness != "same" and _rng_snapshot(gen) != start:
            # "same" needs no rerun: a draw outside a per-element loop has the logical
            # shape (one draw for every element), and the per-op loop resets the generator
            # per element under "same". "different" needs a draw per element: the loop.
            _rng_restore(gen, start)
            if randomness == "error":
                raise RuntimeError(
                    "vmap: called random operation while in randomness error mode. "
                    "Please either use the 'same' or 'different' randomness flags on "
                    "vmap or perform the randomness operation out of vmap"
                )
            return _loop(func, args, kwargs, dims, out_dims, n, randomness, gen.get_state())
        return out

    wrapped.__wrapped__ = func
    return wrapped


def _rng_snapshot(gen):
    """The default generator's state, cheap to take and compare (NumPy's state dict; the
    generator object and seed too, which ``manual_seed`` replaces)."""
    return (gen._rng, gen._seed, gen._raw_state())


def _rng_restore(gen, snap) -> None:
    gen._rng, gen._seed = snap[0], snap[1]
    gen.set_state(snap[2])


def _where(exc) -> str:
    tb = exc.__traceback__
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame.f_code)
        tb = tb.tb_next
    inner = [c for c in frames if c.co_name not in ("_trap", "method")]
    code = inner[-1] if inner else frames[-1]
    return f"in {code.co_name}, {code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno}"


def _batched_call(func, args, kwargs, dims, out_dims, n, randomness):
    level = new_level()
    LEVELS.active.append(level)
    LEVELS.sizes[level] = n
    if randomness == "same":
        LEVELS.same.add(level)
    try:
        batched = [_wrap_arg(a, d, level) for a, d in zip(args, dims)]
        out = func(*batched, **kwargs)
        return _unwrap(out, out_dims, level, n)
    finally:
        LEVELS.active.pop()
        del LEVELS.sizes[level]
        LEVELS.same.discard(level)


def _wrap_arg(arg, dim, level):
    if dim is None:
        return arg
    if isinstance(arg, Tensor):
        d = dim % arg.ndim
        return _wrap(arg if d == 0 else op("movedim", arg, d, 0), level)
    if isinstance(arg, (tuple, list)):
        ds = dim if isinstance(dim, (tuple, list)) else [dim] * len(arg)
        return type(arg)(_wrap_arg(a, d, level) for a, d in zip(arg, ds))
    if isinstance(arg, dict):
        return {
            k: _wrap_arg(a, dim[k] if isinstance(dim, dict) else dim, level) for k, a in arg.items()
        }
    return arg


def _narrow_args(args, dims, s, length):
    return [_narrow(a, d, s, length) for a, d in zip(args, dims)]


def _narrow(arg, dim, s, length):
    if dim is None:
        return arg
    if isinstance(arg, Tensor):
        return op("narrow", arg, dim, s, length)
    if isinstance(arg, (tuple, list)):
        ds = dim if isinstance(dim, (tuple, list)) else [dim] * len(arg)
        return type(arg)(_narrow(a, d, s, length) for a, d in zip(arg, ds))
    if isinstance(arg, dict):
        return {
            k: _narrow(a, dim[k] if isinstance(dim, dict) else dim, s, length)
            for k, a in arg.items()
        }
    return arg


def _unwrap(out, out_dims, level, n):
    """func's result with this level's batch dim moved to ``out_dims``."""
    if (
        type(out) is BatchedTensor
        and out._blevel == level
        and type(out_dims) is int
        and out_dims == 0
    ):
        return out._bval  # the common case: the batch stays in front
    if type(out) is dict and type(out_dims) is int and out_dims == 0:  # per-sample gradients
        return {
            k: o._bval
            if type(o) is BatchedTensor and o._blevel == level
            else _unwrap(o, 0, level, n)
            for k, o in out.items()
        }
    if isinstance(out, Tensor):
        batched = type(out) is BatchedTensor and out._blevel == level
        if out_dims is None:
            if batched:
                raise ValueError(
                    "vmap: out_dims=None for an output that depends on the mapped "
                    "inputs; give it an int out_dim"
                )
            return out
        if not isinstance(out_dims, int) or isinstance(out_dims, bool):
            raise ValueError("vmap: out_dims for a Tensor output must be an int or None")
        nd = out.ndim + 1
        if not -nd <= out_dims < nd:
            raise ValueError(
                f"vmap: out_dim {out_dims} is out of range for an output of {out.ndim} dims"
            )
        if batched:
            value = out._bval
        else:  # not batched at this level: every element gets the same result
            value = op("expand", op("unsqueeze", out, 0), (n, *out.shape))
        d = out_dims % nd
        return value if d == 0 else op("movedim", value, 0, d)
    if isinstance(out, (tuple, list)):
        ds = out_dims if isinstance(out_dims, (tuple, list)) else [out_dims] * len(out)
        if len(ds) != len(out):
            raise ValueError(
                f"vmap: out_dims has {len(ds)} elements but func returned {len(out)} outputs"
            )
        parts = [_unwrap(o, d, level, n) for o, d in zip(out, ds)]
        return tuple(parts) if isinstance(out, tuple) else parts
    if isinstance(out, dict):
        return {
            k: _unwrap(o, out_dims[k] if isinstance(out_dims, dict) else out_dims, level, n)
            for k, o in out.items()
        }
    if out is None:
        return None
    raise ValueError(
        f"vmap: func must only return Tensors, got type {type(out).__name__}. Did you "
        "mean to set out_dims= to None for output?"
    )


def _cat_outs(parts, out_dims):
    first = parts[0]
    if isinstance(first, Tensor):
        if out_dims is None:
            return first
        return op("cat", list(parts), out_dims)
    if isinstance(first, (tuple, list)):
        ds = out_dims if isinstance(out_dims, (tuple, list)) else [out_dims] * len(first)
        cat = [_cat_outs([p[k] for p in parts], d) for k, d in enumerate(ds)]
        return tuple(cat) if isinstance(first, tuple) else cat
    if isinstance(first, dict):
        return {
            k: _cat_outs(
                [p[k] for p in parts], out_dims[k] if isinstance(out_dims, dict) else out_dims
            )
            for k in first
        }
    return first


def _loop(func, args, kwargs, dims, out_dims, n, randomness, start):
    """The exact fallback: func once per batch element, results stacked."""
    results = []
    for b in range(n):
        if randomness == "same":
            tg_random.set_rng_state(start)
        sliced = [_slice(a, d, b) for a, d in zip(args, dims)]
        results.append(func(*sliced, **kwargs))
        if randomness == "error" and b == 0:
            if not np.array_equal(tg_random.get_rng_state()._data, start._data):
                tg_random.set_rng_state(start)
                raise RuntimeError(
                    "vmap: called random operation while in randomness error mode. "
                    "Please either use the 'same' or 'different' randomness flags on "
                    "vmap or perform the randomness operation out of vmap"
                )
    return _combine(results, out_dims, "out_dims")


def _arg_dims(in_dims, args):
    if isinstance(in_dims, (int, type(None))):
        return [in_dims] * len(args)
    if not isinstance(in_dims, (tuple, list)):
        raise ValueError(
            f"vmap: expected in_dims to be int or a (potentially nested) tuple matching the "
            f"structure of inputs, got: {type(in_dims).__name__}."
        )
    if len(in_dims) != len(args):
        raise ValueError(
            f"vmap: in_dims is not compatible with the structure of inputs: in_dims has "
            f"{len(in_dims)} elements but func got {len(args)} positional arguments"
        )
    return list(in_dims)


def _sizes(arg, dim, out: list) -> None:
    """Append the mapped size of every Tensor in ``arg`` mapped by ``dim``."""
    if dim is None:
        return
    if isinstance(arg, Tensor):
        if not isinstance(dim, int):
            raise ValueError(f"vmap: in_dim {dim!r} for a Tensor must be an int or None")
        if not -arg.ndim <= dim < max(arg.ndim, 0) or arg.ndim == 0:
            raise ValueError(
                f"vmap: Tried to map over dim {dim} of an input of shape {list(arg.shape)}, "
                f"which has only {arg.ndim} dims"
            )
        out.append(arg.shape[dim])
    elif isinstance(arg, (tuple, list)):
        ds = dim if isinstance(dim, (tuple, list)) else [dim] * len(arg)
        if len(ds) != len(arg):
            raise ValueError("vmap: in_dims does not match the structure of an input")
        for a, d in zip(arg, ds):
            _sizes(a, d, out)
    elif isinstance(arg, dict):
        for k, a in arg.items():
            _sizes(a, dim[k] if isinstance(dim, dict) else dim, out)
    elif isinstance(dim, int):
        raise ValueError(
            f"vmap: Got in_dim={dim} for an input but the input is of type "
            f"{type(arg).__name__}. We cannot vmap over non-Tensor arguments, please use "
            "None as the respective in_dim"
        )


def _slice(arg, dim, b):
    if dim is None:
        return arg
    if isinstance(arg, Tensor):
        d = dim % arg.ndim
        return op("select", arg, d, b)
    if isinstance(arg, (tuple, list)):
        ds = dim if isinstance(dim, (tuple, list)) else [dim] * len(arg)
        return type(arg)(_slice(a, d, b) for a, d in zip(arg, ds))
    if isinstance(arg, dict):
        return {k: _slice(a, dim[k] if isinstance(dim, dict) else dim, b) for k, a in arg.items()}
    return arg


def _combine(results, out_dims, what):
    first = results[0]
    if isinstance(first, Tensor):
        if out_dims is None:
            for r in results[1:]:
                if r.shape != first.shape or not np.array_equal(r._data, first._data):
                    raise ValueError(
                        "vmap: out_dims=None for an output that depends on the mapped "
                        "inputs; give it an int out_dim"
                    )
            return first
        if not isinstance(out_dims, int):
            raise ValueError(f"vmap: {what} for a Tensor output must be an int or None")
        nd = first.ndim + 1
        if not -nd <= out_dims < nd:
            raise ValueError(
                f"vmap: out_dim {out_dims} is out of range for an output of {first.ndim} dims"
            )
        return op("stack", results, out_dims)
    if isinstance(first, (tuple, list)):
        ds = out_dims if isinstance(out_dims, (tuple, list)) else [out_dims] * len(first)
        if len(ds) != len(first):
            raise ValueError(
                f"vmap: out_dims has {len(ds)} elements but func returned {len(first)} outputs"
            )
        parts = [_combine([r[k] for r in results], d, what) for k, d in enumerate(ds)]
        return tuple(parts) if isinstance(first, tuple) else parts
    if isinstance(first, dict):
        return {
            k: _combine(
                [r[k] for r in results],
                out_dims[k] if isinstance(out_dims, dict) else out_dims,
                what,
            )
            for k in first
        }
    if first is None:
        return None
    raise ValueError(
        f"vmap: func must only return Tensors, got type {type(first).__name__}. Did you "
        "mean to set out_dims= to None for output?"
    )
