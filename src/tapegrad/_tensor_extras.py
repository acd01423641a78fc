"""Tensor methods plain PyTorch programs call around the math: ``data_ptr``,
``untyped_storage``/``storage``, ``is_neg``, ``is_shared``, ``as_subclass``, the Python
callables ``apply_``/``map_``/``map2_`` (CPU-only in torch too), and the DLPack protocol
(``__dlpack__``, ``__dlpack_device__``) that ``torch.from_dlpack``/``np.from_dlpack`` use.
"""

from __future__ import annotations

import numpy as np

from . import _warn
from .grad_mode import no_grad
from .ops.strided import storage_of
from .tensor import Tensor

__all__ = ["UntypedStorage", "TypedStorage", "is_storage"]


def data_ptr(self) -> int:
    """The address of the first element (0 for an empty tensor, as torch)."""
    a = self._data
    if a.size == 0:
        return 0
    return a.data.ptr if hasattr(a, "__cuda_array_interface__") else a.ctypes.data


def is_neg(self) -> bool:
    """False: tapegrad has no lazy negation bit (a negation is computed at once)."""
    return False


def is_shared(self) -> bool:
    """False: tensors live in private process memory (``share_memory_`` is a no-op)."""
    return False


def as_subclass(self, cls):
    """A ``cls`` instance sharing ``self``'s data, attached to the graph (an alias of
    ``self``: gradients flow back, in-place writes show in both).

    Raises:
        TypeError: ``cls`` is not a subclass of Tensor.
    """
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(
            "Creating a Tensor subclass from a class that does not inherit from Tensor is "
            "not possible. Make sure your class inherits from Tensor."
        )
    alias = self.view_as(self)
    if cls is Tensor:
        return alias
    out = object.__new__(cls)
    for slot in Tensor.__slots__:  # the alias's state, moved to an instance of cls
        if slot != "__weakref__" and hasattr(alias, slot):
            setattr(out, slot, getattr(alias, slot))
    return out


def _python_inplace(self, op, fn, others):
    if self.requires_grad:
        raise RuntimeError(
            f"Can't call {op}() on Variable that requires grad. Use var.detach().{op}() instead."
        )
    if any(o.requires_grad for o in others):
        raise RuntimeError(f"{op}(): the other tensors must not require grad")
    if not isinstance(self._data, np.ndarray):
        raise TypeError(f"{op}_ is only implemented on CPU tensors")
    shape = tuple(self.shape)
    cols = [np.broadcast_to(o._data, shape) if o.shape != shape else o._data for o in others]
    out = np.empty(shape, dtype=self.dtype)
    for idx in np.ndindex(*shape):  # Python's callable per element, as torch's
        out[idx] = fn(self._data[idx].item(), *(c[idx].item() for c in cols))
    with no_grad():
        self.copy_(Tensor._wrap(out))
    return self


def _broadcastable(op, self, *others):
    names = ("'other'",) if len(others) == 1 else ("argument 'x'", "argument 'y'")
    for name, o in zip(names, others):
        if o.dtype != self.dtype:
            raise TypeError(f"{op}: expected {self.type()} for {name} (got {o.type()})")
        try:
            ok = np.broadcast_shapes(tuple(o.shape), tuple(self.shape)) == tuple(self.shape)
        except ValueError:
            ok = False
        if not ok:
            raise RuntimeError(
                f"{op}(): the tensor of size {list(o.shape)} does not broadcast to self's size "
                f"{list(self.shape)}"
            )


def apply_(self, callable):  # noqa: A002 - torch's keyword
    """Replace every element ``v`` by ``callable(v)`` (a Python number), in place; slow,
    CPU-only and not differentiable, as torch's.

    Raises:
        RuntimeError: ``self`` requires grad.
    """
    return _python_inplace(self, "apply_", callable, ())


def map_(self, tensor, callable):  # noqa: A002 - torch's keyword
    """``self[i] = callable(self[i], tensor[i])`` in place, ``tensor`` broadcast to self."""
    _broadcastable("map_", self, tensor)
    return _python_inplace(self, "map_", callable, (tensor,))


