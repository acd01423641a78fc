"""tg.func.vmap: map a function over a batch dimension of its inputs.

tapegrad has no per-op batching rules yet, so vmap runs ``func`` once per batch
element (a Python loop) on differentiable slices and stacks the results with a
differentiable ``stack``. That is exact for every function (random ops included,
under the ``randomness`` policy), composes with every transform in any order
(``vmap(grad(f))``, ``grad(vmap(f))``, nested vmap) and records the graph an
enclosing transform needs; its speed is that of the loop. A one-time warning
says so. ``chunk_size`` is validated and accepted for compatibility.
"""

from __future__ import annotations

import warnings

import numpy as np

from .tensor import Tensor

__all__ = ["vmap"]

_WARNED = [False]
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
        _warn_once()
        from . import random as tg_random  # noqa: PLC0415 - random imports heavier modules

        start = tg_random.get_rng_state()
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

    wrapped.__wrapped__ = func
    return wrapped


def _warn_once():
    if not _WARNED[0]:
        _WARNED[0] = True
        warnings.warn(
            "tg.func.vmap: tapegrad has no batching rules yet, so func runs once per batch "
            "element (a Python loop); results are exact, speed is that of the loop",
            UserWarning,
            stacklevel=3,
        )


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
        return arg[(slice(None),) * d + (b,)]
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
        from .ops.joining import stack  # noqa: PLC0415

        nd = first.ndim + 1
        if not -nd <= out_dims < nd:
            raise ValueError(
                f"vmap: out_dim {out_dims} is out of range for an output of {first.ndim} dims"
            )
        return stack(results, dim=out_dims)
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
