"""``tapegrad.overrides``, as ``torch.overrides``: the ``__torch_function__`` protocol's entry
points that libraries call in eager code (``if has_torch_function(args): return
handle_torch_function(fn, args, *args)``).

Note [__torch_function__ without a dispatcher]
torch's own ops call ``__torch_function__`` on their arguments from C++; tapegrad's ops do
not (its Tensor has no ``__torch_function__``). What is here is the Python half, as torch
defines it: an argument is *overloaded* when its type has a ``__torch_function__``, so
``has_torch_function`` is False for tapegrad tensors, Parameters and plain numbers (torch's
answer for its plain tensors), and True for the tensor-likes that libraries define;
``handle_torch_function`` then calls their ``__torch_function__`` in torch's order
(subclasses before their bases, else left to right) until one returns something other
than ``NotImplemented``. So library code written against the protocol (and the ``sym_*``
helpers) behaves as under torch for these objects.
"""

from __future__ import annotations

import functools

from ._warn import warn
from .tensor import Tensor

__all__ = [
    "handle_torch_function",
    "has_torch_function",
    "has_torch_function_unary",
    "has_torch_function_variadic",
    "is_tensor_like",
    "wrap_torch_function",
]


def _overloaded(arg_type) -> bool:
    return hasattr(arg_type, "__torch_function__")


def _sequence(relevant_args):
    if not hasattr(relevant_args, "__iter__"):
        raise TypeError("expected a sequence")
    return tuple(relevant_args)


def has_torch_function(relevant_args) -> bool:
    """Whether any of ``relevant_args`` (a sequence) has a ``__torch_function__``."""
    return any(_overloaded(type(a)) for a in _sequence(relevant_args))


def has_torch_function_unary(arg) -> bool:
    """``has_torch_function((arg,))``."""
    return _overloaded(type(arg))


def has_torch_function_variadic(*args) -> bool:
    """``has_torch_function(args)``."""
    return any(_overloaded(type(a)) for a in args)


def _get_overloaded_args(relevant_args):
    """The overloaded arguments, one per type, subclasses before their bases (torch's order)."""
    seen, overloaded = set(), []
    for arg in _sequence(relevant_args):
        arg_type = type(arg)
        if arg_type in seen or not _overloaded(arg_type):
            continue
        seen.add(arg_type)
        index = len(overloaded)
        for i, old in enumerate(overloaded):
            if issubclass(arg_type, type(old)):
                index = i
                break
        overloaded.insert(index, arg)
    return overloaded


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """``__torch_function__(public_api, types, args, kwargs)`` of each overloaded argument
    in turn; the first result that is not ``NotImplemented``.

    Raises:
        TypeError: every one returned ``NotImplemented`` (torch's message).
    """
    overloaded = _get_overloaded_args(relevant_args)
    types = tuple(type(a) for a in overloaded)
    for arg in overloaded:
        method = arg.__torch_function__
        if getattr(method, "__self__", None) is arg:
            warn(
                "Defining your `__torch_function__ as a plain method is deprecated and will be "
                "an error in future, please define it as a classmethod.",
                DeprecationWarning,
            )
        result = method(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = f"{public_api.__module__}.{public_api.__name__}"
    raise TypeError(
        f"no implementation found for '{name}' on types that implement __torch_function__: "
        f"{[type(a) for a in overloaded]}"
    )


def is_tensor_like(inp) -> bool:
    """True for a tapegrad Tensor (or Parameter), the Tensor class, or anything with a
    ``__torch_function__``, as torch's."""
    if isinstance(inp, Tensor) or inp is Tensor:
        return True
    return hasattr(inp, "__torch_function__")


def wrap_torch_function(dispatcher):
    """A decorator: the function handles ``__torch_function__`` on the arguments that
    ``dispatcher(*args, **kwargs)`` returns, as torch's."""

    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant_args = dispatcher(*args, **kwargs)
            if has_torch_function(relevant_args):
                return handle_torch_function(wrapped, relevant_args, *args, **kwargs)
            return func(*args, **kwargs)

        return wrapped

    return inner
