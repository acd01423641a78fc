"""The rest of torch's activation modules: ELU … Softmax2d, PReLU (a learnable slope)."""

from __future__ import annotations

from . import _activations as A
from . import functional as F
from . import init
from .linear import empty_parameter
from .module import Module

__all__ = [
    "ELU",
    "SELU",
    "CELU",
    "LeakyReLU",
    "Hardtanh",
    "ReLU6",
    "Hardsigmoid",
    "Hardswish",
    "Mish",
    "Softsign",
    "Softshrink",
    "Hardshrink",
    "Tanhshrink",
    "Threshold",
    "LogSigmoid",
    "GLU",
    "Softmin",
    "Softmax2d",
    "PReLU",
    "RReLU",
]


def _inplace(inplace, sep=", "):
    return f"{sep}inplace=True" if inplace else ""


class _Pointwise(Module):
    """A parameterless activation; subclasses name the function and its arguments."""

    _fn = None
    _args: tuple = ()

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return self._fn(input, *(getattr(self, a) for a in self._args), inplace=self.inplace)

    def extra_repr(self):
        return _inplace(self.inplace, "")


class ELU(_Pointwise):
    """x for x > 0, α(eˣ − 1) otherwise."""

    _fn, _args = staticmethod(A.elu), ("alpha",)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(inplace)
        self.alpha = alpha

    def extra_repr(self):
        return f"alpha={self.alpha}{_inplace(self.inplace)}"


class CELU(ELU):
    """max(0, x) + min(0, α(e^(x/α) − 1))."""

    _fn = staticmethod(A.celu)


class SELU(_Pointwise):
    """Scaled ELU with PyTorch's constants."""

    _fn = staticmethod(A.selu)


class LeakyReLU(_Pointwise):
    """x for x > 0, ``negative_slope``·x otherwise."""

    _fn, _args = staticmethod(A.leaky_relu), ("negative_slope",)

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__(inplace)
        self.negative_slope = negative_slope

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}{_inplace(self.inplace)}"


class Hardtanh(_Pointwise):
    """x clipped to [min_val, max_val]."""

    _fn, _args = staticmethod(A.hardtanh), ("min_val", "max_val")

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__(inplace)
        if max_val <= min_val:  # torch's module check (F.hardtanh: ValueError for > only)
            raise AssertionError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val = min_val
        self.max_val = max_val

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace(self.inplace)}"


class ReLU6(Hardtanh):
    """min(max(0, x), 6)."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace(self.inplace, "")


class Hardsigmoid(_Pointwise):
    """relu6(x + 3) / 6."""

    _fn = staticmethod(A.hardsigmoid)

    def extra_repr(self):
        return ""  # torch's prints no ``inplace``


class Hardswish(_Pointwise):
    """x · relu6(x + 3) / 6."""

    _fn = staticmethod(A.hardswish)

    def extra_repr(self):
        return ""  # torch's prints no ``inplace``


class Mish(_Pointwise):
    """x · tanh(softplus(x))."""

    _fn = staticmethod(A.mish)


class _NoInplace(_Pointwise):
    def __init__(self):
        super().__init__(False)

    def forward(self, input):
        return self._fn(input, *(getattr(self, a) for a in self._args))


class Softsign(_NoInplace):
    """x / (1 + |x|)."""

    _fn = staticmethod(A.softsign)


class Tanhshrink(_NoInplace):
    """x − tanh x."""

    _fn = staticmethod(A.tanhshrink)


class LogSigmoid(_NoInplace):
    """log σ(x)."""

    _fn = staticmethod(A.logsigmoid)


class Softshrink(_NoInplace):
    """x − λ above λ, x + λ below −λ, 0 between."""

    _fn, _args = staticmethod(A.softshrink), ("lambd",)

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def extra_repr(self):
        return str(self.lambd)


class Hardshrink(Softshrink):
    """x where |x| > λ, else 0."""

    _fn = staticmethod(A.hardshrink)


class Threshold(_Pointwise):
    """x where x > threshold, else ``value``."""

    _fn, _args = staticmethod(A.threshold), ("threshold", "value")

    def __init__(self, threshold, value, inplace=False):
        super().__init__(inplace)
        self.threshold = threshold
        self.value = value

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}{_inplace(self.inplace)}"


class GLU(Module):
    """a ⊙ σ(b) for the two halves of the input along ``dim``."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return A.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmin(Module):
    """softmax(−x) along ``dim``."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return A.softmin(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) input."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3)


class PReLU(Module):
    """x for x > 0, a·x otherwise, with a learnable ``weight`` (one or one per channel)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = empty_parameter((num_parameters,), dtype, device)
        self.reset_parameters()

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return A.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomised leaky relu: slope ~ U(lower, upper) in training, the mean slope in eval."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        return A.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}{_inplace(self.inplace)}"
