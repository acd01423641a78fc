"""``nn.Buffer``: a tensor that registers itself as a buffer when assigned to a Module."""

from __future__ import annotations

import numpy as np

from .. import _dtypes
from ..tensor import Tensor, _init

__all__ = ["Buffer"]


class Buffer(Tensor):
    """A non-learnable tensor of a Module's state (as BatchNorm's ``running_mean``).

    ``module.name = Buffer(t)`` registers it as ``register_buffer(name, t, persistent)``
    does; assigning a plain Tensor does not. It shares ``data``'s memory and version
    counter, as ``data.detach()`` would, and keeps ``data.requires_grad``.

    Args:
        data: the tensor (default: an empty float tensor).
        persistent: whether it goes into the module's ``state_dict``.

    >>> import tapegrad as tg
    >>> m = tg.nn.Module()
    >>> m.steps = tg.nn.Buffer(tg.zeros(()), persistent=False)
    >>> [name for name, _ in m.named_buffers()], list(m.state_dict())
    (['steps'], [])
    """

    def __init__(self, data=None, *, persistent=True):
        if data is None:
            _init(self, np.empty(0, _dtypes.get_default_dtype()))
        else:
            _init(self, data._data)
            self._vc = data._vc
            if data.requires_grad:
                self.requires_grad_(True)
        self.persistent = persistent
