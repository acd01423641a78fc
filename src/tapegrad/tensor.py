"""The Tensor: an array, a gradient slot, and the Node that produced it.

Ops are not defined here: each ops module binds its functions to Tensor as
methods and operators (see ``tapegrad/ops/_registry.py``), so this module stays
the data structure and its bookkeeping.
"""

from __future__ import annotations

import sys

import numpy as np

from . import _backend, _dtypes, _tensor_repr
from ._device import TensorShape, device
from .grad_mode import STATE

_Opmath = _dtypes.Opmath

_DEVICES: dict = {}

# Set by autograd.graph: called when a complex leaf starts requiring grad, so that ops
# check their inputs for complex tensors from then on (Note [Complex autograd guard]).
COMPLEX_GRAD_HOOK: list = [lambda: None]

__all__ = ["Tensor", "VersionCounter"]


class VersionCounter:
    """Counts in-place modifications of a tensor's memory; shared by views of one base.

    ``where`` remembers the (file, line, op) of the last in-place modification
    so that a stale saved tensor can be reported with the line that changed it.
    """

    __slots__ = ("value", "where")

    def __init__(self):
        self.value = 0
        self.where = None

    def bump(self, op_name: str, depth: int = 2) -> None:
        """Record one in-place modification made by ``op_name``, called ``depth`` frames up."""
        self.value += 1
        frame = sys._getframe(depth)
        # Walk out of tapegrad's own frames so the location is the user's line
        # (_is_internal inlined: this runs at every in-place op).
        while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
            frame = frame.f_back
        if frame is not None:
            self.where = (frame.f_code.co_filename, frame.f_lineno, op_name)
        else:
            self.where = ("<unknown>", 0, op_name)


_PACKAGE_DIR = __file__.rsplit("/", 1)[0].rsplit("\\", 1)[0]


def _is_internal(filename: str) -> bool:
    return filename.startswith(_PACKAGE_DIR)


def _as_array(data, dtype, device):
    """Convert user data to an array; Python floats take the default float dtype.

    Raises, as PyTorch does: RuntimeError for data of no numeric type (None, a dict,
    a set, an object), TypeError for strings and bytes and for NumPy arrays of
    object, string or datetime dtype, ValueError for ragged nested sequences.
    """
    try:
        array = _convert(data, dtype, device)
    except (ValueError, TypeError) as exc:
        _explain_bad_data(data)
        raise type(exc)(f"tensor(): cannot convert the data: {exc}") from None
    if array.dtype.kind not in _NUMERIC_KINDS and not isinstance(data, np.ndarray):
        _explain_bad_data(data)
    check_numeric(array, "tensor()")
    return array


_NUMERIC_KINDS = frozenset("biufc")


def check_numeric(array, op: str) -> None:
    """Raise TypeError unless ``array`` has a bool, integer, float or complex dtype."""
    if array.dtype.kind not in _NUMERIC_KINDS and not _dtypes.is_floating(array.dtype):
        raise TypeError(
            f"{op}: can't convert np.ndarray of type {array.dtype}. The only supported types "
            "are: bool, integer, floating point and complex dtypes"
        )


def _explain_bad_data(data) -> None:
    """Raise the error PyTorch gives for the first non-numeric leaf or ragged level."""
    stack, seen = [(data, 0)], 0
    while stack and seen < 100_000:
        x, depth = stack.pop()
        seen += 1
        if isinstance(x, (str, bytes)):
            raise TypeError(f"tensor(): invalid data type '{type(x).__name__}'")
        if isinstance(x, (list, tuple)):
            lengths = {len(v) if isinstance(v, (list, tuple)) else None for v in x}
            if len(lengths) > 1 and None in lengths:
                raise TypeError(
                    f"tensor(): ragged nested sequence: at dim {depth + 1} found both scalars "
                    "and sequences"
                )
            if len(lengths) > 1:
                raise ValueError(
                    f"tensor(): ragged nested sequence: at dim {depth + 1} found lengths "
                    f"{sorted(lengths)}; every sequence at one depth must have the same length"
                )
            stack.extend((v, depth + 1) for v in x)
        elif x is None or isinstance(x, (dict, set, frozenset)) or not _is_number(x):
            raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")


