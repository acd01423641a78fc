"""Parameter: a Tensor that a Module registers as a learnable weight."""

from __future__ import annotations

import numpy as np

from .. import _dtypes
from ..tensor import Tensor, _as_array, _init

__all__ = ["Parameter"]


class Parameter(Tensor):
    """A leaf Tensor that requires grad by default and is registered by Modules.

    Built from a Tensor it shares that tensor's memory and version counter (as
    ``torch.nn.Parameter`` does); other data is copied. Ops treat it exactly like
    a Tensor: it is one.

    >>> import tapegrad as tg
    >>> p = tg.nn.Parameter(tg.zeros(2))
    >>> p.requires_grad, isinstance(p, tg.Tensor)
    (True, True)
    """

    __slots__ = ()

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            _init(self, np.empty(0, _dtypes.get_default_dtype()))
        elif isinstance(data, Tensor):
            _init(self, data._data)
            self._vc = data._vc
        else:
            _init(self, _as_array(data, None, "cpu"))
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        return (Parameter, (Tensor._wrap(self._data.copy()), self._rg))

    def __deepcopy__(self, memo):  # copy.deepcopy looks ``self`` up in ``memo`` first
        p = Parameter(Tensor._wrap(self._data.copy()), self._rg)
        if self.grad is not None:
            p.grad = Tensor._wrap(self.grad._data.copy())
        memo[id(self)] = p
        return p
