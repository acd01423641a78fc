"""vmap rules for the view ops' in-place twins (``t_``, ``transpose_``, ``squeeze_``...;
Note [Generated in-place twins]): a per-element loop would change each element's shape,
not the batched tensor's, so the twin takes the batched out-of-place view's physical value
(a metadata change of the batch, as PyTorch's vmap does)."""

from __future__ import annotations

from ._batched import RULES, BatchedTensor
from .ops.inplace_methods import VIEW_TWINS

__all__: list[str] = []


def _view_twin(name, fn, level, args, kwargs):
    self = args[0]
    if type(self) is not BatchedTensor or self._blevel != level:
        return NotImplemented
    view = getattr(self, name[:-1])(*args[1:], **kwargs)
    if type(view) is not BatchedTensor or view._blevel != level:
        return NotImplemented
    self._bval = view._bval
    self._vc.bump(name)
    return self


for _name in VIEW_TWINS:
    RULES[f"{_name}_"] = _view_twin
