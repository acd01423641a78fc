"""``torch.nn.utils.parametrizations``: weight_norm and spectral_norm as parametrizations
(state-dict keys ``parametrizations.weight.original0/1`` and ``.original``, ``.0._u/_v``)."""

from __future__ import annotations

import numpy as np

from ...creation import default_generator
from ...grad_mode import no_grad
from ...ops.norm import vector_norm
from ...tensor import Tensor
from .._distance import normalize
from ..module import Module
from . import parametrize

__all__ = ["weight_norm", "spectral_norm", "norm_except_dim"]


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dim but ``dim``, keeping dims (size 1); the
    norm of all of ``v`` when ``dim == -1``."""
    if dim == -1:
        return vector_norm(v, pow)
    dim = dim % v.ndim
    others = tuple(d for d in range(v.ndim) if d != dim)
    return vector_norm(v, pow, others, keepdim=True)


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as ``g · v / ‖v‖`` (norm over every dim but ``dim``;
    all dims when ``dim`` is None), with ``g`` = original0 and ``v`` = original1.

    >>> import tapegrad as tg
    >>> m = tg.nn.utils.parametrizations.weight_norm(tg.nn.Linear(4, 2))
    >>> sorted(m.state_dict())
    ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                "Dimension out of range (expected to be in range of "
                f"[-{ndim}, {ndim - 1}] but got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._matrix(weight)._data
            h, w = mat.shape
            rng = default_generator.numpy
            u = Tensor._wrap(rng.standard_normal(h).astype(mat.dtype))
            v = Tensor._wrap(rng.standard_normal(w).astype(mat.dtype))
            self.register_buffer("_u", normalize(u, dim=0, eps=eps))
            self.register_buffer("_v", normalize(v, dim=0, eps=eps))
            self._power_method(mat, 15)

    def _matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, mat, n):
        """``n`` power iterations on the array ``mat``, updating ``_u`` and ``_v`` in place."""
        u, v = self._u._data, self._v._data
        for _ in range(n):
            x = mat @ v
            u[...] = x / max(np.sqrt((x * x).sum()), self.eps)
            y = mat.T @ u
            v[...] = y / max(np.sqrt((y * y).sum()), self.eps)
        self._u._vc.value += 1
        self._v._vc.value += 1

    def forward(self, weight):
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        mat = self._matrix(weight)
        if self.training:
            with no_grad():
                self._power_method(mat._data, self.n_power_iterations)
        u = Tensor._wrap(self._u._data.copy())
        v = Tensor._wrap(self._v._data.copy())
        sigma = (u * (mat @ v)).sum()
        return weight / sigma

    def right_inverse(self, value):
        return value


_TRANSPOSED_CONVS = ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Reparametrize ``module.<name>`` as ``W / σ(W)``, σ the largest singular value
    estimated by power iteration (one per forward in training). ``dim`` defaults to 1 for
    transposed convolutions, else 0.

    Raises:
        ValueError: ``module`` has no parameter or buffer called ``name``.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if type(module).__name__ in _TRANSPOSED_CONVS else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps)
    )
    return module
