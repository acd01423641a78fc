"""``torch.cond`` and ``torch.while_loop`` in eager mode.

torch compiles both into graph operators (with Dynamo) so that ``torch.export`` keeps both
branches or the loop; run eagerly, each is what it says: the branch that ``pred`` picks,
called on ``operands``, or ``body_fn`` applied while ``cond_fn`` holds. tapegrad runs them
as that Python, so gradients flow through the branch or iterations that ran. The inputs
are checked as torch checks them, with its messages.
"""

from __future__ import annotations

from .tensor import Tensor

__all__ = ["cond", "while_loop"]


def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in _leaves(item)]
    if isinstance(tree, dict):
        return [leaf for item in tree.values() for leaf in _leaves(item)]
    return [tree]


def cond(pred, true_fn, false_fn, operands=()):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``; ``pred`` is a Python
    bool (or number) or a one-element tensor.

    Raises:
        RuntimeError: ``pred`` of another kind or size, a branch that is not callable, or
            operands that are not a tuple/list of tensors (torch's messages).
    """
    if isinstance(pred, (bool, int, float)):  # torch runs the branch without checks here
        return true_fn(*operands) if pred else false_fn(*operands)
    if not isinstance(pred, Tensor):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)) or any(
        not isinstance(leaf, Tensor) for leaf in _leaves(operands)
    ):
        raise RuntimeError(
            "Expect operands to be a tuple of possibly nested dict/list/tuple that only "
            f"consists of tensor leaves, but got {operands}."
        )
    return true_fn(*operands) if bool(pred) else false_fn(*operands)


def while_loop(cond_fn, body_fn, carried_inputs):
    """Apply ``body_fn`` to the carried values while ``cond_fn`` of them is true; the final
    values as ``body_fn`` returns them (a tuple, a list or one tensor, as torch), or
    ``carried_inputs`` as a tuple when the loop never runs. Each step's tensors must keep
    the carried ones' shapes and dtypes (RuntimeError, as torch's trace).

    Raises:
        RuntimeError: a function that is not callable, or ``cond_fn`` returning something
            other than a bool or a one-element bool tensor.
        AssertionError: a carried value that is not a tensor or int, or ``body_fn``
            returning another number of values (torch's checks).
    """
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(
            f"carried_inputs must be a tuple or list, got {type(carried_inputs).__name__}"
        )
    leaves = _leaves(carried_inputs)
    if any(not isinstance(leaf, (Tensor, int)) for leaf in leaves):
        kinds = tuple(type(leaf) for leaf in leaves)
        raise AssertionError(
            f"{list(leaves)} can only be of (<class 'torch.Tensor'>, <class 'int'>, "
            f"<class 'torch.SymInt'>) but got {kinds}"
        )
    carried = result = tuple(carried_inputs)
    while True:
        pred = cond_fn(*carried)
        if isinstance(pred, Tensor):
            if pred.numel() != 1 or pred.dtype.kind != "b":
                raise RuntimeError(
                    f"cond_fn must return a boolean scalar tensor or a SymBool but got {pred}"
                )
            pred = bool(pred)
        elif not isinstance(pred, bool):
            raise RuntimeError(
                f"cond_fn must return a boolean scalar tensor or a SymBool but got {pred}"
            )
        if not pred:
            return result
        result = body_fn(*carried)  # returned as body_fn gives it (a list, a lone tensor)
        out = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        if len(out) != len(carried):
            raise AssertionError(
                "body_fn should return the same number of elements as carried_inputs"
            )
        _check_metadata(_leaves(out), _leaves(carried))
        carried = out


def _check_metadata(new, old):
    """torch's trace refuses a body whose tensors change shape or dtype between steps."""
    for i, (a, b) in enumerate(zip(new, old)):
        if isinstance(a, Tensor) and isinstance(b, Tensor):
            for what in ("shape", "dtype"):
                if getattr(a, what) != getattr(b, what):
                    raise RuntimeError(
                        "Expected body_fn_output and carried_inputs to have same metadata "
                        f"but found: pair[{i}] differ in '{what}: {getattr(a, what)} vs "
                        f"{getattr(b, what)}'"
                    )