def _is_number(x) -> bool:
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return not isinstance(x, (np.str_, np.bytes_, np.datetime64, np.timedelta64, np.void))
    return isinstance(x, (Tensor, np.ndarray)) or hasattr(x, "__array__")


def _convert(data, dtype, device):
    if isinstance(data, Tensor):
        data = data._data
    xp = _backend.namespace_for_device(device)
    if dtype is not None and dtype.itemsize == 1 and dtype.kind in "fV" and xp is np:
        if getattr(data, "dtype", None) != dtype:
            from ._float8 import to_float8  # noqa: PLC0415 - Note [float8 as torch]

            return to_float8(np.asarray(data, dtype=np.float64), dtype)
    if xp is np and isinstance(data, np.ndarray):
        # Copy with ndarray methods, which keep the graph cache's tracing subclass
        # (tapegrad.jit) and so its record of where the values came from.
        if dtype is None or dtype == data.dtype:
            return data.copy()
        return data.astype(dtype)
    if dtype is None and not hasattr(data, "dtype"):
        array = xp.asarray(data)
        if array.dtype.kind == "f":
            array = array.astype(_dtypes.get_default_dtype(), copy=False)
        elif array.dtype.kind == "i":
            array = array.astype(_dtypes.int64, copy=False)
        elif array.dtype.kind == "c":
            array = array.astype(_dtypes.get_default_complex_dtype(), copy=False)
        return xp.array(array, copy=True) if array is data else array
    return xp.array(data, dtype=dtype, copy=True)


