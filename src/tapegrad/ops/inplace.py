"""In-place ops: add_ sub_ mul_ div_ zero_ fill_ copy_ clamp_, ``x[key] = v``, ``+= -= *= /=``.

Note [In-place ops and the graph]
Every in-place op writes into ``self._data`` (so views and other holders of the array
see the change) and bumps the shared version counter, recording the user's line.

* Nothing to record (grad mode off, or no tensor involved requires grad): a plain
  NumPy in-place call (``np.add(a, b, out=a)``) and the bump; no graph work. For
  ``add_ sub_ mul_ div_`` (an optimizer's update: 18 per step of a 3-layer MLP with
  momentum) this is tried first, before any closure is made (``fast_path`` in
  ``_binary``); anything unusual (a forward-mode tangent, read-only memory, a shape or
  casting error, ``alpha``) takes the general path, which raises in in-place terms.
* Otherwise the op is recorded as if out of place. ``old`` is an alias Tensor that
  takes over self's place in the graph (grad_fn, output_nr, requires_grad) and shares
  its data and version counter, or holds a private copy when the op's backward reads
  the old values (``mul_`` by a tensor that requires grad, ``clamp_``). The result is
  computed from ``old`` with the ordinary differentiable op, written into
  ``self._data``, and ``self`` is rebased onto the result's Node. No Node captures
  ``self`` (it changes); an operand that *is* self is replaced by ``old``.
* A leaf that requires grad may not be modified in place outside no_grad (its
  ``.grad`` would describe values it no longer holds), and nor may a view of one.
  A write through a view of a non-leaf is recorded on its root base, as PyTorch's
  CopySlices does (Note [Views and in-place ops] in ops/shape.py).
"""

from __future__ import annotations

import numpy as np

from .. import _fpquiet
from ..autograd import graph
from ..autograd.graph import mark_view
from ..grad_mode import STATE, no_grad
from ..tensor import Tensor, VersionCounter
from . import arithmetic
from ._half_alpha import scaled_add
from ._half_number import opmath_number
from ._int_scalars import fill_number, scalar_type_name, wrap_int
from ._registry import OPS, register
from .complex_writes import as_pairs, is_part, real_value
from .indexing import _torch_layout, index_put, normalize_key, take_index

__all__ = ["add_", "sub_", "mul_", "div_", "zero_", "fill_", "copy_", "clamp_", "setitem"]


_BOOL = np.dtype(bool)


def _data(x):
    return x._data if isinstance(x, Tensor) else x


def _needs_graph(self, others) -> bool:
    if not STATE.enabled:
        return False
    return self._rg or any(isinstance(o, Tensor) and o._rg for o in others)


def _check_writable(self, op):
    if not self._data.flags.writeable:
        raise RuntimeError(
            f"{op}: cannot write into this tensor of shape {list(self.shape)}: its memory is "
            "read-only (for example the result of expand() or broadcast_to(), whose elements "
            "alias each other). Call .clone() first and modify the copy."
        )


def _check_graph_rules(self, op):
    """Raise for in-place ops that cannot be recorded. Return the root base when ``self``
    is a view (of a tensor in a graph, or of one that joins the graph now because the
    value written requires grad): the write is then recorded on that base."""
    if self._rg and self.grad_fn is None:
        raise RuntimeError(
            f"{op}: a leaf Variable that requires grad is being used in an in-place "
            "operation. Wrap it in tg.no_grad() (as optimizers do) or modify a .clone()."
        )
    if self._data.dtype.kind not in "fV":  # V: bfloat16, the one void dtype a Tensor holds
        raise RuntimeError(
            f"{op}: cannot record an in-place op on a tensor of dtype {self._data.dtype} "
            "with an operand that requires grad (only float tensors carry gradients)"
        )
    base = self._base
    if base is None:
        return None
    if base._rg and base.grad_fn is None:
        raise RuntimeError(
            f"{op}: a view of a leaf Variable that requires grad is being used in an "
            "in-place operation. Wrap it in tg.no_grad() or modify a .clone()."
        )
    if not _can_rewire(base, self):
        raise RuntimeError(
            f"{op}: in-place modification of this view can't be recorded (it no longer "
            "shares memory with its base): write into the base tensor instead "
            "(base[key] = new_value) or work on a .clone() of the view."
        )
    return base


