"""``torch.sym_int``, ``sym_float``, ``sym_max``, ``sym_min``, ``sym_not``, ``sym_sqrt``,
``sym_ite``, ``sym_sum``: torch's SymInt-aware helpers, as they behave on plain values.

tapegrad has no symbolic shapes, so these are torch's fallbacks: ``int()``/``float()``
conversions (tensors included), ``max``/``min`` that return a float when either side is
one, ``not``, ``math.sqrt``, a checked ternary and a plain sum. Each first hands
``__torch_function__`` overloads to ``overrides.handle_torch_function`` and honours the
``__sym_float__``/``__sym_not__``/``__sym_sqrt__`` hooks, as torch's do.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from . import overrides

__all__ = ["sym_float", "sym_int", "sym_ite", "sym_max", "sym_min", "sym_not", "sym_sqrt",
           "sym_sum", "SymBool", "SymFloat", "SymInt"]  # fmt: skip


class _SymNode:
    """torch's symbolic scalars wrap a node of a traced shape expression. tapegrad traces
    no shapes, so no value is ever one: ``isinstance(n, (int, torch.SymInt))`` (common in
    library code) is the int test it means in eager mode."""

    def __init__(self, node):
        self.node = node


class SymInt(_SymNode):
    """A symbolic int (never produced by tapegrad; see ``_SymNode``)."""


class SymFloat(_SymNode):
    """A symbolic float (never produced by tapegrad; see ``_SymNode``)."""


class SymBool(_SymNode):
    """A symbolic bool (never produced by tapegrad; see ``_SymNode``)."""


_ALL = (np.integer, np.floating, int, float)  # torch's __all_and_float_types with NumPy
_FLOATS = (np.floating, float)


def sym_int(a):
    """``int(a)`` (truncates; a one-element tensor's value)."""
    if overrides.has_torch_function_unary(a):
        return overrides.handle_torch_function(sym_int, (a,), a)
    return builtins.int(a)


def sym_float(a):
    """``float(a)``, or ``a.__sym_float__()`` where defined."""
    if overrides.has_torch_function_unary(a):
        return overrides.handle_torch_function(sym_float, (a,), a)
    if hasattr(a, "__sym_float__"):
        return a.__sym_float__()
    return builtins.float(a)


def _extreme(name, pick):
    def fn(a, b):
        if overrides.has_torch_function((a, b)):
            return overrides.handle_torch_function(fn, (a, b), a, b)
        for x in (a, b):
            if not isinstance(x, _ALL):
                raise AssertionError(f"expected {_ALL}, got {type(x)}")
        if isinstance(a, _FLOATS) or isinstance(b, _FLOATS):
            return builtins.float(pick(a, b))
        return pick(a, b)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"``{pick.__name__}(a, b)`` of two ints or floats, a float when either is one "
        "(unlike the builtin, which keeps the winner's type).\n\n"
        "Raises:\n    AssertionError: an argument that is not an int or float (a tensor too).\n"
    )
    return fn


sym_max = _extreme("sym_max", builtins.max)
sym_min = _extreme("sym_min", builtins.min)


def sym_not(a):
    """``not a``, or ``a.__sym_not__()`` where defined."""
    if overrides.has_torch_function_unary(a):
        return overrides.handle_torch_function(sym_not, (a,), a)
    if hasattr(a, "__sym_not__"):
        return a.__sym_not__()
    return not a


def sym_sqrt(a):
    """``math.sqrt(a)`` (a float; ValueError below zero), or ``a.__sym_sqrt__()``."""
    if overrides.has_torch_function_unary(a):
        return overrides.handle_torch_function(sym_sqrt, (a,), a)
    if hasattr(a, "__sym_sqrt__"):
        return a.__sym_sqrt__()
    return math.sqrt(a)


def sym_ite(b, t, f):
    """``t if b else f``.

    Raises:
        AssertionError: ``b`` is not a bool, or ``t`` and ``f`` differ in type (torch's checks).
    """
    if overrides.has_torch_function((b, t, f)):
        return overrides.handle_torch_function(sym_ite, (b, t, f), b, t, f)
    if not isinstance(b, builtins.bool):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def sym_sum(*args):
    """``sum(args)``; accepts ``sym_sum([a, b, c])`` and ``sym_sum(a, b, c)``."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    if overrides.has_torch_function(args):
        return overrides.handle_torch_function(sym_sum, args, args)
    return builtins.sum(args)
