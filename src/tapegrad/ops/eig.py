"""``tg.linalg.eig`` and ``tg.linalg.eigvals``: the eigendecomposition of general square
matrices, always complex (PyTorch's dtypes: float32 -> complex64, float64 -> complex128).

The forward is LAPACK's geev through ``numpy.linalg.eig`` (the real routine for real input,
as PyTorch, so real eigenvectors come out real), eigenvectors of unit norm. The backward is
PyTorch's ``linalg_eig_backward`` (for A = V diag(L) V⁻¹, g_L and g_V the gradients):

    VhgV = Vᴴ g_V,   VhgV ← VhgV − Vᴴ V diag(Re diag(VhgV))   (the phase gauge of V)
    g_A  = V⁻ᴴ ((VhgV + diag(g_L)) / E) Vᴴ,   E_ij = conj(L_j) − conj(L_i), E_ii = 1

and Re(g_A) for a real A. A loss that depends on the arbitrary phase of the eigenvectors
(Im diag(Vᴴ g_V) ≠ 0) has no gradient: that raises, as in PyTorch. Repeated eigenvalues
make E singular (inf/nan gradients), as in PyTorch. The rule is written in tapegrad ops
(and recomputes L, V in recorded ops under create_graph), so second derivatives exist.

>>> import tapegrad as tg
>>> tg.linalg.eigvals(tg.tensor([[2.0, 0.0], [0.0, 3.0]]))
tensor([2.+0.j, 3.+0.j])
"""

from __future__ import annotations

import weakref
from collections import namedtuple

import numpy as np

from .. import _dtypes
from ..autograd.graph import make_results
from ..grad_mode import STATE
from ..tensor import Tensor
from ._half_number import is_half
from ._int_scalars import scalar_type_name
from ._registry import register
from .complex_ops import conj, real
from .linalg import matmul
from .solve import _call, _square, solve
from .tri import diag_embed

__all__ = ["eig", "eigvals", "EigResult"]

EigResult = namedtuple("eig", ["eigenvalues", "eigenvectors"])

_COMPLEX_OF = {
    _dtypes.float32: _dtypes.complex64,
    _dtypes.float64: _dtypes.complex128,
    _dtypes.complex64: _dtypes.complex64,
    _dtypes.complex128: _dtypes.complex128,
}


def _mH(t: Tensor) -> Tensor:
    return conj(t.transpose(-2, -1))


@register("linalg_eig", method=False, function=False)
def _eig_op(A):
    A, data = _square(A, "linalg.eig")
    dt = A._data.dtype
    if dt != data.dtype or data.dtype not in _COMPLEX_OF:  # torch's: no eig of ints or halves
        name = scalar_type_name(dt)
        if is_half(dt):
            raise NotImplementedError(
                f"linalg.eig: \"linalg_eig_out_cpu\" not implemented for '{name}' (input of "
                f"dtype {dt}, shape {list(A.shape)})"
            )
        raise RuntimeError(
            f"linalg.eig: Unknown Complex ScalarType for {name}: the input (dtype {dt}, shape "
            f"{list(A.shape)}) must be floating point or complex"
        )
    cdtype = _COMPLEX_OF[data.dtype]
    if not np.isfinite(data).all():
        raise RuntimeError("linalg.eig: input tensor should not contain infs or NaNs.")
    w, v = _call(np.linalg.eig, "linalg.eig", "the eigensolver did not converge", data)
    w, v = w.astype(cdtype), v.astype(cdtype)
    real_input = data.dtype.kind != "c"
    node_ref = []  # a weak reference to this op's Node, set below

    def backward(gL, gV):
        L, V = Tensor._wrap(w), Tensor._wrap(v)
        if STATE.enabled:
            # create_graph: L and V as this Node's own outputs (as Node.apply rebuilds a saved
            # output). Recomputing them with a second eig would split the phase-invariant
            # cotangent of V between two Nodes, each then failing the phase check.
            node = node_ref[0]()
            for nr, t in enumerate((L, V)):
                t.grad_fn, t._rg, t._output_nr = node, True, nr
        gA = _eig_backward(gL, gV, L, V)
        return (real(gA) if real_input else gA,)

    outs = make_results((w, v), (A,), backward, "LinalgEigBackward", saved=(A,))
    if outs[0].grad_fn is not None:
        node_ref.append(weakref.ref(outs[0].grad_fn))
    return outs


def _eig_backward(gL, gV, L, V):
    Vh = _mH(V)
    VhgV = matmul(Vh, gV)
    diag = VhgV.diagonal(0, -2, -1)
    im = diag._data.imag
    if not np.allclose(im, 0, rtol=1e-2, atol=1e-2):
        raise RuntimeError(
            "linalg_eig_backward: The eigenvectors in the complex case are specified up to "
            "multiplication by e^{i phi}. The specified loss function depends on this quantity, "
            "so it is ill-defined."
        )
    VhgV = VhgV - matmul(Vh, V * real(diag).unsqueeze(-2))
    n = L._data.shape[-1]
    eye = Tensor._wrap(np.eye(n, dtype=L._data.dtype))
    Lc = conj(L)
    E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1) + eye  # the diagonal (zero) becomes one
    inner = (VhgV + diag_embed(gL)) / E
    return solve(Vh, matmul(inner, Vh))


def eig(A):
    """``tg.linalg.eig``: eigenvalues and unit-norm eigenvectors (columns) of square
    matrices, as complex tensors, with PyTorch's gradient (see the module docstring).

    Raises:
        RuntimeError: for a non-square input, infs/NaNs, or no convergence.
    """
    return EigResult(*_eig_op(A))


def eigvals(A):
    """``tg.linalg.eigvals``: the eigenvalues of :func:`eig` (complex)."""
    return _eig_op(A)[0]