def map2_(self, x, y, callable):  # noqa: A002 - torch's keyword
    """``self[i] = callable(self[i], x[i], y[i])`` in place, ``x``/``y`` broadcast to self."""
    _broadcastable("map2_", self, x, y)
    return _python_inplace(self, "map2_", callable, (x, y))


# -- storage ----------------------------------------------------------------------------------


class UntypedStorage:
    """The bytes a tensor's array views (Note [Storage of a tensor] in ops/strided.py):
    ``data_ptr()``, ``nbytes()``, ``size()``/``len``, item reads, ``tolist()``. Read-only
    here: resizing or writing a storage is not supported."""

    def __init__(self, flat):
        self._flat = flat

    def _items(self):
        return self._flat.view(np.uint8)

    def data_ptr(self) -> int:
        return int(self._flat.ctypes.data) if self._flat.size else 0

    def nbytes(self) -> int:
        return int(self._flat.nbytes)

    def size(self) -> int:
        return len(self._items())

    def __len__(self):
        return self.size()

    def element_size(self) -> int:
        return self._items().itemsize

    @property
    def device(self):
        from ._device import device  # noqa: PLC0415

        return device("cpu")

    def __getitem__(self, i):
        return self._items()[i].tolist()  # an int index: a Python number

    def tolist(self) -> list:
        return self._items().tolist()

    def __repr__(self):
        kind = type(self).__name__
        return f"{kind} of {self.size()} elements, data_ptr {self.data_ptr():#x}"


class TypedStorage(UntypedStorage):
    """A storage read as the tensor's dtype (torch's deprecated ``storage()``)."""

    def _items(self):
        return self._flat

    @property
    def dtype(self):
        return self._flat.dtype


def _storage_flat(self, op):
    a = self._data
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{op}: only CPU (NumPy) tensors have a storage here")
    flat, _ = storage_of(a)
    if a.size and not np.shares_memory(flat, a):
        raise NotImplementedError(
            f"{op}: this tensor's memory is not laid out flat (its NumPy base is "
            "non-contiguous), so tapegrad cannot show it as one storage"
        )
    return flat


def is_storage(obj) -> bool:
    """True for a storage (``x.untyped_storage()``, ``x.storage()``)."""
    return isinstance(obj, UntypedStorage)


def untyped_storage(self) -> UntypedStorage:
    """The bytes of the memory ``self`` views (shared with every view of it)."""
    return UntypedStorage(_storage_flat(self, "untyped_storage"))


def storage(self) -> TypedStorage:
    """The elements of the memory ``self`` views, as ``self.dtype`` (torch warns that
    TypedStorage is deprecated, and so does this)."""
    _warn.warn(
        "TypedStorage is deprecated. It will be removed in the future and UntypedStorage "
        "will be the only storage class. This should only matter to you if you are using "
        "storages directly.  To access UntypedStorage directly, use tensor.untyped_storage() "
        "instead of tensor.storage()"
    )
    return TypedStorage(_storage_flat(self, "storage"))


# -- DLPack ----------------------------------------------------------------------------------


def __dlpack__(self, *args, **kwargs):  # noqa: N807 - the protocol's name
    # NOTE: no refusal of tensors that require grad (torch's own rule): torch.tensor(x) and
    # torch.as_tensor(x) try __dlpack__ first and read tapegrad tensors that way (without it
    # they walked x as a sequence and failed on its 0-d items). NumPy cannot export
    # bfloat16, so torch.tensor of a bfloat16 tapegrad tensor still fails (BufferError).
    return self._data.__dlpack__(*args, **kwargs)


def __dlpack_device__(self):  # noqa: N807
    return self._data.__dlpack_device__()


for _fn in (data_ptr, is_neg, is_shared, as_subclass, apply_, map_, map2_, untyped_storage,
            storage, __dlpack__, __dlpack_device__):  # fmt: skip
    setattr(Tensor, _fn.__name__, _fn)
del _fn
Tensor.const_data_ptr = data_ptr  # torch's read-only twin; the same address here
