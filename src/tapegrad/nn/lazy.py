"""Lazy modules: LazyModuleMixin and LazyLinear, LazyConv1d-3d, LazyConvTranspose1d-3d,
LazyBatchNorm1d-3d, LazyInstanceNorm1d-3d, as torch.

A lazy module is built without its input size; its parameters start as
UninitializedParameter (Note [Uninitialized tensors]). A forward pre-hook infers the size
from the first input (``initialize_parameters``), materialises and initialises them as
the eager class does, removes itself and turns the module into ``cls_to_become``: after
the first call ``type(m) is nn.Linear``. The parameter objects keep their identity, so an
optimizer built before the first call updates them. ``load_state_dict`` materialises the
uninitialized tensors to the loaded shapes first (Module.load_state_dict calls
``_lazy_load_hook``); the loaded values are kept by the first forward.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..grad_mode import no_grad
from ..tensor import Tensor
from ._uninitialized import UninitializedBuffer, UninitializedParameter, is_lazy
from .conv import Conv2d
from .conv_more import Conv1d, Conv3d, ConvTranspose1d, ConvTranspose2d
from .conv_transpose3d import ConvTranspose3d
from .linear import Linear
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm
from .normalization_ext import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm

__all__ = ["LazyModuleMixin", "LazyLinear"]


class LazyModuleMixin:
    """Mixed in before a Module class whose parameters' shapes come from the first input.

    Subclasses create UninitializedParameter/UninitializedBuffer attributes, define
    ``initialize_parameters(*args, **kwargs)`` (materialise them and reset), and may set
    ``cls_to_become``, the class the module takes after its first forward.
    """

    cls_to_become: type | None = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(
            self._infer_parameters, with_kwargs=True
        )

    def _lazy_load_hook(self, state_dict, prefix):
        """Materialise each uninitialized tensor that ``state_dict`` holds a value for."""
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param):
                value = state_dict[key]
                if not is_lazy(value):
                    with no_grad():
                        param.materialize(tuple(value.shape))

    def initialize_parameters(self, *args, **kwargs):
        """Materialise and initialise the parameters from the input batch's sizes."""
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {type(self).__name__}"
        )

    def has_uninitialized_params(self) -> bool:
        """True while a parameter or buffer is still uninitialized."""
        return any(
            is_lazy(t) for t in itertools.chain(self._parameters.values(), self._buffers.values())
        )

    def _infer_parameters(self, module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        del module._initialize_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError(
            "Modules with uninitialized parameters can't be used with `DataParallel`. "
            "Run a dummy forward pass to correctly initialize the modules"
        )


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose ``in_features`` is the last size of its first input.

    >>> import tapegrad as tg
    >>> m = tg.nn.LazyLinear(2)
    >>> m
    LazyLinear(in_features=0, out_features=2, bias=True)
    >>> m(tg.ones(4, 3)).shape, type(m).__name__, tuple(m.weight.shape)
    (tapegrad.Size([4, 2]), 'Linear', (2, 3))
    """

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)  # no bias yet: it would be replaced at once
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvXdMixin(LazyModuleMixin):
    """The lazy convolutions: ``in_channels`` from the input's channel dimension."""

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self._transposed:
                shape = (self.in_channels, self.out_channels // self.groups)
            else:
                shape = (self.out_channels, self.in_channels // self.groups)
            self.weight.materialize(shape + tuple(self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input):
        n = self._n + 1  # channels and spatial dimensions
        if input.dim() not in (n, n + 1):
            raise RuntimeError(
                f"Expected {n}D (unbatched) or {n + 1}D (batched) input to "
                f"{type(self).__name__}, but got input of size: {input.shape}"
            )
        return input.shape[1] if input.dim() == n + 1 else input.shape[0]

    def _lazy_parameters(self, out_channels, bias, device, dtype):
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)


class _LazyConv(_LazyConvXdMixin):
    def __init__(
        self,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        super().__init__(
            0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode,
            device, dtype,
        )  # fmt: skip
        self._lazy_parameters(out_channels, bias, device, dtype)


class _LazyConvTranspose(_LazyConvXdMixin):
    def __init__(
        self,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        super().__init__(
            0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
            padding_mode, device, dtype,
        )  # fmt: skip
        self._lazy_parameters(out_channels, bias, device, dtype)


class _LazyNormBase(LazyModuleMixin):
    """The lazy batch and instance norms: ``num_features`` is the input's ``shape[1]``."""

    def __init__(
        self,
        eps=1e-5,
        momentum=0.1,
        affine=True,
        track_running_stats=True,
        device=None,
        dtype=None,
        *,
        bias=True,
    ):
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        self.has_bias = affine and bias
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = Tensor._wrap(np.zeros((), np.int64))

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            if self.affine:
                self.weight.materialize((self.num_features,))
                if self.bias is not None:
                    self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


# name -> (lazy base, eager base, class to become); one row per class
_CLASSES = {
    "LazyConv1d": (_LazyConv, Conv1d, Conv1d),
    "LazyConv2d": (_LazyConv, Conv2d, Conv2d),
    "LazyConv3d": (_LazyConv, Conv3d, Conv3d),
    "LazyConvTranspose1d": (_LazyConvTranspose, ConvTranspose1d, ConvTranspose1d),
    "LazyConvTranspose2d": (_LazyConvTranspose, ConvTranspose2d, ConvTranspose2d),
    "LazyConvTranspose3d": (_LazyConvTranspose, ConvTranspose3d, ConvTranspose3d),
    # as torch, a lazy norm is no BatchNorm1d until its first forward: it takes the shared
    # base and the eager class's input check
    "LazyBatchNorm1d": (_LazyNormBase, _BatchNorm, BatchNorm1d),
    "LazyBatchNorm2d": (_LazyNormBase, _BatchNorm, BatchNorm2d),
    "LazyBatchNorm3d": (_LazyNormBase, _BatchNorm, BatchNorm3d),
    "LazyInstanceNorm1d": (_LazyNormBase, _InstanceNorm, InstanceNorm1d),
    "LazyInstanceNorm2d": (_LazyNormBase, _InstanceNorm, InstanceNorm2d),
    "LazyInstanceNorm3d": (_LazyNormBase, _InstanceNorm, InstanceNorm3d),
}
_COPIED = ("_expected_dims", "_batched_dims")  # the eager class's input-rank checks

for _name, (_lazy, _eager, _become) in _CLASSES.items():
    _attrs = {k: getattr(_become, k) for k in _COPIED if hasattr(_become, k)}
    _attrs.update(
        cls_to_become=_become,
        __module__=__name__,
        __qualname__=_name,
        __doc__=f"A {_become.__name__} whose input size is inferred at its first forward.",
    )
    globals()[_name] = type(_name, (_lazy, _eager), _attrs)
    __all__.append(_name)
del _name, _lazy, _eager, _become, _attrs
