"""Op families as tables: a row per op, from which the op, its Tensor method, its in-place
``_`` variant, its aliases, the op-table test rows and the docs table are generated.

Note [Op tables]
A :class:`Unary` or :class:`Binary` row names the public op, its array kernel (NumPy or
``scipy.special``), its derivative written in tapegrad ops (so ``create_graph=True`` gives
higher orders), the domain its tests sample from and its aliases. ``grad`` is one of:

* a function ``grad(g, x, out)`` (unary) returning d(loss)/dx, or a pair of functions
  ``(grad_a, grad_b)`` with signature ``(g, a, b, out)`` (binary; None for an argument
  with no gradient, e.g. the exponent of ``copysign``);
* ``None``: the op is not differentiable (a predicate, a step, an integer op): its result
  never requires grad, as in PyTorch (``isnan``, ``bessel_j0``);
* :data:`NOT_IMPLEMENTED`: PyTorch records the op but raises in backward (``zeta``); so do
  we, with PyTorch's message.

Rules receive Tensors (a Python scalar operand arrives as a 0-d Tensor) and return a
gradient of the broadcast shape; the generated op sums it back (``reduce_grad``).
Families live in ``unary_table.py``, ``binary_table.py`` and ``special_table.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from .. import _dtypes
from ..autograd.graph import make_result
from ..tensor import Tensor
from . import inplace as _inplace
from ._dtype_errors import scalar as _scalar_name
from ._registry import add_alias, register
from ._util import as_tensor, as_tensor_or_scalar, broadcast_error, reduce_grad

__all__ = ["Unary", "Binary", "NOT_IMPLEMENTED", "ROWS", "make_unary", "make_binary"]

NOT_IMPLEMENTED = "not implemented"

ROWS: dict[str, object] = {}
"""Every table row by op name (the docs generator and the op-table tests read it)."""


@dataclasses.dataclass
class Unary:
    """One elementwise function of one tensor.

    Attributes:
        name: PyTorch's name (``tg.<name>``, ``Tensor.<name>``).
        kernel: ``kernel(array) -> array``.
        grad: ``grad(g, x, out)`` in tapegrad ops, None, or NOT_IMPLEMENTED.
        kind: result dtype: ``"float"`` (integer input computes in the default float dtype),
            ``"same"`` (keeps the input dtype), ``"bool"`` (a predicate), ``"int"`` (integer
            and bool inputs only).
        domain: ``(low, high)`` the op-table tests sample from.
        aliases: other public names (``arcsin``).
        inplace: generate ``<name>_``.
        method, function: bind as a Tensor method / export as ``tg.<name>``.
        special: the name in ``tg.special`` (or None).
        float_only: integer inputs raise, as PyTorch's ``frac`` does (binary ops: the
            promoted dtype).
        notes: a short remark for the docs table.
        check: ``check(*dtypes)`` raises for inputs PyTorch refuses (``trunc`` of bool).
        uses: what ``grad`` reads, so the Node keeps only that alive: ``"x"`` (the input;
            ``o`` is None), ``"out"`` (the output; ``x`` is None), ``"both"``, or ``"none"``
            (a constant derivative: the Node saves nothing, as PyTorch's).
        arrays: ``grad`` is written only in the arithmetic operators on ``g``, ``x``,
            ``o`` and Python numbers, so it also runs on their arrays as the Node's array
            rule (Note [Rules in operators] in elementwise.py, Note [Array backward]).
    """

    name: str
    kernel: Callable
    grad: object = None
    kind: str = "float"
    domain: tuple = (-2.0, 2.0)
    aliases: tuple = ()
    inplace: bool = True
    method: bool = True
    function: bool = True
    special: str | None = None
    float_only: bool = False
    notes: str = ""
    check: Callable | None = None
    uses: str = "x"
    arrays: bool = False

    @property
    def differentiable(self) -> bool:
        return self.grad is not None and self.grad is not NOT_IMPLEMENTED


@dataclasses.dataclass
class Binary:
    """One elementwise function of two broadcast operands (tensors or Python numbers).

    Attributes are those of :class:`Unary`; ``grad`` is a pair ``(grad_a, grad_b)`` of
    ``f(g, a, b, out)`` (either may be None), None, or NOT_IMPLEMENTED; ``domain`` is one
    ``(low, high)`` or a pair of them.
    """

    name: str
    kernel: Callable
    grad: object = None
    kind: str = "float"
    domain: tuple = (-2.0, 2.0)
    aliases: tuple = ()
    inplace: bool = True
    method: bool = True
    function: bool = True
    special: str | None = None
    float_only: bool = False
    notes: str = ""
    check: Callable | None = None
    real_only: str = ""  # a complex result: "stub" (NotImplementedError), "runtime" (torch's)

    @property
    def differentiable(self) -> bool:
        return self.grad is not None and self.grad is not NOT_IMPLEMENTED


def _node_name(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_")) + "Backward"


def _not_implemented(name):
    def backward(*_):
        raise NotImplementedError(f"the derivative for '{name}' is not implemented.")

    return backward


def _int_error(name, dtype):
    """torch's error for a dtype an op has no kernel for: its dispatch stub's
    NotImplementedError (a RuntimeError), naming the scalar type."""
    return NotImplementedError(
        f"{name}: \"{name}_cpu\" not implemented for '{_scalar_name(dtype)}' (tensors of dtype "
        f"{np.dtype(dtype)})"
    )


def _float_input(x: Tensor, row) -> np.ndarray:
    """The array the kernel reads, by the row's kind (Note [Op tables])."""
    data = x._data
    k = data.dtype.kind
    if row.kind == "int":
        if k not in "iub":
            raise _int_error(row.name, data.dtype)
        return data
    if k in "iub":
        if row.float_only:
            raise _int_error(row.name, data.dtype)
        if row.kind == "float":
            return data.astype(_dtypes.get_default_dtype())
    return data


def make_unary(row: Unary) -> Callable:
    """The op of a :class:`Unary` row (a function of one tensor)."""
    name, kernel, grad, kind = row.name, row.kernel, row.grad, row.kind
    node = _node_name(name)
    rule = _not_implemented(name) if grad is NOT_IMPLEMENTED else None

    check, uses = row.check, row.uses
    arrays = row.arrays

    def op(input):
        x = input if input.__class__ is Tensor else as_tensor(input, name)
        if check is not None:
            check(x._data.dtype)
        data = _float_input(x, row)
        with np.errstate(all="ignore"):
            out = np.asarray(kernel(data))
        if kind == "bool":
            out = out.astype(np.bool_, copy=False)
        elif out.dtype != data.dtype and (kind != "same" or data.dtype.kind == "f"):
            if data.dtype.kind != "c" or out.dtype.kind == "c":  # |z|, angle(z) stay real
                out = out.astype(data.dtype)
        if grad is None or out.dtype.kind not in "fcV":  # V: bfloat16
            return Tensor._wrap(out)
        if rule is not None:
            return make_result(out, (x,), rule, node)
        return _record(out, x, grad, node, uses, arrays)

    op.__name__ = name
    op.__qualname__ = name
    op.__doc__ = _doc(row)
    return op


def _record(out, x, grad, node, uses, arrays):
    """make_result with a closure that captures only what ``grad`` reads (row.uses), and
    with ``arrays`` the same rule on arrays (row.arrays)."""
    if uses == "x":

        def backward_x(g):
            return (grad(g, x, None),)

        def array_x(g):
            return (grad(g, x._data, None),)

        return make_result(
            out, (x,), backward_x, node, saved=(x,), array_backward=array_x if arrays else None
        )
    if uses == "none":  # a constant derivative: nothing saved (a second backward works)

        def backward_none(g):
            return (grad(g, None, None),)

        array = backward_none if arrays else None
        return make_result(out, (x,), backward_none, node, array_backward=array)
    if uses == "out":

        def backward_out(g, o):
            return (grad(g, None, o),)

        array = backward_out if arrays else None
        return make_result(out, (x,), backward_out, node, save_output=True, array_backward=array)

    def backward(g, o):
        return (grad(g, x, o),)

    def array_both(g, o):
        return (grad(g, x._data, o),)

    array = array_both if arrays else None
    return make_result(
        out, (x,), backward, node, saved=(x,), save_output=True, array_backward=array
    )


def _result_dtype(da, db, row) -> np.dtype:
    """PyTorch's promotion: a float tensor's dtype wins over integer tensors (int64 with
    float32 is float32, not NumPy's float64); Python numbers are weak; an integer result
    of a float function is the default float dtype."""
    dtypes = [d.dtype for d in (da, db) if hasattr(d, "dtype")]
    floats = [d for d in dtypes if d.kind in "fcV"]  # V: bfloat16
    if len(floats) == 2 and (da.ndim == 0) != (db.ndim == 0):
        # a 0-d tensor is weaker than a dimensioned one of its category: atan2(x, 0-d
        # float64) keeps x's float32 or bfloat16, as in PyTorch
        dt = floats[0] if db.ndim == 0 else floats[1]
        if (dt.kind == "c") != (floats[0].kind == "c" or floats[1].kind == "c"):
            # a 0-d complex: the complex of the float's width (float32 -> complex64), as torch
            dt = np.dtype(np.complex128 if dt == np.float64 else np.complex64)
    elif floats:
        dt = np.result_type(*floats)
        if isinstance(da, complex) or isinstance(db, complex):
            dt = np.result_type(dt, np.complex64)
    elif isinstance(da, float) or isinstance(db, float):
        dt = _dtypes.get_default_dtype()
    else:
        dt = np.result_type(da, db)
    if row.float_only and dt.kind in "iub":
        raise _int_error(row.name, dt)
    if row.kind == "float" and dt.kind in "iub":
        return _dtypes.get_default_dtype()
    return dt


def make_binary(row: Binary) -> Callable:
    """The op of a :class:`Binary` row (a function of two broadcast operands)."""
    name, kernel, grad, kind = row.name, row.kernel, row.grad, row.kind
    node = _node_name(name)
    rule = _not_implemented(name) if grad is NOT_IMPLEMENTED else None
    grad_a, grad_b = grad if isinstance(grad, tuple) else (None, None)
    check, real_only = row.check, row.real_only

    def op(input, other):
        ta, da = as_tensor_or_scalar(input, name)
        tb, db = as_tensor_or_scalar(other, name)
        if ta is None and tb is None:
            raise TypeError(f"{name}(): expected a Tensor argument, got two numbers")
        if check is not None:
            check(np.asarray(da).dtype, np.asarray(db).dtype)
        dt = _result_dtype(da, db, row)
        if kind == "int" and dt.kind not in "iub":
            raise _int_error(name, dt)
        if real_only and dt.kind == "c":  # torch has no complex kernel (NumPy has one)
            if real_only == "stub":
                raise _int_error(row.special or name, dt)
            raise RuntimeError(f"{name} not implemented for complex tensors.")
        xa = np.asarray(da, dt) if ta is None or da.dtype != dt else da
        xb = np.asarray(db, dt) if tb is None or db.dtype != dt else db
        try:
            with np.errstate(all="ignore"):
                out = np.asarray(kernel(xa, xb))
        except ValueError:
            raise broadcast_error(name, np.shape(da), np.shape(db)) from None
        except TypeError:  # NumPy has no loop for the dtype (complex): torch has no kernel
            raise _int_error(name, dt) from None
        if kind == "bool":
            out = out.astype(np.bool_, copy=False)
        elif out.dtype != dt:
            out = out.astype(dt)
        if grad is None or out.dtype.kind not in "fcV":  # V: bfloat16
            return Tensor._wrap(out)
        if rule is not None:
            return make_result(out, (ta, tb), rule, node)
        na = ta is not None and ta._rg and grad_a is not None
        nb = tb is not None and tb._rg and grad_b is not None
        a = ta if ta is not None else Tensor._wrap(xa)
        b = tb if tb is not None else Tensor._wrap(xb)

        def backward(g, o):
            ga = reduce_grad(grad_a(g, a, b, o), ta) if na else None
            gb = reduce_grad(grad_b(g, a, b, o), tb) if nb else None
            return ga, gb

        saved = tuple(t for t in (ta, tb) if t is not None)
        return make_result(out, (ta, tb), backward, node, saved=saved, save_output=True)

    op.__name__ = name
    op.__qualname__ = name
    op.__doc__ = _doc(row)
    return op


def _doc(row) -> str:
    grad = "not differentiable"
    if row.grad is NOT_IMPLEMENTED:
        grad = "backward raises NotImplementedError (as PyTorch)"
    elif row.grad is not None:
        grad = "differentiable (rule in tapegrad ops: any order)"
    alias = f" Aliases: {', '.join(row.aliases)}." if row.aliases else ""
    note = f" {row.notes}" if row.notes else ""
    return f"Elementwise ``{row.name}`` as ``torch.{row.name}``; {grad}.{alias}{note}"


def _uncastable(a, args):
    """torch's cast error when the result type of ``a`` with ``args`` cannot be written into
    ``a`` (an in-place op checks it before it finds the op has no kernel for that type)."""
    from .._promotion import result_type_of  # noqa: PLC0415

    try:
        dt = result_type_of(Tensor._wrap(a), *args)
    except TypeError:  # an argument that is not an operand
        return
    if not np.can_cast(dt, a.dtype, "same_kind"):
        raise RuntimeError(
            f"result type {_scalar_name(dt)} can't be cast to the desired output type "
            f"{_scalar_name(a.dtype)}"
        ) from None


def make_inplace(name: str, fn: Callable) -> Callable:
    """``<name>_``: ``fn`` written into self (Note [In-place ops and the graph])."""

    def op_(self, *args, **kwargs):
        def graph(old):
            swap = _inplace._swap
            kw = {k: swap(v, self, old) for k, v in kwargs.items()} if kwargs else kwargs
            return fn(old, *(swap(a, self, old) for a in args), **kw)

        def fast(a):
            try:
                res = fn(Tensor._wrap(a), *args, **kwargs)._data
            except NotImplementedError:  # no kernel for the result's dtype: torch checks
                _uncastable(a, args)  # the cast into self first
                raise
            if res.dtype != a.dtype and not np.can_cast(res.dtype, a.dtype, "same_kind"):
                raise RuntimeError(  # torch's text, with ScalarType names
                    f"result type {_scalar_name(res.dtype)} can't be cast to the desired "
                    f"output type {_scalar_name(a.dtype)}"
                )
            np.copyto(a, res, casting="unsafe")

        # operands passed by keyword count too (index_add_(0, i, source=x) records x)
        others = args + tuple(kwargs.values()) if kwargs else args
        return _inplace._run(self, f"{name}_", others, graph, fast, copy_old=True)

    op_.__name__ = f"{name}_"
    op_.__doc__ = f"In-place ``{name}``; returns self."
    return op_


def install(rows, make) -> dict:
    """Register every row's op (and ``_`` variant and aliases); return ``{name: fn}``."""
    made = {}
    for row in rows:
        fn = make(row)
        register(
            row.name,
            method=row.method,
            function=row.function,
            differentiable=row.differentiable,
        )(fn)
        for alias in row.aliases:
            add_alias(alias, row.name)
        if row.inplace:
            register(f"{row.name}_", inplace=True, differentiable=row.differentiable)(
                make_inplace(row.name, fn)
            )
            for alias in row.aliases:
                if row.method:
                    setattr(Tensor, f"{alias}_", getattr(Tensor, f"{row.name}_"))
        ROWS[row.name] = row
        made[row.name] = fn
    return made
