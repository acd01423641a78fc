"""Gradient checkpointing: keep a function's inputs, recompute its activations in backward.

``checkpoint(fn, *args)`` runs ``fn`` without recording and returns outputs
behind one ``CheckpointBackward`` Node that holds only the arguments. When
backward reaches that Node, it reruns ``fn`` with grad enabled and backpropagates
through the rebuilt graph (Note [Checkpoint recomputation]).
``checkpoint_sequential(functions, segments, input)`` applies it to a chain of
layers following a strategy (see ``checkpoint_plan``).

>>> import tapegrad as tg
>>> from tapegrad.utils.checkpoint import checkpoint
>>> w = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
>>> x = tg.tensor([[1.0, -1.0]], requires_grad=True)
>>> y = checkpoint(lambda t: (t @ w).tanh(), x)
>>> y.grad_fn.name()
'CheckpointBackward'
>>> y.sum().backward()
>>> w.grad is not None and x.grad is not None
True
"""

from __future__ import annotations

import contextlib

import numpy as np

from .. import _warn
from ..autograd import engine
from ..autograd.graph import make_results
from ..creation import default_generator
from ..grad_mode import STATE, enable_grad, no_grad
from ..tensor import Tensor
from .checkpoint_plan import (
    Budget,
    Every,
    NoCheckpoint,
    Plan,
    Segment,
    Segments,
    Selective,
    SqrtN,
    Strategy,
    as_strategy,
)

__all__ = [
    "checkpoint",
    "checkpoint_sequential",
    "Strategy",
    "NoCheckpoint",
    "Segments",
    "SqrtN",
    "Every",
    "Selective",
    "Budget",
    "Plan",
    "Segment",
]

# Note [Checkpoint recomputation]
# The forward runs fn under no_grad, so its activations are freed as it goes, and
# records one Node whose inputs are fn's Tensor arguments (their versions are
# checked, so an in-place change before backward raises instead of recomputing
# from changed data). Its backward:
#   1. restores the default generator's state of the forward (so random ops such
#      as dropout draw the same numbers), then restores the current one;
#   2. reruns fn with grad enabled on new leaves that share the inputs' data and
#      require grad as they do (non-Tensor arguments are passed as they were);
#   3. runs backward on the rebuilt outputs with the incoming gradients: leaves
#      that fn captured (parameters) accumulate into .grad right there, as in
#      PyTorch's reentrant checkpoint, and the inputs' gradients, read from the
#      new leaves, are returned to the outer backward.
# When no argument requires grad, the Node hangs off a private anchor leaf that
# requires grad, so backward still reaches it and captured parameters still get
# gradients (PyTorch's reentrant checkpoint silently drops them instead).
# Limits: backward(create_graph=True) through it raises; autograd.grad and
# backward(inputs=...) return correct gradients for the inputs but cannot restrict
# the accumulation into parameters captured by fn, as in PyTorch's reentrant mode.
_ANCHOR = Tensor._wrap(np.zeros((), np.float32))
_ANCHOR._rg = True


def checkpoint(function, *args, use_reentrant=None, preserve_rng_state=True, **kwargs):
    """Run ``function(*args, **kwargs)`` keeping only its arguments; recompute it in backward.

    Args:
        function: returns a Tensor, or a tuple/list of Tensors and other values.
        *args: its positional arguments; Tensors among them (and among ``kwargs``'
            values) receive gradients.
        use_reentrant: accepted for PyTorch compatibility; tapegrad has one
            implementation (recompute, then backpropagate, inside the Node's backward).
        preserve_rng_state: replay the default generator's random numbers in the
            recomputation, so dropout-like ops draw the same values.
        **kwargs: passed to ``function``.

    Returns:
        What ``function`` returns, with its float Tensors behind one
        ``CheckpointBackward`` Node. Under no_grad, ``function``'s result as is.

    Raises:
        TypeError: a Tensor that requires grad nested inside a container argument or
            output (pass it at the top level), or a non-callable ``function``.
        RuntimeError: in backward, under ``create_graph=True``, or if the
            recomputation returns outputs of other shapes than the forward did.
    """
    return _checkpoint(function, args, kwargs, preserve_rng_state, warn=True)


def _checkpoint(function, args, kwargs, preserve_rng_state, warn):
    if not callable(function):
        raise TypeError(f"checkpoint: function must be callable, got {type(function).__name__}")
    if not STATE.enabled:
        return function(*args, **kwargs)
    keys = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    keys += [k for k, v in kwargs.items() if isinstance(v, Tensor)]
    _reject_nested(list(enumerate(args)) + list(kwargs.items()), "argument")
    tensors = [args[k] if isinstance(k, int) else kwargs[k] for k in keys]
    rng_state = default_generator._raw_state() if preserve_rng_state else None
    with no_grad():
        outputs = function(*args, **kwargs)
    flat, rebuild = _flatten_outputs(outputs)
    if not flat:
        return outputs
    anchored = not any(t._rg for t in tensors)
    if anchored and warn:
        _warn.warn(
            "checkpoint: none of the Tensor arguments requires grad; only parameters captured "
            "by the function will receive gradients",
        )
    shapes = [o._data.shape for o in flat]

    def backward(*grads):
        if STATE.enabled:
            raise RuntimeError(
                "checkpoint does not support create_graph=True (double backward through a "
                "recomputed function): run that part without checkpointing"
            )
        leaves = [_fresh_leaf(t) if t._rg else t for t in tensors]
        new_args, new_kwargs = list(args), dict(kwargs)
        for k, leaf in zip(keys, leaves):
            if isinstance(k, int):
                new_args[k] = leaf
            else:
                new_kwargs[k] = leaf
        with _rng_replayed(rng_state), enable_grad():
            again, _ = _flatten_outputs(function(*new_args, **new_kwargs))
        if [o._data.shape for o in again] != shapes:
            raise RuntimeError(
                "checkpoint: recomputing the function gave outputs of shapes "
                f"{[list(o._data.shape) for o in again]}, but the forward gave "
                f"{[list(s) for s in shapes]}; the function must be deterministic"
            )
        roots = [(o, g) for o, g in zip(again, grads) if o._rg]
        if roots:
            engine.backward([o for o, _ in roots], [g for _, g in roots])
        result = tuple(leaf.grad if t._rg else None for leaf, t in zip(leaves, tensors))
        return result + (None,) if anchored else result

    inputs = tensors + [_ANCHOR] if anchored else tensors
    results = make_results(
        [o._data for o in flat], inputs, backward, "CheckpointBackward", saved=tensors
    )
    return rebuild(results)


