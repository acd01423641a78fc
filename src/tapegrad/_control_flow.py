"""``torch.cond`` and ``torch.while_loop`` with torch's eager semantics.

Note [Eager control flow]
Outside ``torch.compile``, ``torch.cond`` with a Python bool/int/float predicate just calls
the chosen branch; with a tensor predicate torch traces both branches and runs the taken
one. tapegrad has no tracer, so it runs the taken branch only (gradients flow through it,
as through any code), after torch's input checks: the predicate is a bool or a
one-element tensor, the branches are callable, the operands a tuple/list (nested
dict/list/tuple allowed) of tensors only. ``while_loop`` runs ``body_fn`` while
``cond_fn`` returns True (a bool or a one-element bool tensor) and checks, each step, that
the body gives back tensors of the carried ones' shapes and dtypes, as torch's trace
does. Not reproduced, since they need the tracer: the untaken branch's output is not
checked against the taken one's, an output aliasing an input is not refused, and a loop
that runs zero times returns ``carried_inputs`` as given (torch: in ``body_fn``'s output
structure). All failures raise RuntimeError, as torch's (its Dynamo errors subclass it).
"""

from __future__ import annotations

from .tensor import Tensor

__all__ = ["cond", "while_loop"]


def _leaves(tree):
    if isinstance(tree, dict):
        return [leaf for v in tree.values() for leaf in _leaves(v)]
    if isinstance(tree, (list, tuple)):
        return [leaf for v in tree for leaf in _leaves(v)]
    return [tree]


def cond(pred, true_fn, false_fn, operands=()):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``.

    >>> import tapegrad as tg
    >>> x = tg.tensor([1.0, -2.0])
    >>> tg.cond(x.sum() > 0, lambda a: a * 2, lambda a: a - 1, (x,))
    tensor([ 0., -3.])
    """
    if isinstance(pred, (bool, int, float)):  # torch's eager path: no checks at all
        return true_fn(*operands) if pred else false_fn(*operands)
    if not isinstance(pred, Tensor):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)) or not all(
        isinstance(t, Tensor) for t in _leaves(operands)
    ):
        raise RuntimeError(
            "Expect operands to be a tuple of possibly nested dict/list/tuple that only "
            f"consists of tensor leaves, but got {operands}."
        )
    return true_fn(*operands) if bool(pred.item()) else false_fn(*operands)


def _keep_going(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, Tensor) and value.numel() == 1 and value.dtype == bool:
        return bool(value.item())
    shape = tuple(value.shape) if isinstance(value, Tensor) else type(value).__name__
    raise RuntimeError(
        "torch.while_loop: Expected cond_fn to return a bool or a one-element bool tensor "
        f"but got {shape}" + (f" of dtype {value.dtype}" if isinstance(value, Tensor) else "")
    )


def while_loop(cond_fn, body_fn, carried_inputs):
    """``while cond_fn(*carried): carried = body_fn(*carried)``; returns the last carried.

    >>> import tapegrad as tg
    >>> tg.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2), (tg.tensor(0), tg.ones(2)))
    (tensor(3), tensor([8., 8.]))
    """
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(
            "torch.while_loop: carried_inputs must be a tuple or list of tensors, got "
            f"{type(carried_inputs).__name__}"
        )
    leaves = _leaves(carried_inputs)
    if not all(isinstance(t, Tensor) for t in leaves):
        raise RuntimeError(
            "Expect carried_inputs to be a tuple of possibly nested dict/list/tuple that only "
            f"consists of tensor leaves, but got {carried_inputs}."
        )
    carried, result = carried_inputs, carried_inputs
    while _keep_going(cond_fn(*carried)):
        result = body_fn(*carried)
        carried = result if isinstance(result, (tuple, list)) else (result,)
        new = _leaves(carried)
        if len(new) != len(leaves):
            raise RuntimeError(
                f"Expected body_fn_output and carried_inputs to have the same number of "
                f"tensors, but got {len(new)} and {len(leaves)}"
            )
        for i, (a, b) in enumerate(zip(new, leaves)):
            if not isinstance(a, Tensor):
                raise RuntimeError(f"body_fn output pair[{i}] is {type(a).__name__}, not a tensor")
            for what in ("shape", "dtype"):
                if getattr(a, what) != getattr(b, what):
                    raise RuntimeError(
                        "Expected body_fn_output and carried_inputs to have same metadata "
                        f"but found: pair[{i}] differ in '{what}: {getattr(a, what)} vs "
                        f"{getattr(b, what)}'"
                    )
    return result