def _can_rewire(base: Tensor, view: Tensor) -> bool:
    """Whether ``view``'s elements can be located in ``base``'s memory."""
    return (base._data.dtype == view._data.dtype or is_part(base, view)) and (
        view._data.size == 0 or np.shares_memory(base._data, view._data)
    )


def _refresh_view(view: Tensor, root: Tensor):
    """graph.VIEW_REFRESH: ``view`` recorded afresh as the elements of ``root`` it reads."""
    if not root._rg or not _can_rewire(root, view):
        return None
    if is_part(root, view):
        pairs, array = as_pairs(root)
        key = _positions_in(array, view)
        fresh = take_index(pairs, key, True, "AsStridedBackward", "view")
    else:
        fresh = take_index(root, _positions_in(root._data, view), True, "AsStridedBackward", "view")
    mark_view(fresh.grad_fn, root)
    return fresh.grad_fn


graph.VIEW_REFRESH[0] = _refresh_view


def _byte_offsets(array, start: int) -> np.ndarray:
    """The byte offset of every element of ``array`` from address ``start``."""
    first = array.__array_interface__["data"][0] - start
    offsets = np.full(array.shape, first, np.intp)
    for axis, (n, stride) in enumerate(zip(array.shape, array.strides)):
        steps = np.arange(n, dtype=np.intp) * stride
        offsets += steps.reshape((n,) + (1,) * (array.ndim - axis - 1))
    return offsets


def _positions_in(base: np.ndarray, view: Tensor) -> tuple:
    """The index (an advanced key into the array ``base``) of every element of ``view``,
    found by matching memory addresses (any strides; ``base`` never overlaps itself, as
    in-place writes into expanded arrays are refused)."""
    start = base.__array_interface__["data"][0]
    base_offsets = _byte_offsets(base, start).ravel()
    order = np.argsort(base_offsets, kind="stable")
    where = np.searchsorted(base_offsets[order], _byte_offsets(view._data, start))
    return np.unravel_index(order[where], base.shape)


def _commit_through_view(self, result: Tensor, base: Tensor, op: str) -> None:
    """Record ``self = result`` where ``self`` is a view of ``base`` (PyTorch's CopySlices):
    ``base`` becomes ``index_put(base, positions, result)`` and ``self`` that node's
    elements at ``positions``, while both keep their memory."""
    if result._data.shape != self._data.shape:
        raise RuntimeError(
            f"{op}: the result has shape {list(result.shape)}, which cannot be written into "
            f"a tensor of shape {list(self.shape)} (in-place ops do not broadcast self)"
        )
    if is_part(base, self):  # Note [Writing through real and imag]
        pairs, array = as_pairs(_alias(base, False))
        key = _positions_in(array, self)
        new_pairs = index_put(pairs, key, True, result, out=array)
        new_base = OPS["view_as_complex"].fn(new_pairs)
        view = take_index(new_pairs, key, True, "CopySlicesBackward", op)
    else:
        key = _positions_in(base._data, self)
        new_base = index_put(_alias(base, False), key, True, result, out=base._data)
        view = take_index(new_base, key, True, "CopySlicesBackward", op)
    base.grad_fn, base._output_nr, base._rg = new_base.grad_fn, 0, True
    self.grad_fn, self._output_nr, self._rg = view.grad_fn, 0, True


def _alias(self, copy: bool) -> Tensor:
    """A Tensor standing for self's current value in the graph (Note [In-place ops ...])."""
    old = Tensor._wrap(self._data.copy() if copy else self._data)
    if not copy:
        old._vc = self._vc
    old.grad_fn = self.grad_fn
    old._output_nr = self._output_nr
    old._rg = self._rg
    return old