class Tensor:
    """An n-dimensional array that can record the operations applied to it.

    Build tensors with ``tg.tensor(data)`` (which infers the dtype). The constructor is
    PyTorch's legacy one (``tapegrad.legacy.new_array``): ``Tensor(3, 4)`` is a zero
    tensor of that size, ``Tensor([1, 2])`` float data of the default dtype, ``Tensor()``
    an empty one; a Tensor or NumPy array of that dtype is shared, not copied.

    Args:
        *args: sizes (integers), or one sequence/array/Tensor of data.
        dtype: tapegrad extension: the dtype instead of the default float dtype.
        requires_grad: tapegrad extension: record operations on this tensor.
        device: ``"cpu"`` (NumPy) or ``"cuda"`` (CuPy, when installed).

    >>> import tapegrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad
    tensor([2., 4.])
    """

    __slots__ = (
        "_data",
        "_grad",
        "grad_fn",
        "_rg",
        "_output_nr",
        "_vc_",
        "_accumulator",
        "_hooks",
        "_post_hooks",
        "_retains_grad",
        "_base",
        "_size",  # the shape as a Size, made on first access (Note [Size cache])
        "_inference_",  # True for an inference tensor, else unset (Note [Inference tensors])
        "__weakref__",
    )

    # Let NumPy defer to our reflected operators (ndarray + Tensor -> Tensor.__radd__).
    __array_priority__ = 1000

    def __init__(self, *args, dtype=None, requires_grad=False, device="cpu"):
        from .legacy import new_array  # noqa: PLC0415 - the legacy types sit above Tensor

        _init(self, new_array(args, _dtypes.to_dtype(dtype), str(device), "Tensor"))
        if requires_grad:
            self.requires_grad_(True)

    # -- construction used by ops: no validation, no copy ---------------------------------

    @staticmethod
    def _wrap(array) -> Tensor:
        """A new leaf around ``array`` (not copied). The fast path for op results."""
        t = _new(Tensor)
        if type(array) is not np.ndarray:
            # ndarray subclasses are kept: tapegrad.jit records through one.
            if type(array) is _Opmath:  # Note [bfloat16 opmath] in _dtypes.py
                array = _dtypes.from_opmath(array)
            elif not isinstance(array, np.ndarray):
                if not hasattr(array, "__cuda_array_interface__"):
                    array = np.asarray(array)
        elif (retrace := RETRACE[0]) is not None:  # read once: another thread may reset it
            array = retrace(array)
        # Inlined _init: this runs once per op result.
        t._data = array
        t._grad = None
        t.grad_fn = None
        t._rg = False
        t._output_nr = 0
        t._vc_ = None
        t._accumulator = None
        t._hooks = None
        t._post_hooks = None
        t._retains_grad = False
        t._base = None
        t._size = None
        return t

    # -- basic attributes --------------------------------------------------------------------

    @property
    def data(self) -> Tensor:
        """A Tensor sharing this tensor's memory, detached from the graph (as in PyTorch).

        Changes made through it (``p.data.add_(g)``) are not recorded and do not bump this
        tensor's version counter. The raw array is ``numpy()`` (``_data`` inside tapegrad).
        """
        return Tensor._wrap(self._data)

    @data.setter
    def data(self, value) -> None:
        _set_data(self, value)

    @property
    def shape(self) -> TensorShape:
        """The shape as a :class:`tapegrad.Size` (a tuple of ints, as ``torch.Size``).

        Note [Size cache]
        A Size is made from ``_data.shape`` on first access and kept in ``_size``: later
        reads cost what reading a plain tuple did. Every assignment to ``_data`` (which
        is how a tensor's shape changes: set_, .data =, resize_, in-place view ops, the
        graph cache's tracing) resets ``_size`` to None, so the next read remakes it.
        Measured (benchmarks in the commit): 53 ns a read, against 75 ns for NumPy's
        plain tuple; ``x.shape[0]`` stays a C-level tuple index (see TensorShape).
        """
        try:
            size = self._size
        except AttributeError:  # made without _init/_wrap (a subclass's own __new__)
            size = None
        if size is None:
            size = self._size = _new_tuple(TensorShape, self._data.shape)
        return size

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    @property
    def device(self) -> device:
        """Where the data lives: ``device(type='cpu')`` (a str subclass, Note [device is a str])."""
        name = _backend.device_of(self._data)
        return _DEVICES.get(name) or _DEVICES.setdefault(name, device(name))

    def size(self, dim: int | None = None):
        """The shape (a :class:`tapegrad.Size`), or the length of dimension ``dim``."""
        if dim is None:
            size = self._size  # Note [Size cache]: the read of ``shape``, inlined
            if size is None:
                size = self._size = _new_tuple(TensorShape, self._data.shape)
            return size
        return self._data.shape[_check_dim(dim, self._data.ndim, "size")]

    def numel(self) -> int:
        return int(self._data.size)

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    @property
    def grad(self):
        """The accumulated gradient (a Tensor of this shape and dtype), or None."""
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            _check_grad(self, value)
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def is_leaf(self) -> bool:
        """True for tensors made by the user rather than by an op that recorded a graph."""
        return self.grad_fn is None

    @property
    def requires_grad(self) -> bool:
        return self._rg

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set whether this leaf records operations; returns self.

        Raises:
            RuntimeError: on a non-leaf, or when asking an integer/bool tensor to require grad.
        """
        requires_grad = bool(requires_grad)
        if self.grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "requires_grad can only be turned off on leaf tensors; "
                    "use .detach() to get a tensor that does not require grad"
                )
            return self
        if requires_grad and not _dtypes.is_floating(self._data.dtype):
            if self._data.dtype.kind == "c":  # Note [Complex autograd guard]
                COMPLEX_GRAD_HOOK[0]()
                self._rg = True
                return self
            raise RuntimeError(
                f"only floating point tensors can require gradients, got dtype {self._data.dtype}"
            )
        if requires_grad and getattr(self, "_inference_", False) and not STATE.inference:
            raise RuntimeError(  # Note [Inference tensors] in _inference_tensors.py
                "Setting requires_grad=True on inference tensor outside InferenceMode is not "
                "allowed."
            )
        self._rg = requires_grad
        return self

    @property
    def _vc(self) -> VersionCounter:
        """The version counter, made on first use (most op results never need one)."""
        vc = self._vc_
        if vc is None:
            vc = self._vc_ = VersionCounter()
        return vc

    @_vc.setter
    def _vc(self, counter: VersionCounter) -> None:
        self._vc_ = counter

    @property
    def _version(self) -> int:
        return self._vc.value

    # -- conversion ----------------------------------------------------------------------

    def numpy(self) -> np.ndarray:
        """The underlying NumPy array (shared, not copied).

        Raises:
            RuntimeError: if the tensor requires grad (call ``.detach().numpy()``).
        """
        if self._rg:
            raise RuntimeError(
                "can't call numpy() on a tensor that requires grad; use tensor.detach().numpy()"
            )
        _notify_read(self, "numpy")
        data = self._data
        if _backend.device_of(data) != "cpu":
            return _host(data)
        return data

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise ValueError(
                f"item() needs a tensor with one element, got shape {tuple(self._data.shape)}"
            )
        _notify_read(self, "item")
        if type(self._data) is _backend.MetaArray:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return self._data.item()

    def tolist(self):
        _notify_read(self, "tolist")
        if type(self._data) is _backend.MetaArray:
            _host(self._data)  # no values: torch's NotImplementedError
        return self._data.tolist()

    def __array__(self, dtype=None, copy=None):
        _notify_read(self, "__array__")
        data = self._data if _backend.device_of(self._data) == "cpu" else _host(self._data)
        if dtype is not None and data.dtype != dtype:
            return data.astype(dtype)
        return data

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(
                f"the truth value of a tensor with {self._data.size} elements is ambiguous"
            )
        _notify_read(self, "bool")
        return bool(self._data)

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    __hash__ = object.__hash__

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        for i in range(self._data.shape[0]):
            yield self[i]

    def __repr__(self) -> str:
        """PyTorch's layout (see _tensor_repr.py); ``tapegrad.`` where torch says ``torch.``."""
        opts = PRINT_OPTIONS
        prefix = "tensor("
        indent = len(prefix)
        suffixes = []
        if self.device != "cpu":
            suffixes.append(f"device='{self.device}'")
        if self.device == "meta":  # no values: torch's ``tensor(..., size=...)``
            suffixes.append(f"size={tuple(self._data.shape)}")
            if self._data.dtype != _dtypes.get_default_dtype():
                suffixes.append(f"dtype=tapegrad.{self._data.dtype}")
            if self._rg:
                suffixes.append("requires_grad=True")
            return _tensor_repr.add_suffixes(prefix + "...", suffixes, indent, opts["linewidth"])
        data = self._data if _backend.device_of(self._data) == "cpu" else self._data.get()
        default = data.dtype in (
            _dtypes.get_default_dtype(), _dtypes.get_default_complex_dtype(), _dtypes.int64,
            _dtypes.bool_,
        )  # fmt: skip
        if data.size == 0:
            if data.ndim != 1:
                suffixes.append(f"size={tuple(data.shape)}")
            if data.dtype != _dtypes.get_default_dtype():
                suffixes.append(f"dtype=tapegrad.{data.dtype}")
            body = "[]"
        else:
            if not default:
                suffixes.append(f"dtype=tapegrad.{data.dtype}")
            body = _repr_values(data, indent, opts)
        if self.grad_fn is not None:
            suffixes.append(f"grad_fn=<{self.grad_fn.name()}>")
        elif self._rg:
            suffixes.append("requires_grad=True")
        return _tensor_repr.add_suffixes(prefix + body, suffixes, indent, opts["linewidth"])

    def __format__(self, format_spec: str) -> str:
        """``f"{loss:.4f}"``: a 0-d tensor formats as its Python number, as in torch."""
        if self._data.ndim == 0:
            return self.item().__format__(format_spec)
        if format_spec:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return str(self)

    # -- graph bookkeeping ---------------------------------------------------------------

    def detach(self) -> Tensor:
        """A new leaf sharing this tensor's data (and version counter), outside any graph."""
        t = Tensor._wrap(self._data)
        t._vc = self._vc
        return t

    def detach_(self) -> Tensor:
        """Make this tensor a leaf that does not require grad, in place."""
        self.grad_fn = None
        self._rg = False
        self._output_nr = 0
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into the ``.grad`` of every leaf that requires grad.

        Args:
            gradient: d(loss)/d(self), same shape as self; may be omitted for one element.
            retain_graph: keep saved arrays so backward can run again (default: create_graph).
            create_graph: record the backward pass, so gradients can be differentiated again.
            inputs: accumulate only into these tensors.
        """
        engine = _ENGINE[0]  # engine sits above tensor: imported at the first call
        if engine is None:
            from .autograd import engine  # noqa: PLC0415 - 1.5 us per call, so cached

            _ENGINE[0] = engine
        engine.backward(
            (self,),
            None if gradient is None else (gradient,),
            retain_graph=retain_graph,
            create_graph=create_graph,
            inputs=inputs,
        )

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; a non-None return
        replaces the gradient. Returns a handle whose ``remove()`` unregisters it."""
        from .autograd import graph  # noqa: PLC0415

        return graph.register_tensor_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` after a gradient was accumulated into this leaf's ``.grad``."""
        from .autograd import graph  # noqa: PLC0415

        return graph.register_post_accumulate_hook(self, hook)

    def retain_grad(self) -> None:
        """Make a non-leaf tensor keep its gradient in ``.grad`` during backward."""
        from .autograd import graph  # noqa: PLC0415

        graph.retain_grad(self)

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    # -- device and dtype ------------------------------------------------------------------

    def to(
        self, *args, dtype=None, device=None, copy=False, non_blocking=False, memory_format=None
    ) -> Tensor:
        """Return a tensor with the given dtype and/or device (self when nothing changes).

        Accepts ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other_tensor)`` and
        keywords; ``non_blocking`` and ``memory_format`` are accepted (NumPy copies are
        synchronous and C-ordered). A dtype change is differentiable.
        """
        if len(args) == 1 and isinstance(args[0], Tensor):
            args = (args[0].device, args[0].dtype)
        for arg in args:
            if isinstance(arg, Tensor):
                dtype, device = arg._data.dtype, arg.device
            elif isinstance(arg, str):
                device = arg
            elif isinstance(arg, bool):  # to(dtype, non_blocking, copy) positionally
                continue
            else:
                dtype = arg
        result = self
        if device is not None and str(device) != self.device:
            result = _to_device(result, str(device))
        if dtype is not None:
            dtype = _dtypes.to_dtype(dtype)
            if dtype != result._data.dtype:
                result = result._cast(dtype)
        if copy and result is self:
            result = self.clone()
        return result

    def float(self, memory_format=None) -> Tensor:
        return self.to(_dtypes.float32)

    def double(self, memory_format=None) -> Tensor:
        return self.to(_dtypes.float64)

    def long(self, memory_format=None) -> Tensor:
        return self.to(_dtypes.int64)

    def int(self, memory_format=None) -> Tensor:
        return self.to(_dtypes.int32)

    def bool(self, memory_format=None) -> Tensor:
        return self.to(_dtypes.bool_)

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def cuda(self) -> Tensor:
        return self.to("cuda")

    def is_floating_point(self) -> bool:
        return _dtypes.is_floating(self._data.dtype)

    def is_contiguous(self) -> bool:
        return bool(self._data.flags.c_contiguous)


_new = object.__new__
_new_tuple = tuple.__new__  # Size(shape) without its element checks (NumPy gives ints)


def _check_grad(t: Tensor, value) -> None:
    """What PyTorch checks when ``.grad`` is assigned: a Tensor of the same size, dtype, device."""
    if not isinstance(value, Tensor):
        raise TypeError(
            f"assigned grad expected to be a Tensor or None but got grad of type "
            f"{type(value).__name__}"
        )
    sparse = getattr(value, "is_sparse", False)  # a sparse COO gradient (optim.SparseAdam)
    vshape = tuple(value.shape) if sparse else value._data.shape
    vdtype = value._values()._data.dtype if sparse else value._data.dtype
    if vshape != t._data.shape:
        raise RuntimeError(
            f"attempting to assign a gradient of size '{list(vshape)}' to a tensor "
            f"of size '{list(t._data.shape)}'. Please ensure that the gradient and the tensor "
            "are the same size"
        )
    if vdtype != t._data.dtype:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{vdtype}' to a tensor "
            f"with dtype '{t._data.dtype}'. The gradient must match the tensor's dtype"
        )
    if value.device != t.device:
        raise RuntimeError(
            f"attempting to assign a gradient located on device '{value.device}' to a tensor "
            f"on device '{t.device}'"
        )


def _host(data):
    """A CuPy array's values on the host; a meta array has none (torch's error)."""
    if type(data) is _backend.MetaArray:
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    return data.get()


def _repr_values(data, indent, opts) -> str:
    if data.dtype.kind != "c":
        return _tensor_repr.tensor_str(data, indent, opts)
    fmt = {}  # complex: NumPy's layout
    if opts["sci_mode"] is not None:
        spec = f".{opts['precision']}{'e' if opts['sci_mode'] else 'f'}"
        fmt = {"formatter": {"complex_kind": lambda v: format(v, spec)}}
    return np.array2string(
        data, separator=", ", prefix="tensor(", precision=opts["precision"],
        threshold=opts["threshold"], edgeitems=opts["edgeitems"],
        max_line_width=opts["linewidth"], suppress_small=False, **fmt,
    )  # fmt: skip


def _init(t: Tensor, array) -> None:
    t._data = array
    t._grad = None
    t.grad_fn = None
    t._rg = False
    t._output_nr = 0
    t._vc_ = None
    t._accumulator = None
    t._hooks = None
    t._post_hooks = None
    t._retains_grad = False
    t._base = None
    t._size = None
    if INIT_MARK[0] is not None:  # a thread is in inference_mode (Note [Inference tensors])
        INIT_MARK[0](t)


# Set by tapegrad._inference_tensors while some thread is inside inference_mode.
INIT_MARK: list = [None]


def _set_data(t: Tensor, value) -> None:
    """``t.data = value`` with PyTorch's rules: ``value`` must be a Tensor, of any shape
    and dtype (only floating point or complex when ``t`` requires grad). ``t`` then
    shares ``value``'s memory and keeps its grad_fn, requires_grad, ``.grad`` and hooks;
    as in PyTorch no version counter changes, so a Node that saved ``t`` sees the new
    values."""
    if not isinstance(value, Tensor):
        raise TypeError(
            f"Variable data has to be a tensor, but got {type(value).__name__} "
            "(t.data = tapegrad.as_tensor(value) converts it)"
        )
    array = value._data
    if t._rg and array.dtype.kind not in "fc":
        raise RuntimeError(
            f"data set to a tensor that requires gradients must be floating point or complex "
            f"dtype: got {array.dtype} (shape {list(array.shape)}) for a tensor of dtype "
            f"{t._data.dtype} that requires grad"
        )
    old = t._data
    t._data = array
    t._size = None
    if old.shape != array.shape or old.dtype != array.dtype:
        # AccumulateGrad checks gradients against the shape/dtype it was made with.
        t._accumulator = None


def _check_dim(dim, ndim: int, op: str) -> int:
    """Normalise a possibly negative dimension index, or raise IndexError naming ``op``."""
    lo = -max(ndim, 1)
    hi = max(ndim, 1) - 1
    if not isinstance(dim, (int, np.integer)) or not lo <= dim <= hi:
        raise IndexError(
            f"{op}: dimension {dim!r} out of range for a tensor with {ndim} dims "
            f"(expected in [{lo}, {hi}])"
        )
    return int(dim) % max(ndim, 1)


def _to_device(t: Tensor, device: str) -> Tensor:
    if t._rg:
        raise NotImplementedError(
            "moving a tensor that requires grad between devices is not differentiable yet; "
            "move the leaves before building the graph"
        )
    if device == "meta":  # shape and dtype only
        return Tensor._wrap(_backend.meta_array(t._data.shape, t._data.dtype))
    xp = _backend.namespace_for_device(device)
    if _backend.device_of(t._data) == "meta":
        raise NotImplementedError(
            f"Cannot copy out of meta tensor; no data! (to device {device!r}: make the tensor "
            "anew there, e.g. with torch.empty_like(t, device=...))"
        )
    data = t._data.get() if hasattr(t._data, "get") else t._data
    return Tensor._wrap(xp.asarray(data))


# How __repr__ prints, set by tapegrad.set_printoptions (torch's names; NumPy's line width).
DEFAULT_PRINT_OPTIONS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80,
                         "sci_mode": None}  # fmt: skip
PRINT_OPTIONS = dict(DEFAULT_PRINT_OPTIONS)

# Note [Reads into Python]
# ``item()``, ``bool()``, ``tolist()``, ``numpy()`` and ``__array__`` move a value out of
# the tensor world. The graph cache (tapegrad.jit) must know when that happens while
# it records, so it installs a listener here; with no listener this costs one check.
READ_LISTENERS: list = []

_ENGINE: list = [None]  # tapegrad.autograd.engine, once Tensor.backward first ran

# While tapegrad.jit records, RETRACE[0] maps a plain array that is ``np.asarray`` of a
# traced array (same memory and layout) back to the traced one, so ops that call
# ``np.asarray`` on their result stay recorded. None otherwise: one check per _wrap.
RETRACE: list = [None]


def _notify_read(t: Tensor, how: str) -> None:
    if READ_LISTENERS:
        for listener in READ_LISTENERS:
            listener(t, how)
