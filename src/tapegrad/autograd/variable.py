"""``torch.autograd.Variable``: the pre-0.4 wrapper, kept for old tutorials.

Since PyTorch 0.4 a Variable is a Tensor: ``Variable(t, requires_grad=True)`` gives a
tensor sharing ``t``'s memory, and ``isinstance(x, Variable)`` holds for every tensor.
"""

from __future__ import annotations

from .. import _warn
from ..tensor import Tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False)``: a tensor sharing ``data``'s memory.

    >>> import tapegrad as tg
    >>> v = tg.autograd.Variable(tg.ones(2), requires_grad=True)
    >>> v.requires_grad, isinstance(v, tg.autograd.Variable)
    (True, True)
    """

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if data is None:
            data = Tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if volatile:  # torch's legacy constructor: a warning, and no effect
            _warn.warn(
                "volatile was removed and now has no effect. Use `with torch.no_grad():` instead."
            )
            if requires_grad:
                raise ValueError("Variable can't be volatile and require_grad at the same time!")
        return data.detach().requires_grad_(requires_grad)