def _commit(self, result: Tensor, op: str) -> None:
    """Write ``result`` into self and make self stand for it in the graph."""
    if result._data.shape != self._data.shape:
        raise RuntimeError(
            f"{op}: the result has shape {list(result.shape)}, which cannot be written into "
            f"a tensor of shape {list(self.shape)} (in-place ops do not broadcast self)"
        )
    if result._data.dtype != self._data.dtype:
        result = result._cast(self._data.dtype)
    if result._data is not self._data:
        np.copyto(self._data, result._data)
        if op in SAVE_SELF:
            _save_self_as_output(self, result)
    self.grad_fn = result.grad_fn
    self._output_nr = result._output_nr
    self._rg = result._rg


# The in-place ops whose PyTorch backward reads the result (self): changing self again
# before backward raises there (derivatives.yaml's ``result``). Others (erfinv_, sinc_)
# keep tapegrad's private copy of the output and compute the gradient, as torch does.
SAVE_SELF = frozenset(
    "exp_ exp2_ expm1_ reciprocal_ relu_ rsqrt_ sigmoid_ sqrt_ tan_ tanh_".split()
)


def _save_self_as_output(self, result: Tensor) -> None:
    """A Node that saved its output (make_result's ``save_output``) reads self's memory
    instead of the result's copy from now on, and checks self's version, as PyTorch's
    in-place ops in SAVE_SELF save self: a later in-place change of self raises "modified
    by an inplace operation" at backward rather than going unseen (and the copy is
    freed). Self's version is bumped once after the commit (``_run``)."""
    node = result.grad_fn
    if node is None or node._saved_output is not result._data or node._saved_versions is None:
        return
    counter = self._vc
    node._saved_output = self._data
    record = (counter, counter.value + 1, self._data.shape)
    node._saved_versions = node._saved_versions[:-1] + (record,)


def _run(self, op, others, graph_fn, fast_fn, copy_old=False):
    """The one path of every in-place op; returns self."""
    _check_writable(self, op)
    if graph.FORWARD[1] is not None:  # Note [Forward-mode tangents]
        graph.FORWARD[1](self, others, op)
    base = None
    if _needs_graph(self, others):
        base = _check_graph_rules(self, op)
        old = _alias(self, copy_old or base is not None)
        try:
            result = graph_fn(old)
        except ValueError:  # the out-of-place op's broadcast error, in in-place terms
            raise _shape_error(self, op, others) from None
        if base is None:
            _commit(self, result, op)
        else:
            _commit_through_view(self, result, base, op)
    else:
        try:
            fast_fn(self._data)
        except ValueError:
            raise _shape_error(self, op, others) from None
        except TypeError:  # NumPy refuses to cast the result (float into int)
            raise _cast_error(self, graph_fn) from None
    self._vc.bump(op)
    if base is not None:  # self reads base's memory: stale once base changes again
        mark_view(self.grad_fn, base)
    return self


def _cast_error(self, graph_fn):
    """torch's RuntimeError for an in-place result that self's dtype cannot hold."""
    want = scalar_type_name(self._data.dtype)
    try:
        with no_grad():
            got = scalar_type_name(graph_fn(Tensor._wrap(self._data.copy()))._data.dtype)
    except Exception:  # noqa: BLE001 - the out-of-place op refuses too: name no type
        return RuntimeError(f"the result can't be cast to the desired output type {want}")
    return RuntimeError(f"result type {got} can't be cast to the desired output type {want}")


def _shape_error(self, op, others):
    shapes = " and ".join(str(list(np.shape(_data(o)))) for o in others)
    return RuntimeError(
        f"{op}: cannot apply an operand of shape {shapes} in place to a tensor of "
        f"shape {list(self.shape)} (in-place ops do not broadcast self)"
    )


def _swap(o, self, old):
    """An operand that is self itself must read the old value, not self (which changes)."""
    return old if o is self else o


