"""UninitializedParameter and UninitializedBuffer: the tensors of a lazy module before its
first forward, as ``torch.nn.UninitializedParameter`` / ``UninitializedBuffer``.

Note [Uninitialized tensors]
An uninitialized tensor holds an empty array of its future dtype and device, and its
class shadows Tensor's ``_data`` slot with a property whose getter raises torch's
ValueError ("Attempted to use an uninitialized parameter in ..."). Every op, method and
operator reads ``_data``, so every use raises, with no check on the ordinary path: only
instances of these classes pay for the property. What torch allows (``dtype``,
``device``, ``requires_grad``, ``grad``, ``size()``, ``to``/``float``/``double``,
``data``, ``is_floating_point``...) reads the slot directly; ``shape`` raises torch's
RuntimeError. ``materialize(shape)`` stores a new empty array in the slot and assigns
``cls_to_become`` (Parameter, or Tensor for a buffer) to ``__class__``: the layouts are
identical (``__slots__ = ()`` everywhere), so the same object, already registered in
modules and optimizers, becomes an ordinary tensor. Module's state_dict keeps such
tensors undetached, its ``to`` converts their empty array, and load_state_dict
materialises them to the loaded shapes first (``LazyModuleMixin._lazy_load_hook``).
"""

from __future__ import annotations

import sys
import weakref

from .. import _dtypes
from ..grad_mode import STATE
from ..tensor import Tensor
from .parameter import Parameter

__all__ = ["UninitializedParameter", "UninitializedBuffer", "is_lazy"]

_SLOT = Tensor.__dict__["_data"]  # Tensor's own storage for the array
_SHAPE_MESSAGE = (
    "Can't access the shape of an uninitialized parameter or buffer. This error usually "
    "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
    "initialized one. Call `forward` to initialize the parameters before accessing their "
    "attributes."
)


def is_lazy(t) -> bool:
    """True for an UninitializedParameter or UninitializedBuffer."""
    return isinstance(t, UninitializedTensorMixin)


def _where(frame) -> str:
    code = frame.f_code
    name = getattr(code, "co_qualname", code.co_name)
    if name.startswith("Tensor."):
        return f"<method '{name[7:]}' of 'tapegrad.Tensor' objects>"
    return f"<function {name}>"


def _empty(shape, dtype, device):
    from ..creation import empty  # noqa: PLC0415 - creation sits beside nn, imported late

    return empty(*shape, dtype=dtype, device=device)._data


class UninitializedTensorMixin:
    """What UninitializedParameter and UninitializedBuffer share (Note [Uninitialized tensors])."""

    __slots__ = ()
    cls_to_become: type = Tensor

    @property
    def _data(self):
        raise ValueError(
            f"Attempted to use an uninitialized parameter in {_where(sys._getframe(1))}. "
            "This error happens when you are using a `LazyModule` or explicitly manipulating "
            f"`tapegrad.nn.parameter.{type(self).__name__}` objects. When using LazyModules "
            "Call `forward` with a dummy batch to initialize the parameters before calling "
            "tapegrad functions"
        )

    @_data.setter
    def _data(self, array):
        _SLOT.__set__(self, array)

    def _plain(self) -> Tensor:
        """The empty array as an ordinary tensor (what the allowed methods work on)."""
        t = Tensor._wrap(_SLOT.__get__(self))
        if self._rg:
            t.requires_grad_(True)
        return t

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Become an ordinary Parameter (or Tensor) of ``shape``, its values uninitialised,
        in this object's dtype and device unless given."""
        array = _SLOT.__get__(self)
        if device is None:
            device = self.device
        if dtype is None:
            dtype = array.dtype
        self._data = _empty(tuple(shape), _dtypes.to_dtype(dtype), device)
        self._size = None  # Note [Size cache]
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(_SHAPE_MESSAGE)

    @property
    def dtype(self):
        return _SLOT.__get__(self).dtype

    @property
    def device(self):
        return self._plain().device

    @property
    def data(self):
        return Tensor._wrap(_SLOT.__get__(self))

    def size(self, dim=None):
        return self._plain().size(dim)

    def requires_grad_(self, requires_grad=True):
        self._rg = bool(requires_grad)
        return self

    def is_floating_point(self):
        return _SLOT.__get__(self).dtype.kind == "f"

    def is_complex(self):
        return _SLOT.__get__(self).dtype.kind == "c"

    def get_device(self):
        return self._plain().get_device()

    def copy_(self, src, non_blocking=False):
        if self._rg and STATE.enabled:  # torch's leaf check comes before any shape check
            raise RuntimeError(
                "copy_: a leaf Variable that requires grad is being used in an in-place "
                "operation. Wrap it in tg.no_grad() (as optimizers do) or modify a .clone()."
            )
        self._plain().detach().copy_(src)
        return self

    def to(self, *args, **kwargs):
        return self._plain().to(*args, **kwargs)

    def half(self):
        return self._plain().half()

    def float(self):
        return self._plain().float()

    def double(self):
        return self._plain().double()

    def cpu(self):
        plain = self._plain()
        out = plain.cpu()
        return self if out is plain else out  # already there: itself, as torch

    def share_memory_(self):
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
            "initialize the parameters before calling `module.share_memory()`."
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, protocol):
        return (type(self), (self.requires_grad,))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.device, self.dtype)
        return memo[id(self)]


def _init_empty(t, requires_grad, device, dtype):
    dtype = _dtypes.to_dtype(dtype) or _dtypes.get_default_dtype()
    Tensor.__init__(t, 0, dtype=dtype, device=device if device is not None else "cpu")
    t.requires_grad_(requires_grad)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape is not known yet: a lazy module's weight before its first
    forward. Anything but its dtype, device, ``requires_grad`` and conversions raises
    (Note [Uninitialized tensors]); ``materialize(shape)`` makes it a Parameter.

    >>> import tapegrad as tg
    >>> p = tg.nn.UninitializedParameter()
    >>> p
    <UninitializedParameter>
    >>> p.materialize((2, 3))
    >>> type(p).__name__, tuple(p.shape)
    ('Parameter', (2, 3))
    """

    __slots__ = ()
    cls_to_become = Parameter

    def __init__(self, requires_grad=True, device=None, dtype=None):
        _init_empty(self, requires_grad, device, dtype)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (a lazy batch norm's running statistics);
    ``materialize(shape)`` makes it an ordinary Tensor (Note [Uninitialized tensors])."""

    __slots__ = ()
    cls_to_become = Tensor

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        _init_empty(self, requires_grad, device, dtype)
        self.persistent = persistent

    # The class keeps Tensor's layout (no __dict__, Note [Uninitialized tensors]), so the
    # flag lives in a table by id while the buffer is alive.
    @property
    def persistent(self):
        return _NON_PERSISTENT.get(id(self)) is None

    @persistent.setter
    def persistent(self, value):
        if value:
            _NON_PERSISTENT.pop(id(self), None)
        elif id(self) not in _NON_PERSISTENT:
            _NON_PERSISTENT[id(self)] = weakref.finalize(self, _NON_PERSISTENT.pop, id(self), None)


_NON_PERSISTENT: dict = {}