def _fresh_leaf(t: Tensor) -> Tensor:
    """A leaf sharing ``t``'s data that requires grad. It gets its own version counter:
    the outer Node already checks ``t``'s, and saved_bytes must not take the activation
    ``t`` for a parameter (Note [What saved_bytes counts])."""
    leaf = Tensor._wrap(t._data)
    leaf._rg = True
    return leaf


@contextlib.contextmanager
def _rng_replayed(state):
    if state is None:
        yield
        return
    current = default_generator._raw_state()
    default_generator.set_state(state)
    try:
        yield
    finally:
        default_generator.set_state(current)


def _reject_nested(items, what):
    for key, value in items:
        if isinstance(value, (list, tuple, dict)) and _holds_grad_tensor(value):
            raise TypeError(
                f"checkpoint: {what} {key!r} is a {type(value).__name__} holding Tensors "
                "that require grad; their gradients cannot flow through a checkpoint "
                "from inside a container: pass them as separate arguments"
            )


def _holds_grad_tensor(value) -> bool:
    values = value.values() if isinstance(value, dict) else value
    for v in values:
        if isinstance(v, Tensor):
            if v._rg:
                return True
        elif isinstance(v, (list, tuple, dict)) and _holds_grad_tensor(v):
            return True
    return False


def _flatten_outputs(outputs):
    """The Tensors among ``outputs`` and a function putting replacements back in place."""
    if isinstance(outputs, Tensor):
        return [outputs], lambda new: new[0]
    if isinstance(outputs, (tuple, list)):
        for i, v in enumerate(outputs):
            if isinstance(v, (tuple, list, dict)) and _holds_tensor(v):
                raise TypeError(
                    f"checkpoint: output {i} is a {type(v).__name__} holding Tensors; return "
                    "Tensors at the top level of a tuple or list"
                )
        where = [i for i, v in enumerate(outputs) if isinstance(v, Tensor)]

        def rebuild(new):
            items = list(outputs)
            for i, t in zip(where, new):
                items[i] = t
            return type(outputs)(items) if isinstance(outputs, list) else tuple(items)

        return [outputs[i] for i in where], rebuild
    if isinstance(outputs, dict) and _holds_tensor(outputs):
        raise TypeError("checkpoint: return Tensors in a tuple or list, not a dict")
    return [], None


def _holds_tensor(value) -> bool:
    values = value.values() if isinstance(value, dict) else value
    return any(
        isinstance(v, Tensor) or isinstance(v, (list, tuple, dict)) and _holds_tensor(v)
        for v in values
    )


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run a chain of layers, recomputing some of them in backward.

    Args:
        functions: an iterable of callables, or an object with ``children()`` (such as
            ``nn.Sequential``); each maps one Tensor to one Tensor.
        segments: an int ``k`` (``k`` equal segments, all but the last recomputed, as
            in PyTorch) or a strategy: ``NoCheckpoint()``, ``SqrtN()``, ``Every(k)``,
            ``Selective(predicate)``, ``Budget(max_bytes)``.
        input: the Tensor fed to the first layer.
        use_reentrant: accepted for PyTorch compatibility (see :func:`checkpoint`).
        **kwargs: ``preserve_rng_state`` (default True), passed to :func:`checkpoint`.

    Returns:
        The last layer's output.

    >>> import tapegrad as tg
    >>> from tapegrad.utils.checkpoint import checkpoint_sequential, SqrtN
    >>> layers = [lambda t: (t * 2.0).tanh() for _ in range(9)]
    >>> x = tg.ones(2, requires_grad=True)
    >>> strategy = SqrtN()
    >>> checkpoint_sequential(layers, strategy, x).sum().backward()
    >>> print(strategy.explain())
    SqrtN(): 9 layers in 3 segments:
      layers [0, 3)  recompute
      layers [3, 6)  recompute
      layers [6, 9)  keep
    """
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise TypeError(f"checkpoint_sequential: unexpected keyword arguments {sorted(kwargs)}")
    layers = list(functions.children()) if hasattr(functions, "children") else list(functions)
    for i, f in enumerate(layers):
        if not callable(f):
            raise TypeError(
                f"checkpoint_sequential: layer {i} ({type(f).__name__}) is not callable"
            )
    if not isinstance(input, Tensor):
        raise TypeError(
            f"checkpoint_sequential: input must be a Tensor, got {type(input).__name__}"
        )
    strategy = as_strategy(segments)
    if not STATE.enabled:  # nothing is recorded, so there is nothing to plan
        return _run_layers(layers, 0, len(layers))(input)
    plan = strategy.plan(len(layers), layers, input)
    x = input
    for seg in plan.segments:
        run = _run_layers(layers, seg.start, seg.stop)
        x = _checkpoint(run, (x,), {}, preserve, warn=False) if seg.checkpoint else run(x)
    return x


def _run_layers(layers, start, stop):
    def run(x):
        for f in layers[start:stop]:
            x = f(x)
        return x

    return run
