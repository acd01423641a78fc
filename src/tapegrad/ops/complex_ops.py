"""Complex tensors: real/imag parts, conjugation, view_as_real/complex, complex, polar.

Gradients follow PyTorch's convention (Note [Complex autograd guard]): for a real loss L
of z = x + iy, z.grad = dL/dx + i dL/dy. So (g is the incoming gradient):
    real(z): g + 0i          imag(z): 0 + ig          conj(z): conj(g)
    complex(x, y): (Re g, Im g)       view_as_real / view_as_complex: each other's view
    polar(r, θ), out = r e^{iθ}:  (Re(g conj(e^{iθ})), Re(conj(g) · i · out))
    abs(z): g · z/|z| (0 at 0)        angle(z): g · i z / |z|² (0 at 0)
``real`` and ``imag`` of a complex tensor are writable views of its memory, as in PyTorch
(``z.real.mul_(2)`` changes ``z``; Note [Writing through real and imag] in ops/inplace.py);
``view_as_real`` shares it read-only; the other results are copies (``conj`` is
PyTorch's lazy view materialized, so ``is_conj()`` is always False).

>>> import tapegrad as tg
>>> z = tg.tensor([3 + 4j], requires_grad=True)
>>> z.abs().sum().backward()
>>> z.grad
tensor([0.6+0.8j])
"""

from __future__ import annotations

import numpy as np

from .. import _dtypes
from ..autograd.graph import make_result, sum_to
from ..tensor import Tensor
from . import complex_guard
from ._registry import register
from ._util import as_tensor, broadcast_error
from .shape import view_result

__all__ = [
    "real",
    "imag",
    "conj",
    "conj_physical",
    "resolve_conj",
    "view_as_real",
    "view_as_complex",
    "complex",
    "polar",
    "is_complex",
]

_REAL_OF = {_dtypes.complex64: _dtypes.float32, _dtypes.complex128: _dtypes.float64}
_COMPLEX_OF = {_dtypes.float32: _dtypes.complex64, _dtypes.float64: _dtypes.complex128}


def _read_only(view):
    view.flags.writeable = False
    return view


def _to_complex(g: Tensor, dtype) -> Tensor:
    """A real gradient as the complex gradient ``g + 0i`` of dtype ``dtype``."""
    return g._cast(dtype)


@register("real", method=False)
def real(input):  # NOTE: complex() and polar() below shadow this name; they call _real
    """The real part; a real tensor itself (as PyTorch). ``Tensor.real`` is the property."""
    data = input._data
    if data.dtype.kind != "c":
        return input
    cdtype = data.dtype

    def backward(g):
        return (_to_complex(g, cdtype),)

    return view_result(data.real, input, backward, "RealBackward")


@register("imag", method=False)
def imag(input):
    """The imaginary part of a complex tensor. ``Tensor.imag`` is the property.

    Raises:
        RuntimeError: for a real tensor (as PyTorch).
    """
    data = input._data
    if data.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")

    def backward(g):
        return (_complex(g.new_zeros(g.shape), g),)

    return view_result(data.imag, input, backward, "ImagBackward")


_real, _imag = real, imag
Tensor.real = property(real, doc="The real part (a writable view for complex tensors).")
Tensor.imag = property(imag, doc="The imaginary part of a complex tensor (a writable view).")


@register("conj")
def conj(input):
    """The complex conjugate; a real tensor itself. Gradient: conj(g)."""
    data = input._data
    if data.dtype.kind != "c":
        return input

    def backward(g):
        return (conj(g),)

    return make_result(np.conj(data), (input,), backward, "ConjBackward")


@register("conj_physical")
def conj_physical(input):
    """``conj``, materialized (tapegrad's ``conj`` always is)."""
    return conj(input)


@register("resolve_conj")
def resolve_conj(input):
    """Materializes a lazy conjugate: tapegrad has none, so ``input`` itself."""
    return input


def _is_conj(self) -> bool:
    """Always False: tapegrad's ``conj`` materializes the conjugate."""
    return False


Tensor.is_conj = _is_conj


@register("view_as_real")
def view_as_real(input):
    """A complex tensor of shape S as a real one of shape S + (2,) (real, imaginary).

    Raises:
        RuntimeError: for a real tensor (as PyTorch).
    """
    data = input._data
    if data.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    if data.ndim == 0 or data.strides[-1] != data.itemsize:
        out = np.stack([data.real, data.imag], axis=-1)
    else:  # a read-only view of the same memory
        out = _read_only(data.view(_REAL_OF[data.dtype]).reshape(data.shape + (2,)))

    def backward(g):
        return (view_as_complex(g),)

    return make_result(out, (input,), backward, "ViewAsRealBackward")


