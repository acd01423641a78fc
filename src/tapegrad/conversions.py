"""Tensor conversion methods that PyTorch programs call: ``half``, ``bfloat16``, ``short``,
``byte``, ``char``.

Casts go through ``Tensor.to``, so a float-to-float change stays differentiable.
``Tensor.type``, ``type_as``, ``element_size``, ``nelement`` and ``new_zeros``/``new_ones``/
``new_full``/``new_empty``/``new_tensor`` are bound once, by issue 17's ``legacy.py`` and
``_tensor_compat.py`` (``size=``, ``device=``, ``ValueError('invalid type')`` for an
unknown type name, as torch).
"""

from __future__ import annotations

from . import _dtypes
from .tensor import Tensor

__all__ = []


def _conversion(name, dtype):
    # ``dtype`` is a dtype's name: ``_dtypes.bfloat16`` would import ml_dtypes now, at
    # ``import tapegrad`` (Note [Lazy bfloat16] in _dtypes.py).
    def convert(self, memory_format=None):
        return self.to(getattr(_dtypes, dtype))

    convert.__name__ = convert.__qualname__ = name
    convert.__doc__ = f"``self.to({dtype})``, as PyTorch's ``Tensor.{name}``."
    return convert


for _name, _dtype in (
    ("half", "float16"),
    ("bfloat16", "bfloat16"),
    ("short", "int16"),
    ("byte", "uint8"),
    ("char", "int8"),
):
    setattr(Tensor, _name, _conversion(_name, _dtype))
del _name, _dtype
