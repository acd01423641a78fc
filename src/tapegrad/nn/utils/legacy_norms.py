"""The hook-based ``torch.nn.utils.weight_norm`` / ``spectral_norm`` (and their ``remove_``),
kept for old code: parameters ``weight_g``/``weight_v`` (resp. ``weight_orig`` and buffers
``weight_u``/``weight_v``), with ``module.weight`` recomputed by a forward pre-hook."""

from __future__ import annotations

import numpy as np

from ... import _warn
from ...creation import default_generator
from ...grad_mode import no_grad
from ...tensor import Tensor
from ..parameter import Parameter
from .parametrizations import norm_except_dim

__all__ = ["weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm"]


class WeightNorm:
    """The pre-hook behind :func:`weight_norm`: ``weight = g · v / ‖v‖``."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / norm_except_dim(v, 2, self.dim))

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module)
        module.__dict__.pop(self.name, None)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute_weight(module))


def _hooks(module, kind):
    """The ``kind`` pre-hooks of ``module`` (entries may wrap the hook in ``.fn``)."""
    return [
        getattr(h, "fn", h)
        for h in module._forward_pre_hooks
        if isinstance(getattr(h, "fn", h), kind)
    ]


def _unregister(module, hook):
    module._forward_pre_hooks[:] = [
        h for h in module._forward_pre_hooks if getattr(h, "fn", h) is not hook
    ]


def weight_norm(module, name="weight", dim=0):
    """Split ``module.<name>`` into a magnitude ``<name>_g`` and a direction ``<name>_v``.

    Raises:
        RuntimeError: a weight_norm hook is already registered on ``name``.
    """
    _warn.warn(
        "`tapegrad.nn.utils.weight_norm` is deprecated in favor of "
        "`tapegrad.nn.utils.parametrizations.weight_norm`.",
        FutureWarning,
    )
    if any(h.name == name for h in _hooks(module, WeightNorm)):
        raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    fn = WeightNorm(name, dim)
    weight = getattr(module, name)
    del module._parameters[name]
    with no_grad():
        g = norm_except_dim(weight, 2, fn.dim)
    module.register_parameter(name + "_g", Parameter(g.detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    object.__setattr__(module, name, fn.compute_weight(module))
    module.register_forward_pre_hook(fn)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo :func:`weight_norm`: ``<name>`` becomes one parameter again.

    Raises:
        ValueError: no weight_norm on ``name``.
    """
    for hook in _hooks(module, WeightNorm):
        if hook.name == name:
            hook.remove(module)
            _unregister(module, hook)
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")


class SpectralNorm:
    """The pre-hook behind :func:`spectral_norm`: ``weight = W / σ(W)`` (power iteration
    on buffers ``<name>_u``, ``<name>_v`` in training)."""

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def _normalize(self, x):
        return x / max(float(np.sqrt((x * x).sum())), self.eps)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = self.matrix(weight)
        if do_power_iteration:
            m = mat._data
            for _ in range(self.n_power_iterations):
                v._data[...] = self._normalize(m.T @ u._data)
                u._data[...] = self._normalize(m @ v._data)
            u._vc.value += 1
            v._vc.value += 1
        ut = Tensor._wrap(u._data.copy())
        vt = Tensor._wrap(v._data.copy())
        sigma = (ut * (mat @ vt)).sum()
        return weight / sigma

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        module.__dict__.pop(self.name, None)
        del module._buffers[self.name + "_u"]
        del module._buffers[self.name + "_v"]
        del module._parameters[self.name + "_orig"]
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        object.__setattr__(
            module, self.name, self.compute_weight(module, do_power_iteration=module.training)
        )


_TRANSPOSED_CONVS = ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Normalise ``module.<name>`` by its spectral norm before every forward.

    Raises:
        RuntimeError: a spectral_norm hook is already registered on ``name``.
    """
    if any(h.name == name for h in _hooks(module, SpectralNorm)):
        raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
    if dim is None:
        dim = 1 if type(module).__name__ in _TRANSPOSED_CONVS else 0
    fn = SpectralNorm(name, n_power_iterations, dim, eps)
    weight = module._parameters[name]
    h, w = fn.matrix(weight).shape
    rng = default_generator.numpy
    dtype = weight._data.dtype
    u = Tensor._wrap(fn._normalize(rng.standard_normal(h).astype(dtype)))
    v = Tensor._wrap(fn._normalize(rng.standard_normal(w).astype(dtype)))
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    object.__setattr__(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(fn)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo :func:`spectral_norm` on ``name``.

    Raises:
        ValueError: no spectral_norm on ``name``.
    """
    for hook in _hooks(module, SpectralNorm):
        if hook.name == name:
            hook.remove(module)
            _unregister(module, hook)
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