@register("view_as_complex")
def view_as_complex(input):
    """A float tensor of shape S + (2,) as a complex one of shape S.

    Raises:
        RuntimeError: unless the dtype is float32/float64 and the last dimension is 2.
    """
    data = input._data
    if data.dtype not in _COMPLEX_OF:
        raise RuntimeError(
            f"view_as_complex is only supported for float and double tensors, but got a tensor "
            f"of scalar type: {data.dtype}"
        )
    if data.ndim == 0 or data.shape[-1] != 2:
        raise RuntimeError(
            f"Tensor must have a last dimension of size 2, got shape {list(data.shape)}"
        )
    out = np.ascontiguousarray(data).view(_COMPLEX_OF[data.dtype])[..., 0]

    def backward(g):
        return (view_as_real(g),)

    return make_result(out, (input,), backward, "ViewAsComplexBackward")


def _float_pair(a, b, op):
    ta, tb = as_tensor(a, op), as_tensor(b, op)
    da, db = ta._data.dtype, tb._data.dtype
    if da != db:
        raise RuntimeError(
            f"{op}: expected both inputs to have the same dtype, but got {da} and {db}"
        )
    if da not in _COMPLEX_OF:
        raise RuntimeError(f"{op}: expected both inputs to be float or double tensors, got {da}")
    return ta, tb


@register("complex", method=False)
def complex(real, imag):  # noqa: A001 - PyTorch's name
    """``real + i·imag`` from two float tensors of one dtype (broadcasting)."""
    tr, ti = _float_pair(real, imag, "complex")
    try:
        out = np.add(tr._data, 1j * ti._data.astype(_COMPLEX_OF[ti._data.dtype]))
    except ValueError:
        raise broadcast_error("complex", tr.shape, ti.shape) from None
    out = out.astype(_COMPLEX_OF[tr._data.dtype], copy=False)
    sr, si = tr._data.shape, ti._data.shape

    def backward(g):
        return (sum_to(_real(g), sr), sum_to(_imag(g), si))

    # saved as PyTorch saves them (a second backward raises there too)
    return make_result(out, (tr, ti), backward, "ComplexBackward", saved=(tr, ti))


_complex = complex


@register("polar", method=False)
def polar(abs, angle):  # noqa: A002 - PyTorch's names
    """``abs · (cos(angle) + i·sin(angle))`` from two float tensors of one dtype."""
    tr, tt = _float_pair(abs, angle, "polar")
    try:
        out = tr._data * np.exp(1j * tt._data)
    except ValueError:
        raise broadcast_error("polar", tr.shape, tt.shape) from None
    # complex64 from float32 (a Python complex is weak under NEP 50), complex128 from float64
    sr, st = tr._data.shape, tt._data.shape

    def backward(g, out):
        unit = _complex(tt.cos(), tt.sin())
        g_abs = _real(g * conj(unit))
        g_angle = _real(conj(g) * out * 1j)
        return (sum_to(g_abs, sr), sum_to(g_angle, st))

    return make_result(out, (tr, tt), backward, "PolarBackward", saved=(tt,), save_output=True)


@register("is_complex", differentiable=False)
def is_complex(input) -> bool:
    """True for a complex64/complex128 tensor."""
    return input._data.dtype.kind == "c"


def _cfloat(self, memory_format=None) -> Tensor:
    return self.to(_dtypes.complex64)


def _cdouble(self, memory_format=None) -> Tensor:
    return self.to(_dtypes.complex128)


def _chalf(self, memory_format=None) -> Tensor:
    raise TypeError(
        "chalf: tapegrad has no complex32 dtype (NumPy has no half-precision complex type); "
        "use .cfloat()"
    )


def _mH(self) -> Tensor:
    """The conjugate transpose of the last two dims (the transpose for real dtypes)."""
    return conj(self.mT)


_real_H = Tensor.H


def _H(self) -> Tensor:
    """The conjugate transpose of a matrix (the transpose for real dtypes)."""
    return conj(_real_H.fget(self))


Tensor.mH = property(_mH)
Tensor.H = property(_H)
Tensor.cfloat = _cfloat
Tensor.cdouble = _cdouble
Tensor.chalf = _chalf


# -- complex rules of ops whose real rule does not hold (Note [Complex autograd guard]) ----


def _nonzero(z: Tensor):
    """(1 where z ≠ 0 else 0, 1 where z = 0 else 0) as constant real tensors."""
    zero = z._data == 0
    rdtype = _REAL_OF[z._data.dtype]
    return Tensor._wrap((~zero).astype(rdtype)), Tensor._wrap(zero.astype(rdtype))


def sgn_of(z: Tensor) -> Tensor:
    """z/|z|, and 0 at z = 0, in recorded ops (so second derivatives hold)."""
    nz, zero = _nonzero(z)
    return z * nz / (z.abs() + zero)


def _abs_complex(inputs):
    (z,) = inputs

    def backward(g):
        return (g * sgn_of(z),)

    return backward


def _angle_complex(inputs):
    (z,) = inputs

    def backward(g):
        nz, zero = _nonzero(z)
        r = z.abs()
        return (g * (z * nz * 1j) / (r * r + zero),)

    return backward


complex_guard.REPLACED["AbsBackward"] = _abs_complex
complex_guard.REPLACED["AngleBackward"] = _angle_complex