def _binary(name, ufunc, out_of_place, copy_when_other_needs_grad, has_alpha=True):
    forward = graph.FORWARD
    state = STATE
    quiet = ufunc is np.true_divide  # add_/sub_/mul_ stay plain: the optimizer's hot path
    opmath = quiet or ufunc is np.multiply  # Note [Half tensors and numbers]
    is_sub = ufunc is np.subtract

    def check_sub(a, other):  # torch refuses a bool operand in a subtraction
        o = other._data if other.__class__ is Tensor else other
        if a.dtype is _BOOL or o.__class__ is bool or getattr(o, "dtype", None) is _BOOL:
            raise arithmetic.bool_sub_error(a, o)

    def general(self, other, alpha):
        if is_sub:
            check_sub(self._data, other)
        number = None
        plain = alpha.__class__ is float and other.__class__ is Tensor  # an optimizer's step:
        plain = plain and self._data.dtype.kind in "fc"  # _alpha would return alpha as it is
        if (alpha != 1 or alpha is True) and not plain:  # checked as the out-of-place op does
            alpha = arithmetic._alpha(alpha, self._data, _data(other), name[:-1])
            if other.__class__ is not Tensor:
                number = arithmetic._number_operand(self._data, other)
        scaled = other if alpha == 1 else (_data(other) if number is None else number) * alpha
        half = alpha != 1 and (is_sub or ufunc is np.add)
        half = half and (other.__class__ is Tensor or number.__class__ is np.ndarray)

        def fast(a):
            if half and a.itemsize == 2 and number is not None:  # as add(a, number, alpha=)
                res = arithmetic._alpha_scaled(ufunc, a, number, alpha, name[:-1], self, None)
                if res.shape == a.shape and res.dtype == a.dtype:
                    np.copyto(a, res)
                    return
            elif half and a.itemsize == 2:  # Note [Half tensors and alpha]
                res = scaled_add(a, other._data, -alpha if is_sub else alpha)
                if res is not None and res.shape == a.shape:
                    np.copyto(a, res)
                    return
            o = wrap_int(_data(scaled), a)  # Note [Numbers beyond an integer dtype]
            if opmath and a.itemsize == 2:  # Note [Half tensors and numbers]
                o = opmath_number(o, a)
            _fpquiet.call(ufunc, a, o, out=a)  # (the general path: not hot)

        def record(old):
            o = _swap(other, self, old)
            if alpha != 1:
                return out_of_place(old, o, alpha=alpha)
            return out_of_place(old, o)

        copy = copy_when_other_needs_grad and isinstance(other, Tensor) and other._rg
        return _run(self, name, (other,), record, fast, copy_old=copy)

    def fast_path(self, other):
        """Nothing to record and no tangent (an optimizer's update; Note [In-place ops and
        the graph], first case): the ufunc into self's memory and the version bump, without
        the closures and checks of ``_run``. Returns self, or None to take the general path,
        which also raises any error in in-place terms (NumPy checks shapes and casting
        before it writes, so a failed attempt changed nothing)."""
        if forward[1] is not None:
            return None
        if state.enabled and (self._rg or (isinstance(other, Tensor) and other._rg)):
            return None
        a = self._data
        if not a.flags.writeable:
            return None
        if opmath and a.itemsize == 2:  # float16/bfloat16: Note [Half tensors and numbers]
            other = opmath_number(other, a)
        elif is_sub and (
            a.dtype is _BOOL
            or other.__class__ is bool
            or (other.__class__ is Tensor and other._data.dtype is _BOOL)
        ):
            check_sub(a, other)  # raises
        try:
            if quiet:  # x /= 0 is inf silently (Note [No floating-point warnings])
                _fpquiet.call(ufunc, a, other._data if isinstance(other, Tensor) else other, out=a)
            else:
                ufunc(a, other._data if isinstance(other, Tensor) else other, out=a)
        except (ValueError, TypeError, OverflowError):
            return None
        counter = self._vc_
        if counter is None:
            counter = self._vc_ = VersionCounter()
        counter.bump(name, 3)  # the caller of op: bump <- fast_path <- op <- caller
        return self

    if has_alpha:

        def op(self, other, *, alpha=1):
            if alpha == 1 and alpha is not True and fast_path(self, other) is not None:
                return self
            return general(self, other, alpha)

    elif name == "div_":

        def op(self, other, *, rounding_mode=None):
            if rounding_mode is not None:
                return _rounded_div_(self, other, rounding_mode)
            if fast_path(self, other) is not None:
                return self
            return general(self, other, 1)

    else:

        def op(self, other):
            if fast_path(self, other) is not None:
                return self
            return general(self, other, 1)

    op.__name__ = name
    return op


