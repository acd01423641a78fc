"""``tapegrad.types``, as ``torch.types``: the type aliases that annotations in library
code import (``from torch.types import Device, Number, _size``), over tapegrad's classes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import IO

import numpy as np

from ._device import Size, device
from ._tensor_extras import UntypedStorage
from ._torch_sym import SymBool, SymFloat, SymInt
from .sparse.layout import Layout
from .tensor import Tensor

__all__ = ["Number", "Device", "FileLike", "Storage"]

_int, _float, _bool, _complex, _str, _bytes = int, float, bool, complex, str, bytes
_dtype = np.dtype  # tapegrad.dtype
_device = device
_layout = Layout

Number = int | float | bool
_Number = (int, float, bool)
Device = device | str | int | None
FileLike = str | os.PathLike[str] | IO[bytes]
Storage = UntypedStorage  # torch's is a protocol class; tapegrad's storages are these

_size = Size | list[int] | tuple[int, ...]
_symsize = Size | Sequence[int | SymInt]
_TensorOrTensors = Tensor | Sequence[Tensor]
_TensorOrOptionalTensors = Tensor | Sequence[Tensor | None]

IntLikeType = int | SymInt
FloatLikeType = float | SymFloat
BoolLikeType = bool | SymBool
py_sym_types = (SymInt, SymFloat, SymBool)
PySymType = SymInt | SymFloat | SymBool
