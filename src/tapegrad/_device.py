"""``tapegrad.device`` and ``tapegrad.Size``: the small value types of torch's namespace.

Note [device is a str]
``tapegrad.device("cpu")`` is a ``str`` subclass whose value is the device string
(``"cpu"``, ``"cuda:0"``), with torch's ``type`` and ``index`` attributes and repr.
Everything in tapegrad that took a device name (``Tensor.to``, ``Module.to``,
``device=`` of the creation functions) therefore takes a device object unchanged,
and ``Tensor.device`` can return one while old comparisons (``t.device == "cpu"``)
keep working. One difference from torch: ``tapegrad.device("cpu") == "cpu"`` is True.
"""

from __future__ import annotations

import numpy as np

__all__ = ["device", "Size"]

# The device types torch's parser accepts; only "cpu" (and "cuda" with CuPy) can hold data.
_TYPES = (
    "cpu cuda ipu xpu mkldnn opengl opencl ideep hip ve fpga maia xla lazy vulkan mps meta "
    "hpu mtia privateuseone"
).split()


class device(str):  # noqa: N801 - torch's name
    """A device, as ``torch.device``: ``device("cpu")``, ``device("cuda", 0)``, ``"cuda:0"``.

    >>> import tapegrad as tg
    >>> d = tg.device("cuda:1")
    >>> d, d.type, d.index
    (device(type='cuda', index=1), 'cuda', 1)
    >>> tg.zeros(2, device=tg.device("cpu")).device
    device(type='cpu')
    """

    def __new__(cls, type, index=None):  # noqa: A002 - torch's keyword
        if isinstance(type, device) and index is None:
            return type
        if isinstance(type, (int, np.integer)) and not isinstance(type, bool) and index is None:
            type, index = "cuda", int(type)  # torch: a bare int is a CUDA ordinal
        if not isinstance(type, str):
            raise TypeError(
                f"device() received an invalid argument {type!r} of type "
                f"{builtins_type(type).__name__}; expected a string such as 'cpu' or 'cuda:0', "
                "or a device"
            )
        kind, sep, ordinal = type.partition(":")
        if sep:
            if index is not None:
                raise RuntimeError(
                    f"type (string) must not include an index because index was passed "
                    f"explicitly: {type}"
                )
            if not ordinal.isdigit():
                raise RuntimeError(f"Invalid device string: {type!r}")
            index = int(ordinal)
        if kind not in _TYPES:
            raise RuntimeError(
                f"Expected one of {', '.join(_TYPES)} device type at start of device string: {type}"
            )
        if index is not None and (not isinstance(index, (int, np.integer)) or index < 0):
            raise RuntimeError(f"Device index must not be negative, got {index!r}")
        self = super().__new__(cls, kind if index is None else f"{kind}:{int(index)}")
        self.type = kind
        self.index = None if index is None else int(index)
        return self

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return (device, (self.type, self.index))


builtins_type = type


class Size(tuple):
    """A tensor shape, as ``torch.Size``: a tuple of ints (``Tensor.shape`` gives plain tuples,
    which compare equal).

    >>> import tapegrad as tg
    >>> s = tg.Size([2, 3])
    >>> s, s.numel(), s == (2, 3), s[1:]
    (tapegrad.Size([2, 3]), 6, True, tapegrad.Size([3]))
    """

    __slots__ = ()

    def __new__(cls, sizes=()):
        sizes = tuple(sizes)
        for n in sizes:
            if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
                raise TypeError(
                    f"Size: expected a sequence of ints, got an element of type "
                    f"{builtins_type(n).__name__}"
                )
        return super().__new__(cls, (int(n) for n in sizes))

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, key):
        out = super().__getitem__(key)
        return Size(out) if isinstance(key, slice) else out

    def __repr__(self) -> str:
        return f"tapegrad.Size({list(self)})"

    def __reduce__(self):
        return (Size, (tuple(self),))


class TensorShape(Size):
    """The Size that ``Tensor.shape`` / ``size()`` return: indexing is tuple's own C
    method, since a Python-level ``__getitem__`` costs about 170 ns per ``x.shape[0]``
    (four times the read), and library code indexes shapes everywhere. The price: a
    slice of it is a plain tuple, where torch's is a Size (``tg.Size(...)[1:]`` is one)."""

    __slots__ = ()
    __getitem__ = tuple.__getitem__