def _rounded_div_(self, other, mode):
    """``self.div_(other, rounding_mode=mode)``: ``div(..., rounding_mode=mode)`` in place."""
    if mode not in ("trunc", "floor"):
        raise RuntimeError(
            f"div_ expected rounding_mode to be one of None, 'trunc', or 'floor' but found {mode!r}"
        )

    def fast(a):
        np.copyto(a, arithmetic.div(Tensor._wrap(a), other, rounding_mode=mode)._data, "same_kind")

    def record(old):
        return arithmetic.div(old, _swap(other, self, old), rounding_mode=mode)

    return _run(self, "div_", (other,), record, fast, copy_old=True)


add_ = _binary("add_", np.add, arithmetic.add, False)
add_.__doc__ = (
    """``self += alpha * other`` in place; returns self.  d/dself = g, d/dother = alpha·g."""
)
sub_ = _binary("sub_", np.subtract, arithmetic.sub, False)
sub_.__doc__ = """``self -= alpha * other`` in place; returns self."""

mul_ = _binary("mul_", np.multiply, arithmetic.mul, True, has_alpha=False)
mul_.__doc__ = (
    """``self *= other`` in place; returns self.  d/dself = g·other, d/dother = g·self_old."""
)
div_ = _binary("div_", np.true_divide, arithmetic.div, True, has_alpha=False)
div_.__doc__ = (
    """``self /= other`` in place (true division; integer tensors raise); returns self."""
)

for _name, _fn in (("add_", add_), ("sub_", sub_), ("mul_", mul_), ("div_", div_)):
    register(_name, inplace=True)(_fn)

Tensor.__iadd__ = add_
Tensor.__isub__ = sub_
Tensor.__imul__ = mul_
Tensor.__itruediv__ = div_


@register("fill_", inplace=True)
def fill_(self, value):
    """Set every element to ``value`` (a number or a 0-d tensor); returns self.

    d/dself = 0; d/dvalue = sum of g.
    """
    if isinstance(value, Tensor) and value._data.ndim != 0:
        raise RuntimeError(
            f"fill_: value must be a number or a 0-d tensor, got shape {list(value.shape)}"
        )
    value = fill_number(real_value(self, value, "fill_"), self._data)

    def fast(a):
        a[...] = _data(value)

    def graph(old):
        return index_put(old, (Ellipsis,), False, value, out=self._data)

    return _run(self, "fill_", (value,), graph, fast)


@register("zero_", inplace=True, differentiable=False)
def zero_(self):
    """Set every element to 0; returns self (the gradient to the old value is 0)."""
    return fill_(self, 0)


@register("copy_", inplace=True)
def copy_(self, src):
    """Copy ``src`` (broadcast to self's shape, cast to self's dtype) into self; returns self.

    d/dself = 0; d/dsrc = g summed back to src's shape.
    """
    src = real_value(self, src, "copy_")
    src_data = _data(src)
    try:
        fits = np.broadcast_shapes(np.shape(src_data), self._data.shape) == self._data.shape
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(
            f"copy_: source of shape {list(np.shape(src_data))} cannot be broadcast to "
            f"the destination's shape {list(self.shape)}"
        )
    dt = self._data.dtype
    if dt.itemsize == 1 and dt.kind in "fV" and np.result_type(src_data) != dt:
        from .._float8 import to_float8  # noqa: PLC0415 - torch's rounding (saturation)

        src_data = to_float8(src_data, dt)

    def fast(a):
        a[...] = src_data

    def graph(old):
        return index_put(old, (Ellipsis,), False, _swap(src, self, old), out=self._data)

    return _run(self, "copy_", (src,), graph, fast)


