"""Padding layers: ``ConstantPad``, ``ZeroPad``, ``ReflectionPad``, ``ReplicationPad`` and
``CircularPad`` in 1, 2 and 3 dims, each ``F.pad`` with a fixed padding and mode, with
torch's arguments, attributes (``padding`` as a tuple of 2N ints, ``value``) and reprs.

>>> import tapegrad as tg
>>> tg.nn.ReflectionPad1d(2)(tg.arange(4.0).reshape(1, 1, 4))
tensor([[[2., 1., 0., 1., 2., 3., 2., 1.]]])
"""

from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = [
    f"{kind}Pad{n}d"
    for kind in ("Constant", "Zero", "Reflection", "Replication", "Circular")
    for n in (1, 2, 3)
]


def _widths(padding, n):
    """torch's ``_ntuple(2n)``: an int for every side, else the widths as given (a wrong
    count fails in ``F.pad``, as in torch)."""
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    return tuple(padding)


class _PadNd(Module):
    mode = "constant"
    dims = 1

    def __init__(self, padding):
        super().__init__()
        self.padding = _widths(padding, self.dims)

    def forward(self, input):
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class _CircularPadNd(_PadNd):
    mode = "circular"

    def forward(self, input):
        ndim = input.ndim
        if ndim not in (self.dims + 1, self.dims + 2):  # torch's check and message
            raise ValueError(
                f"expected {self.dims + 1}D or {self.dims + 2}D input (got {ndim}D input)"
            )
        return F.pad(input, self.padding, "circular")


class _ReflectionPadNd(_PadNd):
    mode = "reflect"


class _ReplicationPadNd(_PadNd):
    mode = "replicate"


def _make(base, kind, n):
    doc = (
        f"``F.pad`` of the last {n} dim(s) with mode {base.mode!r}, as ``torch.nn.{kind}Pad{n}d``."
    )
    return type(f"{kind}Pad{n}d", (base,), {"dims": n, "__doc__": doc, "__module__": __name__})


_BASES = {
    "Constant": _ConstantPadNd,
    "Zero": _ZeroPadNd,
    "Reflection": _ReflectionPadNd,
    "Replication": _ReplicationPadNd,
    "Circular": _CircularPadNd,
}
for _kind, _base in _BASES.items():
    for _n in (1, 2, 3):
        globals()[f"{_kind}Pad{_n}d"] = _make(_base, _kind, _n)
del _kind, _base, _n
