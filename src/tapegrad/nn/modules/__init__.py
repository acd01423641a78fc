"""``tapegrad.nn.modules``: the module paths PyTorch programs import (``torch.nn.modules.linear``).

tapegrad's layers live in ``tapegrad.nn.<file>`` under its own file names; this table
maps each torch submodule name to the tapegrad file holding the same classes, registers
it as ``tapegrad.nn.modules.<name>`` (so ``import`` and ``from ... import`` both work) and
re-exports every layer class here, as torch.nn.modules does.
"""

from __future__ import annotations

import sys

from .. import (
    activation,
    container,
    conv,
    dropout,
    embedding,
    lazy,
    linear,
    loss,
    module,
    normalization,
    pooling,
)

# torch.nn.modules.<name> -> the tapegrad.nn module that holds those classes
_TORCH_NAMES = {
    "module": module,
    "linear": linear,
    "flatten": linear,
    "conv": conv,
    "activation": activation,
    "loss": loss,
    "container": container,
    "batchnorm": normalization,
    "normalization": normalization,
    "dropout": dropout,
    "pooling": pooling,
    "sparse": embedding,
    "lazy": lazy,
}

__all__ = []
for _name, _mod in _TORCH_NAMES.items():
    sys.modules[f"{__name__}.{_name}"] = _mod
    globals()[_name] = _mod
    for _cls in _mod.__all__:
        globals()[_cls] = getattr(_mod, _cls)
        if _cls not in __all__:
            __all__.append(_cls)
del _name, _mod, _cls
