"""Tensor methods and properties PyTorch programs use that are no new math: the queries
``is_complex``, ``is_signed``, ``is_nonzero``, ``is_same_size``, ``is_inference``,
``ndimension``, ``itemsize``, ``nbytes``, ``output_nr``; ``adjoint`` (a transpose of the
last two dims); the deprecated out-of-place ``resize``/``resize_as`` (a reshape that keeps
the number of elements, as torch's ``autograd._functions.Resize``); and the methods of the
functional ops ``hardshrink`` and ``prelu``. Bound to Tensor here (plain methods over
registered ops, not new graph ops)."""

from __future__ import annotations

import math

from . import _warn
from ._inference_tensors import is_inference
from .nn import _activations
from .tensor import Tensor

__all__: list[str] = []


def _is_complex(self) -> bool:
    """True for a complex dtype."""
    return self._data.dtype.kind == "c"


def is_signed(self) -> bool:
    """True for a signed dtype (floats, complex, signed ints; not bool or uint8)."""
    return self._data.dtype.kind in "fic" or self._data.dtype.name == "bfloat16"


def is_nonzero(self) -> bool:
    """The one element as a bool; torch's RuntimeError when there is not exactly one."""
    n = self._data.size
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self._data.reshape(()) != 0)


def is_same_size(self, other) -> bool:
    """True when ``other`` has self's shape."""
    return self._data.shape == other._data.shape


def ndimension(self) -> int:
    """``self.dim()``: the number of dimensions."""
    return self._data.ndim


def adjoint(self):
    """The conjugate transpose of the last two dims (a view; a transpose for real dtypes)."""
    if self._data.ndim < 2:
        raise RuntimeError(
            "tensor.adjoint() is only supported on matrices or batches of matrices. "
            f"Got {self._data.ndim}-D tensor."
        )
    out = self.transpose(-2, -1)
    return out.conj() if self._data.dtype.kind == "c" else out


def _resize(self, sizes, which):
    _warn.warn(f"non-inplace {which} is deprecated", UserWarning)
    n = math.prod(sizes)
    if n != self._data.size:
        shape = ", ".join(str(s) for s in sizes)
        raise RuntimeError(
            f"requested resize to {shape} ({n} elements in total), but the given tensor has a "
            f"size of {'x'.join(str(s) for s in self._data.shape)} ({self._data.size} "
            "elements). autograd's resize can only change the shape of a given tensor, while "
            "preserving the number of elements. "
        )
    return self.reshape(tuple(sizes))


def resize(self, *sizes):
    """Deprecated out-of-place resize (torch's): ``self`` reshaped to ``sizes``, which must
    hold as many elements (RuntimeError otherwise)."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    return _resize(self, tuple(sizes), "resize")


def resize_as(self, tensor):
    """Deprecated out-of-place ``resize(tensor.shape)``."""
    return _resize(self, tuple(tensor._data.shape), "resize_as")


def _hardshrink(self, lambd=0.5):
    """``nn.functional.hardshrink(self, lambd)``."""
    return _activations.hardshrink(self, lambd)


def _prelu(self, weight):
    """``nn.functional.prelu(self, weight)``."""
    return _activations.prelu(self, weight)


Tensor.itemsize = property(lambda self: self._data.itemsize, doc="Bytes per element.")
Tensor.nbytes = property(
    lambda self: self._data.size * self._data.itemsize, doc="numel() * itemsize."
)
Tensor.output_nr = property(
    lambda self: self._output_nr, doc="Which output of its grad_fn this tensor is."
)
for _name, _fn in (
    ("is_signed", is_signed),
    ("is_nonzero", is_nonzero),
    ("is_same_size", is_same_size),
    ("is_inference", is_inference),
    ("ndimension", ndimension),
    ("adjoint", adjoint),
    ("resize", resize),
    ("resize_as", resize_as),
    ("hardshrink", _hardshrink),
    ("prelu", _prelu),
    ("is_complex", _is_complex),
):
    if not hasattr(Tensor, _name):  # another module (complex dtypes) may bind its own
        setattr(Tensor, _name, _fn)