@register("clamp_", inplace=True)
def clamp_(self, min=None, max=None):
    """Clamp every element into ``[min, max]`` in place; returns self (see ``clamp``)."""
    if min is None and max is None:
        raise RuntimeError("clamp_: at least one of 'min' or 'max' must not be None")
    if self._data.dtype.kind == "b":  # a Python bool bound: torch's error, as clamp's
        from .clamp import _bool_scalar_bounds  # noqa: PLC0415 - clamp imports this module

        _bool_scalar_bounds(min, max)

    def fast(a):
        np.clip(a, _data(min), _data(max), out=a)

    def graph(old):
        return Tensor.clamp(old, _swap(min, self, old), _swap(max, self, old))

    return _run(self, "clamp_", (min, max), graph, fast, copy_old=True)


_VALUE_TYPES = (Tensor, np.ndarray, np.generic, int, float, complex, bool, list, tuple)


def _setitem_shape_error(a, key, value):
    """PyTorch's message: the value's shape against the shape of the indexed elements."""
    try:
        target = list(a[key].shape)
    except (IndexError, ValueError, TypeError):
        target = "?"
    return RuntimeError(
        f"setitem: shape mismatch: value tensor of shape {list(np.shape(_data(value)))} cannot "
        f"be broadcast to indexing result of shape {target}"
    )


@register("setitem", method=False, operators=("__setitem__",), inplace=True)
def setitem(self, key, value):
    """``self[key] = value`` (value broadcast to the selected elements; last write wins).

    d/dself = g with zeros at key; d/dvalue = g[key] summed back to value's shape.
    """
    key, advanced = normalize_key(key, "setitem", self._data.shape)
    if not isinstance(value, _VALUE_TYPES):
        raise TypeError(
            f"setitem: can't assign a {type(value).__name__} to a tensor of dtype "
            f"{self._data.dtype}"
        )
    value = real_value(self, value, "setitem", advanced)
    if advanced:
        value = _to_numpy_layout(self, key, value)

    def fast(a):
        try:
            a[key] = _data(value)
        except IndexError as e:
            raise IndexError(
                f"setitem: index is out of range or invalid for a tensor of shape "
                f"{list(a.shape)} ({e})"
            ) from None
        except ValueError:
            raise _setitem_shape_error(a, key, value) from None

    def graph(old):
        try:
            return index_put(old, key, advanced, _swap(value, self, old), out=self._data)
        except ValueError:
            raise _setitem_shape_error(self._data, key, value) from None

    _run(self, "setitem", (value,), graph, fast)


def _to_numpy_layout(self, key, value):
    """``value`` laid out as NumPy's ``a[key] = value`` expects it when PyTorch puts the
    advanced-index dims elsewhere (Note [Ints in advanced keys], ops/indexing.py)."""
    if not any(isinstance(k, int) for k in key) or not isinstance(value, (Tensor, np.ndarray)):
        return value
    selected = np.empty(self._data.shape, bool)[key].shape
    moved = _torch_layout(key, self._data.ndim, len(selected))
    if moved is None:
        return value
    src, dst = moved
    torch_shape = (
        np.empty(selected, bool)
        .transpose(
            [i for i in range(len(selected)) if i not in src][: dst[0]]
            + list(src)
            + [i for i in range(len(selected)) if i not in src][dst[0] :]
        )
        .shape
    )
    v = value if isinstance(value, Tensor) else Tensor._wrap(np.asarray(value))
    return v.expand(torch_shape).movedim(dst, src)
