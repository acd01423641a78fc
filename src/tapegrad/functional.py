"""``tapegrad.functional``, as ``torch.functional``: the module where torch defines
``einsum``, ``norm``, ``split``, ``meshgrid``, ``stft``... Each name is tapegrad's top-level
function of the same name; the ones torch exports here that tapegrad lacks are absent
(an AttributeError, not a stand-in).
"""

from __future__ import annotations

import tapegrad as _tg

# torch.functional.__all__ (torch 2.13)
_TORCH_ALL = (
    "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors",
    "cartesian_prod", "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu", "norm",
    "meshgrid", "pca_lowrank", "split", "stft", "svd_lowrank", "tensordot", "unique",
    "unique_consecutive", "unravel_index",
)  # fmt: skip

__all__ = [name for name in _TORCH_ALL if hasattr(_tg, name)]
globals().update({name: getattr(_tg, name) for name in __all__})
