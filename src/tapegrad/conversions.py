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

Tensor.half = lambda self, memory_format=None: self.to(_dtypes.float16)
Tensor.bfloat16 = lambda self, memory_format=None: self.to(_dtypes.bfloat16)
Tensor.short = lambda self, memory_format=None: self.to(_dtypes.int16)
Tensor.byte = lambda self, memory_format=None: self.to(_dtypes.uint8)
Tensor.char = lambda self, memory_format=None: self.to(_dtypes.int8)
