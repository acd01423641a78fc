"""Arithmetic: + - * / ** neg, integer division, comparisons, casts and clone.

Derivatives (g is the incoming gradient):
    add: (g, g)          sub: (g, -g)          mul: (g*b, g*a)
    div: (g/b, -g*a/b²)  pow: (g*p*a^(p-1), g*out*log a)   neg: -g
Broadcast operands get their gradient summed back with ``sum_to``.
"""

from __future__ import annotations

import sys

import numpy as np

from .. import _dtypes, _fpquiet, _warn
from ..autograd import forward_ad
from ..autograd.graph import OWNED, keeps_arrays, make_result, sum_to
from ..grad_mode import STATE
from ..tensor import _PACKAGE_DIR, Tensor
from ._half_alpha import scaled_add
from ._half_number import opmath_number
from ._int_scalars import scalar_type_name, wrap_ints
from ._registry import register
from ._util import as_tensor_or_scalar, broadcast_error, reduce_grad
from ._zero_dim import zero_dim_operands
from .elementwise import where

__all__ = [
    "add",
    "sub",
    "mul",
    "div",
    "neg",
    "pow",
    "floor_divide",
    "remainder",
    "fmod",
    "IntegerDivisionByZero",
]


def _operands(a, b, op):
    """``(tensor_or_None, data)`` for both operands; plain Tensors take the fast path."""
    if a.__class__ is Tensor:
        ta, da = a, a._data
    else:
        ta, da = as_tensor_or_scalar(a, op)
    if b.__class__ is Tensor:
        tb, db = b, b._data
    elif b.__class__ is float:
        tb, db = None, b
    else:
        tb, db = as_tensor_or_scalar(b, op)
    return ta, da, tb, db


_F64 = _dtypes.float64
_C128 = _dtypes.complex128
_BOOL = np.dtype(bool)


# Note [Scalar operands as 0-d arrays]
# On small arrays NumPy takes a 0-d array operand in about half the time of a Python
# scalar (0.7 vs 1.5 us for float32[16]: the weak-scalar promotion is the cost). A
# Python float (or small int) next to a float16/32/64 array is weak: it is cast to the
# array's dtype, exactly what a 0-d array of that dtype gives. So add/sub/mul/div swap
# it for a cached read-only 0-d array of the array's dtype; zeros (whose sign a dict
# key would lose), NaN and large ints keep the plain path. Closures keep the Python
# scalar, not the array. A float16/bfloat16 array's number is an OpmathNumber instead
# (Note [Half tensors and numbers] in ops/_half_number.py).
_WEAK_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64))
_WEAK_BY_DTYPE: dict = {dt: {} for dt in _WEAK_DTYPES}  # dtype -> {value: 0-d array}


def _weak(value, data):
    """``value`` (a Python scalar) as a 0-d array of ``data``'s dtype when that is exact
    (Note [Scalar operands as 0-d arrays]); else ``value`` unchanged."""
    cls = value.__class__
    if (cls is float or cls is int) and data.__class__ is np.ndarray:  # the hot path: a
        cache = _WEAK_BY_DTYPE.get(data.dtype)  # value met before (never 0 or NaN)
        if cache is not None:
            arr = cache.get(value)
            if arr is not None:
                return arr
    if (cls is float or (cls is int and -(2**24) < value < 2**24)) and value == value and value:
        dtype = data.dtype
        if dtype in _WEAK_DTYPES and data.__class__ is np.ndarray:  # not CuPy, not jit's
            cache = _WEAK_BY_DTYPE[dtype]
            arr = cache.get(value)
            if arr is None:
                arr = np.array(value, dtype)
                arr.flags.writeable = False
                if len(cache) < 1024:
                    cache[value] = arr
            return arr
    if isinstance(data, np.ndarray) and data.itemsize == 2:  # float16 or bfloat16 (or int16)
        return opmath_number(value, data)  # Note [Half tensors and numbers]
    return value


def _compute(fn, da, db, op, ta, tb, quiet=False):
    try:
        if quiet:  # 1/0 = inf silently (Note [No floating-point warnings])
            token = _fpquiet.enter()
            try:
                out = fn(da, db)
            finally:
                _fpquiet.leave(token)
        else:
            out = fn(da, db)
    except ValueError:
        raise broadcast_error(op, np.shape(da), np.shape(db)) from None
    except TypeError:
        raise _unsupported(op, da, db) from None
    except OverflowError:  # Note [Numbers beyond an integer dtype] in ops/_int_scalars.py
        out = fn(*wrap_ints(da, db))
    dt = out.dtype
    if dt is _F64:  # builtin dtypes are singletons; only float64 may need fixing
        out = _dtypes.fix_float_result(out, _dtype(da), _dtype(db))
    elif dt is _C128:  # an integer tensor with a complex scalar: the default complex dtype
        out = _fix_complex_result(out, _dtype(da), _dtype(db))
    elif dt.itemsize == 1 and dt.kind in "fV":  # Note [float8 as torch] in _float8.py
        from .. import _float8  # noqa: PLC0415

        if op == "mul" and np.ndim(da) and np.ndim(db):  # torch's one float8 kernel
            f32 = np.float32
            return _float8.to_float8(np.asarray(da, f32) * np.asarray(db, f32), dt)
        _float8.not_implemented(op, dt)
    return out


def _fix_complex_result(out, *operand_dtypes):
    if any(d is not None and d in (_F64, _C128) for d in operand_dtypes):
        return out
    return out.astype(_dtypes.get_default_complex_dtype())


def _unsupported(op, da, db):
    """The error for dtypes an op does not take (NumPy's own message names NumPy ufuncs)."""
    ka, kb = np.asarray(da).dtype.kind, np.asarray(db).dtype.kind
    if op == "sub" and ka == kb == "b":
        return RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. "
            "Use the `^` or `logical_xor()` operator instead."
        )
    return TypeError(
        f"{op}: not supported for operands of dtype {_dtype(da) or type(da).__name__} and "
        f"{_dtype(db) or type(db).__name__}"
    )


def _dtype(d):
    return d.dtype if hasattr(d, "dtype") else None


def _present(a, b):
    """The non-None of ``a`` and ``b`` as a tuple (the tensors a rule must version-check)."""
    if a is None:
        return None if b is None else (b,)
    return (a,) if b is None else (a, b)


def _meta(t, needed):
    """An operand's (shape, dtype) when its gradient is needed. Rules that need only this
    capture it rather than the Tensor, which would keep the operand's data alive for as
    long as the graph lives (Note [What saved_bytes counts] in autograd/memory.py)."""
    return (t._data.shape, t._data.dtype) if needed else None


def _fit(g, meta):
    """``g`` as the gradient of an operand with ``meta = (shape, dtype)``: summed back over
    broadcast axes and cast, when needed (most often it already fits)."""
    data = g._data
    if data.shape == meta[0] and data.dtype == meta[1]:
        return g
    g = sum_to(g, meta[0])
    return g if g._data.dtype == meta[1] else g._cast(meta[1])


def _fit_array(g, meta):
    """:func:`_fit` on an array rule's gradient array (Note [Array backward])."""
    if g.shape == meta[0] and g.dtype == meta[1]:
        return g
    return _fit(Tensor._wrap(g), meta)._data


# Note [Tensor and number]
# ``x * 0.5``, ``x + 1``, ``x - 1`` where the result has x's shape and dtype (a float
# tensor, a Python number: weak) record rules without the general rules' closures: add
# and sub pass the gradient on unchanged (one module-level function serves as Tensor and
# array rule: Note [Array backward] in autograd/engine.py), and mul's one closure, holding
# the number as its 0-d array of x's dtype (Note [Scalar operands as 0-d arrays]),
# computes ``g * number`` with ``*``, which takes a Tensor (the Tensor rule: it records
# under create_graph) or an array (the array rule: NumPy's product, the bits mul gives).
# ``next_functions`` keeps its two entries (the number's is None), as in PyTorch.
def _to_first(g):
    return (g, None)


def _weak_number(input, other):
    """For ``tensor <op> number`` with a number met before: its cached 0-d array of the
    tensor's dtype (Note [Scalar operands as 0-d arrays]), with which the ufunc's result
    keeps the tensor's shape and dtype (Note [Tensor and number]); else None."""
    cls = other.__class__
    if (cls is float or cls is int) and input.__class__ is Tensor:
        data = input._data
        if data.__class__ is np.ndarray:
            cache = _WEAK_BY_DTYPE.get(data.dtype)
            if cache is not None:
                return cache.get(other)
    return None


def _scaled(out, ta, weak):
    """The result of ``ta * number``, ``weak`` the number as mul takes it (its 0-d array,
    Note [Tensor and number])."""

    def backward(g):  # the Tensor rule and the array rule: ``*`` takes either
        return (g * weak, None)

    return make_result(out, (ta, None), backward, "MulBackward", array_backward=backward)


def _alpha(alpha, da, db, op):
    """``alpha`` of add/sub other than 1 as torch takes it: a Python number (a NumPy scalar
    would promote the result's dtype), of a kind the result can hold (torch's errors),
    a bool for bool operands (``a + 2 * b`` of bools is a bool)."""
    if isinstance(alpha, np.generic):
        alpha = alpha.item()
    ka, kb = _kind(da), _kind(db)
    if alpha.__class__ is float and (ka in "fc" or kb in "fc"):  # the common cases first
        return alpha
    if alpha.__class__ is int:
        return bool(alpha) if ka == kb == "b" else alpha
    kind = np.result_type(da, db).kind
    if isinstance(alpha, bool):
        if kind != "b":
            raise RuntimeError(f"{op}: Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, complex) and kind != "c":
        raise RuntimeError(
            f"{op}: For non-complex input tensors, argument alpha must not be a complex number."
        )
    elif isinstance(alpha, float) and kind in "iub":
        raise RuntimeError(
            f"{op}: For integral input tensors, argument alpha must not be a floating point number."
        )
    return alpha


def _kind(d):
    """The dtype kind of an operand: an array's, or a Python number's (0 and NaN, large
    ints and half tensors' numbers stay numbers, Note [Scalar operands as 0-d arrays])."""
    dt = getattr(d, "dtype", None)
    if dt is not None:
        return dt.kind
    if isinstance(d, bool):
        return "b"
    if isinstance(d, int):
        return "i"
    return (
        "f" if isinstance(d, float) else "c" if isinstance(d, complex) else np.asarray(d).dtype.kind
    )


def _number_operand(da, db):
    """A number ``db`` beside the array ``da`` as torch casts it before scaling it by
    alpha: a real number to a float array's dtype, a bool to a bool array's (``True *
    True`` is 1, not True); else ``db`` unchanged."""
    if hasattr(db, "dtype"):
        return db
    kind = da.dtype.kind
    if kind in "fcV" and isinstance(db, (int, float)):
        token = _fpquiet.enter()  # a number beyond the dtype is inf, as in torch
        try:
            return np.asarray(float(db) if isinstance(db, float) else db, da.dtype)
        except OverflowError:  # beyond float64: NumPy's plain path reports it
            return db
        finally:
            _fpquiet.leave(token)
    if db.__class__ is bool and kind == "b":
        return np.asarray(db)
    return db


def _alpha_scaled(fn, da, db, alpha, op, ta, tb):
    """``fn(da, alpha * db)`` for add and sub; two half tensors as torch rounds them (Note
    [Half tensors and alpha] in ops/_half_alpha.py). A real number beside a float tensor is
    first rounded to the tensor's dtype, as torch casts it (a half tensor's then takes the
    same rule as a 0-d half tensor)."""
    if tb is None and ta is not None:
        db = _number_operand(da, db)
    if ta is not None and da.itemsize == 2 and (tb is not None or db.__class__ is np.ndarray):
        s = alpha if fn is np.add else -alpha
        perm = np.argsort([-st for st in da.strides], kind="stable") if tb is None else None
        if perm is not None and da.transpose(perm).flags.c_contiguous:
            dense = da.transpose(perm)  # a number beside a dense tensor: torch's loop runs
            out = scaled_add(dense.reshape(-1), db, s)  # once over its memory
            out = out if out is None else out.reshape(dense.shape).transpose(np.argsort(perm))
        else:
            out = scaled_add(da, db, s)
        if out is not None:
            return out
    return _compute(fn, da, db * alpha, op, ta, tb)


@register("add", operators=("__add__", "__radd__"))
def add(input, other, *, alpha=1):
    """``input + alpha * other``, broadcasting."""
    if alpha == 1 and alpha is not True and (weak := _weak_number(input, other)) is not None:
        out = np.add(input._data, weak)
        if STATE.enabled and input._rg:
            return make_result(
                out, (input, None), _to_first, "AddBackward", array_backward=_to_first
            )
        return Tensor._wrap(out)
    ta, da, tb, db = _operands(input, other, "add")
    if tb is None:
        if ta is not None:
            db = _weak(db, da)
    elif ta is None:
        da = _weak(da, db)
    elif da.ndim != db.ndim and not (da.ndim and db.ndim):  # Note [0-d tensor operands]
        da, db = zero_dim_operands(da, db)
    if alpha == 1 and alpha is not True:  # a True alpha: torch checks it as a bool
        out = _compute(np.add, da, db, "add", ta, tb)
    else:
        alpha = _alpha(alpha, da, db, "add")
        out = _alpha_scaled(np.add, da, db, alpha, "add", ta, tb)
    na = ta is not None and ta._rg
    nb = tb is not None and tb._rg
    if not (STATE.enabled and (na or nb)):  # nothing to record (e.g. inside backward)
        return Tensor._wrap(out)
    if tb is None and out.dtype == da.dtype and out.shape == da.shape:
        # tensor + number (Note [Tensor and number]): the gradient passes unchanged
        return make_result(out, (ta, None), _to_first, "AddBackward", array_backward=_to_first)
    ma = (da.shape, ta._data.dtype) if na else None  # _meta inlined: the hot path
    mb = (tb._data.shape, tb._data.dtype) if nb else None  # db may be scaled by alpha

    def backward(g):
        return (
            _fit(g, ma) if na else None,
            _fit(g if alpha == 1 else g * alpha, mb) if nb else None,
        )

    def array_backward(g):  # Note [Array backward] in autograd/engine.py
        return (
            _fit_array(g, ma) if na else None,
            _fit_array(g if alpha == 1 else _times(g, alpha), mb) if nb else None,
        )

    return make_result(out, (ta, tb), backward, "AddBackward", array_backward=array_backward)


@register("sub", operators=("__sub__",))
def sub(input, other, *, alpha=1):
    """``input - alpha * other``, broadcasting."""
    if alpha == 1 and alpha is not True and (weak := _weak_number(input, other)) is not None:
        out = np.subtract(input._data, weak)
        if STATE.enabled and input._rg:
            return make_result(
                out, (input, None), _to_first, "SubBackward", array_backward=_to_first
            )
        return Tensor._wrap(out)
    ta, da, tb, db = _operands(input, other, "sub")
    if (da.dtype is _BOOL if ta is not None else da.__class__ is bool) or (
        db.dtype is _BOOL if tb is not None else db.__class__ is bool
    ):
        raise bool_sub_error(da, db)
    if tb is None:
        if ta is not None:
            db = _weak(db, da)
    elif ta is None:
        da = _weak(da, db)
    elif da.ndim != db.ndim and not (da.ndim and db.ndim):  # Note [0-d tensor operands]
        da, db = zero_dim_operands(da, db)
    if alpha == 1 and alpha is not True:
        out = _compute(np.subtract, da, db, "sub", ta, tb)
    else:
        alpha = _alpha(alpha, da, db, "sub")
        out = _alpha_scaled(np.subtract, da, db, alpha, "sub", ta, tb)
    na = ta is not None and ta._rg
    nb = tb is not None and tb._rg
    if not (STATE.enabled and (na or nb)):  # nothing to record (e.g. inside backward)
        return Tensor._wrap(out)
    if tb is None and out.dtype == da.dtype and out.shape == da.shape:
        # tensor - number (Note [Tensor and number]): the gradient passes unchanged
        return make_result(out, (ta, None), _to_first, "SubBackward", array_backward=_to_first)
    ma = (da.shape, ta._data.dtype) if na else None  # _meta inlined: the hot path
    mb = (tb._data.shape, tb._data.dtype) if nb else None  # db may be scaled by alpha

    def backward(g):
        return (
            _fit(g, ma) if na else None,
            _fit(-g if alpha == 1 else g * -alpha, mb) if nb else None,
        )

    def array_backward(g):  # Note [Array backward] in autograd/engine.py
        return (
            _fit_array(g, ma) if na else None,
            _fit_array(np.negative(g) if alpha == 1 else _times(g, -alpha), mb) if nb else None,
        )

    return make_result(out, (ta, tb), backward, "SubBackward", array_backward=array_backward)


def bool_sub_error(da, db):
    """torch's RuntimeError for a subtraction with a bool operand (tensor or Python bool)."""
    if _dtype(da) == _BOOL or da.__class__ is bool:
        if _dtype(db) == _BOOL or db.__class__ is bool:
            return _unsupported("sub", np.asarray(da), np.asarray(db))
    return RuntimeError(
        "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
        "trying to invert a mask, use the `~` or `logical_not()` operator instead."
    )


def _rsub(self, other):
    return sub(other, self)


Tensor.__rsub__ = _rsub


# Note [First-order fast paths]
# Backward rules are written in tapegrad ops, so that with create_graph=True they record
# and give higher derivatives. With create_graph=False (grad mode off while they run) the
# hottest rules (mul, exp, linear) compute the same products directly on the arrays, the
# way the no-grad Tensor op would (same weak-scalar handling, same dtype fix, same order
# of operands), skipping the op dispatch and the intermediate Tensors. The op table's
# gradcheck runs these paths, its gradgradcheck the recorded ones.
def _times(gd, other):
    """``g * other`` on g's array, exactly as ``mul(g, other)`` computes it in no_grad."""
    od = other._data if isinstance(other, Tensor) else _weak(other, gd)
    return _compute(np.multiply, gd, od, "mul", None, None)


def _over(gd, other):
    """``g / other`` on g's array, exactly as ``div(g, other)`` computes it in no_grad."""
    od = other._data if isinstance(other, Tensor) else _weak(other, gd)
    return _compute(np.true_divide, gd, od, "div", None, None, True)


def _wrap_grads(grads):
    """An array rule's gradients as Tensors (for a Tensor rule that runs it)."""
    return tuple(None if g is None else Tensor._wrap(g) for g in grads)


@register("mul", operators=("__mul__", "__rmul__"))
def mul(input, other):
    """Elementwise product, broadcasting."""
    if (weak := _weak_number(input, other)) is not None:
        out = np.multiply(input._data, weak)
        if STATE.enabled and input._rg:
            return _scaled(out, input, weak)
        return Tensor._wrap(out)
    ta, da, tb, db = _operands(input, other, "mul")
    if tb is None:
        if ta is not None:
            db = _weak(db, da)
    elif ta is None:
        da = _weak(da, db)
    elif da.ndim != db.ndim and not (da.ndim and db.ndim):  # Note [0-d tensor operands]
        da, db = zero_dim_operands(da, db)
    out = _compute(np.multiply, da, db, "mul", ta, tb)
    na = ta is not None and ta._rg
    nb = tb is not None and tb._rg
    if not (STATE.enabled and (na or nb)):  # nothing to record (e.g. inside backward)
        return Tensor._wrap(out)
    if tb is None and out.dtype == da.dtype and out.shape == da.shape:
        return _scaled(out, ta, db)  # tensor * number (Note [Tensor and number])
    b = (tb if tb is not None else other) if na else None
    a = (ta if ta is not None else input) if nb else None
    ma = (da.shape, ta._data.dtype) if na else None  # _meta inlined: the hot path
    mb = (db.shape, tb._data.dtype) if nb else None

    def backward(g):
        if not STATE.enabled:  # Note [First-order fast paths]
            return _wrap_grads(array_backward(g._data))
        return (
            _fit(g * b, ma) if na else None,
            _fit(g * a, mb) if nb else None,
        )

    def array_backward(g):  # Note [Array backward] in autograd/engine.py
        return (
            _fit_array(_times(g, b), ma) if na else None,
            _fit_array(_times(g, a), mb) if nb else None,
        )

    return make_result(
        out,
        (ta, tb),
        backward,
        "MulBackward",
        saved=_present(tb if na else None, ta if nb else None),
        array_backward=array_backward,
    )


@register("div", operators=("__truediv__",))
def div(input, other, *, rounding_mode=None):
    """Elementwise true division (``rounding_mode='floor'|'trunc'`` gives no gradient)."""
    if rounding_mode is not None:
        return _rounded_div(input, other, rounding_mode)
    ta, da, tb, db = _operands(input, other, "div")
    if tb is None:
        if ta is not None:
            db = _weak(db, da)
    elif ta is None:
        da = _weak(da, db)
    elif da.ndim != db.ndim and not (da.ndim and db.ndim):  # Note [0-d tensor operands]
        da, db = zero_dim_operands(da, db, True)
    out = _compute(np.true_divide, da, db, "div", ta, tb, True)
    na = ta is not None and ta._rg
    nb = tb is not None and tb._rg
    if not (STATE.enabled and (na or nb)):  # nothing to record (e.g. inside backward)
        return Tensor._wrap(out)
    b = tb if tb is not None else other
    a = (ta if ta is not None else input) if nb else None
    ma = (da.shape, ta._data.dtype) if na else None  # _meta inlined: the hot path
    mb = (db.shape, tb._data.dtype) if nb else None

    def backward(g):
        return (
            _fit(g / b, ma) if na else None,
            _fit(-g * a / (b * b), mb) if nb else None,
        )

    def array_backward(g):  # Note [Array backward] in autograd/engine.py: the same steps
        return (
            _fit_array(_over(g, b), ma) if na else None,
            _fit_array(_over(_times(np.negative(g), a), _times(b._data, b)), mb) if nb else None,
        )

    saved = tuple(t for t in ((tb if (na or nb) else None), (ta if nb else None)) if t is not None)
    return make_result(
        out, (ta, tb), backward, "DivBackward", saved=saved, array_backward=array_backward
    )


Tensor.true_divide = div
Tensor.divide = div


def _rdiv(self, other):
    return div(other, self)


Tensor.__rtruediv__ = _rdiv


@register("neg", operators=("__neg__",))
def neg(input):
    """``-input``."""
    if input._data.dtype.itemsize == 1 and input._data.dtype.kind in "fV":  # float8
        from .. import _float8  # noqa: PLC0415

        _float8.not_implemented("neg", input._data.dtype)
    try:
        out = np.negative(input._data)
    except TypeError:  # bool: NumPy's message names its ufunc
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead."
        ) from None

    return make_result(out, (input,), _negated, "NegBackward", array_backward=_negated)


def _negated(g):
    """``-g``: the Tensor rule and, on an array, the array rule (Note [Array backward])."""
    return (-g,)


Tensor.negative = neg


def __pos__(self):
    return self


Tensor.__pos__ = __pos__


@register("pow", operators=("__pow__",))
def pow(input, exponent):
    """``input ** exponent``; the exponent may be a number or a tensor.

    d/da = p·a^(p-1) (0 where p == 0); d/dp = out·log(a) (0 where a == 0 and p >= 0, NaN
    for a < 0), as PyTorch. An integer tensor to a negative integer number raises a
    RuntimeError; to a tensor of negative exponents it is 0 (1 or ±1 for a base of 1 or -1).
    """
    ta, da, tb, db = _operands(input, exponent, "pow")
    if _kind(db) == "b" and _kind(da) == "b":  # (x ** 2 stops at the first test)
        if tb is None:  # a bool tensor to a Python bool stays bool, as torch (x or all True)
            return Tensor._wrap(da.copy() if db else np.ones_like(da))
        raise NotImplementedError("pow: \"pow\" not implemented for 'Bool'")  # torch's
    if ta is None:  # scalar ** tensor: the scalar is weak (0.7 ** int_tensor is float32)
        ta = Tensor._wrap(np.asarray(da, dtype=_scalar_base_dtype(da, tb._data.dtype)))
        da = ta._data
    power = np.power
    if da.dtype.kind in "iub" and np.result_type(da, db).kind in "iu":
        if tb is None:  # a negative number as exponent: torch's error
            _check_int_power(db)
        else:  # a tensor's negative exponents: 1 and -1 keep a value, the rest truncate to 0
            power = _int_power
    out = _compute(power, da, db, "pow", ta, tb, True)  # 0 ** -1 = inf, (-8) ** 0.5 = NaN
    na = ta._rg
    nb = tb is not None and tb._rg
    p = tb if tb is not None else db

    def backward(g):
        ga = gb = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if na:
                if tb is None and p != 0 and not STATE.enabled:
                    # Note [First-order fast paths]
                    ga = reduce_grad(Tensor._wrap(scaled_power(g._data)), ta)
                elif tb is None:
                    ga = g * 0.0 if p == 0 else reduce_grad(g * p * ta ** (p - 1), ta)
                else:
                    ga = g * tb * ta ** (tb - 1)
                    ga = reduce_grad(where(Tensor._wrap(tb._data == 0), 0.0, ga), ta)
            if nb:
                zero_base = ta._data == 0
                log_a = where(Tensor._wrap(zero_base), -np.inf, _safe_log(ta))
                gb = g * (ta**tb) * log_a
                gb = where(Tensor._wrap(zero_base & (tb._data >= 0)), 0.0, gb)
                gb = reduce_grad(gb, tb)
        return ga, gb

    def scaled_power(gd):
        """g * p * ta ** (p - 1) on the arrays, each step as its op computes it (mul's
        weak scalar, pow's plain one)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            gp = _times(gd, p)
            powd = _compute(np.power, ta._data, p - 1, "pow", ta, None)
            return _compute(np.multiply, gp, powd, "mul", 0, 0)

    def array_backward(g):  # Note [Array backward] in autograd/engine.py
        return (_fit_array(scaled_power(g), (ta._data.shape, ta._data.dtype)), None)

    saved = tuple(
        t for t in (ta if (na or nb) else None, tb if (na or nb) else None) if t is not None
    )
    scalar = tb is None and p != 0  # tensor ** number: the array rule applies
    return make_result(
        out,
        (ta, tb),
        backward,
        "PowBackward",
        saved=saved,
        array_backward=array_backward if scalar else None,
    )


def _scalar_base_dtype(base, exponent_dtype):
    """The dtype of ``base ** t`` for a Python number ``base`` (weak, as in PyTorch)."""
    if exponent_dtype.kind == "V" and not isinstance(base, complex):  # bfloat16 stays
        return exponent_dtype
    dtype = np.result_type(base, np.empty(0, exponent_dtype))
    return _dtypes.fix_float_result(np.empty(0, dtype), exponent_dtype).dtype


def _check_int_power(exponent):
    if np.any(np.asarray(exponent) < 0):
        raise RuntimeError("pow: Integers to negative integer powers are not allowed.")


def _int_power(a, b):
    """Integer ``a ** b`` as torch: where b < 0, 1 for a == 1, ±1 for a == -1, else 0."""
    neg = b < 0
    if not np.any(neg):
        return np.power(a, b)
    out = np.power(a, np.where(neg, 0, b))
    odd = np.where(b % 2 == 0, 1, -1)
    at_neg = np.where(a == 1, 1, np.where(a == -1, odd, 0)).astype(out.dtype)
    return np.where(neg, at_neg, out)


def _safe_log(a: Tensor):
    """log(a) where a != 0, 0 elsewhere (NaN for a < 0, as log)."""
    return where(Tensor._wrap(a._data != 0), a, 1.0).log()


def _rpow(self, other):
    return pow(other, self)


Tensor.__rpow__ = _rpow


# -- not differentiable: integer division, remainder, comparisons -----------------------


class IntegerDivisionByZero(RuntimeError, ZeroDivisionError):
    """Integer division or remainder by zero (PyTorch raises a RuntimeError saying so)."""


def _int_operands(da, db) -> bool:
    return all(getattr(d, "dtype", np.dtype(type(d))).kind in "iub" for d in (da, db))


def _no_complex(stub, da, db):
    """torch's dispatch-stub error for a complex operand of an op without a complex kernel
    (NumPy's TypeError named NumPy's ufunc)."""
    if _kind(da) == "c" or _kind(db) == "c":
        from ._table import _int_error  # noqa: PLC0415 - _table imports this module's peers

        raise _int_error(stub, np.result_type(da, db))


def _check_int_divisor(op, da, db):
    """Integer division by zero raises, as in PyTorch (NumPy would silently give 0)."""
    if _int_operands(da, db) and np.any(np.asarray(db) == 0):
        raise IntegerDivisionByZero(f"{op}: ZeroDivisionError (integer division by zero)")


def _no_bools(kernel, da, db):
    """torch has no Bool kernel for rounded division, remainder and fmod of two bools."""
    if _kind(da) == "b" and _kind(db) == "b":
        raise NotImplementedError(f"\"{kernel}_cpu\" not implemented for 'Bool'")


def _rounded_div(a, b, mode):
    ta, da, tb, db = _operands(a, b, "div")
    if mode not in ("floor", "trunc"):
        raise RuntimeError(  # torch's type
            f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found {mode!r}"
        )
    _no_complex(f"div_{mode}", da, db)
    _no_bools(f"div_{mode}", da, db)
    da, db = wrap_ints(da, db)  # Note [Numbers beyond an integer dtype] in ops/_int_scalars.py
    _check_int_divisor("div", da, db)
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            if mode == "floor":  # Python's floor division: 1.0 // 0.001 == 999
                q = np.floor_divide(da, db)
            elif _int_operands(da, db):  # exact: no round trip through float
                q = np.floor_divide(da, db)
                q = q + (
                    (np.remainder(da, db) != 0) & ((np.asarray(da) < 0) != (np.asarray(db) < 0))
                )
            else:
                q = np.trunc(np.true_divide(da, db))
    except ValueError:
        raise broadcast_error("div", np.shape(da), np.shape(db)) from None
    q = np.asanyarray(q)
    if _int_operands(da, db):
        return Tensor._wrap(q.astype(np.result_type(da, db), copy=False))
    q = _dtypes.fix_float_result(q, _dtype(da), _dtype(db))
    na = ta is not None and ta._rg
    nb = tb is not None and tb._rg
    if not (STATE.enabled and (na or nb)):
        return Tensor._wrap(q)
    ma, mb = _meta(ta, na), _meta(tb, nb)

    def backward(g):  # piecewise constant: a zero gradient, as PyTorch's DivBackward
        zero = g * 0.0
        return (_fit(zero, ma) if na else None, _fit(zero, mb) if nb else None)

    return make_result(q, (ta, tb), backward, "DivBackward")


@register("floor_divide", operators=("__floordiv__",), differentiable=False)
def floor_divide(input, other):
    """``input // other`` rounding down, as Python (no gradient, as PyTorch)."""
    return _rounded_div(input, other, "floor")


def _modulo(name, kernel, quotient, node):
    """remainder / fmod: ``a − b·q`` with ``q`` = floor(a/b) or trunc(a/b).

    d/da = 1;  d/db = −q (piecewise, as PyTorch).
    """

    def op(input, other):
        ta, da, tb, db = _operands(input, other, name)
        _no_complex(name, da, db)
        _no_bools(name, da, db)
        _check_int_divisor(name, da, db)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = _compute(kernel, da, db, name, ta, tb)
        floating = out.dtype.kind in "fV"  # V: bfloat16
        na = ta is not None and ta._rg and floating
        nb = tb is not None and tb._rg and floating
        ma, mb = _meta(ta, na), _meta(tb, nb)
        operands = (da, db) if nb else None  # only d/db reads the values

        def backward(g):
            ga = _fit(g, ma) if na else None
            gb = None
            if nb:
                with np.errstate(divide="ignore", invalid="ignore"):
                    q = quotient(*operands)
                gb = _fit(g * -q.astype(g._data.dtype, copy=False), mb)
            return ga, gb

        out = make_result(out, (ta, tb), backward, node)
        return keeps_arrays(out) if nb else out  # the operands are freed by backward

    op.__name__ = name
    return op


remainder = register("remainder", operators=("__mod__",))(
    _modulo("remainder", np.remainder, np.floor_divide, "RemainderBackward")
)
remainder.__doc__ = """Python-style ``a % b`` = a − b·floor(a/b), with the sign of ``other``.

    d/da = 1;  d/db = −floor(a/b) (piecewise, as PyTorch).
    """
fmod = register("fmod")(
    _modulo("fmod", np.fmod, lambda a, b: np.trunc(np.true_divide(a, b)), "FmodBackward")
)
fmod.__doc__ = """C-style remainder a − b·trunc(a/b), with the sign of ``input``.

    d/da = 1;  d/db = −trunc(a/b) (piecewise, as PyTorch).
    """


def _rmod(self, other):
    return remainder(other, self)


Tensor.__rmod__ = _rmod


def _is_float8(dt):
    return dt is not None and dt.itemsize == 1 and dt.kind in "fV"


def _comparison(name, fn, ordered=False):
    def compare(input, other):
        _, da, _, db = _operands(input, other, name)
        if ordered:
            dt = getattr(da, "dtype", None)
            if _is_float8(dt):  # float8: only eq/ne
                from .. import _float8  # noqa: PLC0415

                _float8.not_implemented(name, da.dtype)
            if (
                dt is None
                or dt.kind == "c"
                or db.__class__ is not np.ndarray
                or db.dtype.kind == "c"
            ):
                _no_complex(name, da, db)  # torch has no complex kernel (checked fully off the
                # path of two real arrays)
        if db.__class__ is int or da.__class__ is int:  # Note [Numbers beyond an integer dtype]
            da, db = wrap_ints(da, db)
        try:
            return Tensor._wrap(np.asanyarray(fn(da, db)))
        except ValueError:
            raise broadcast_error(name, np.shape(da), np.shape(db)) from None

    compare.__name__ = name
    compare.__doc__ = f"Elementwise ``{name}`` comparison; returns a bool tensor (no gradient)."
    return compare


eq = register("eq", operators=("__eq__",), differentiable=False)(_comparison("eq", np.equal))
ne = register("ne", operators=("__ne__",), differentiable=False)(_comparison("ne", np.not_equal))
lt = register("lt", operators=("__lt__",), differentiable=False)(_comparison("lt", np.less, True))
le = register("le", operators=("__le__",), differentiable=False)(
    _comparison("le", np.less_equal, True)
)
gt = register("gt", operators=("__gt__",), differentiable=False)(
    _comparison("gt", np.greater, True)
)
ge = register("ge", operators=("__ge__",), differentiable=False)(
    _comparison("ge", np.greater_equal, True)
)


def _logical(name, fn):
    def logical(input, other):
        _, da, _, db = _operands(input, other, name)
        try:
            return Tensor._wrap(np.asanyarray(fn(da, db)))
        except OverflowError:  # Note [Numbers beyond an integer dtype] in ops/_int_scalars.py
            return Tensor._wrap(np.asanyarray(fn(*wrap_ints(da, db))))
        except TypeError:  # a float or complex operand: torch's bitwise kernel has no such dtype
            dt, a, b = np.result_type(da, db), _dtype(da), _dtype(db)
            raise NotImplementedError(
                f'bitwise_{name}: "bitwise_{name}_cpu" not implemented for '
                f"'{scalar_type_name(dt)}' (operands of dtype {a or type(da).__name__} and "
                f"{b or type(db).__name__})"
            ) from None

    logical.__name__ = name
    return logical


Tensor.__and__ = _logical("and", np.bitwise_and)
Tensor.__or__ = _logical("or", np.bitwise_or)
Tensor.__xor__ = _logical("xor", np.bitwise_xor)


def _invert(self):
    if self._data.dtype.kind not in "biu":
        raise TypeError(
            "~ (operator.invert) is only implemented on integer and Boolean-type tensors, "
            f"got dtype {self._data.dtype}"
        )
    return Tensor._wrap(np.asanyarray(np.invert(self._data)))


Tensor.__invert__ = _invert


# -- dtype change and copy --------------------------------------------------------------


_COMPLEX_TO_REAL_WARNED = [False]  # torch warns once a process (TORCH_WARN_ONCE)


@register("_cast")
def _cast(input, dtype):
    """A copy with another dtype; differentiable between float (and complex) dtypes.

    Note [Complex to real casts]
    A complex tensor becomes real (its real part, as PyTorch) when the user asks for it
    (``.to(float64)``, ``.double()``...: the outermost tapegrad frame is such a conversion)
    or inside a backward pass, where the real part of a gradient is the gradient of a real
    input. Any other complex-to-real cast is an op converting an input it cannot take as
    complex, and raises rather than drop the imaginary part silently.
    """
    dtype = _dtypes.to_dtype(dtype)
    src = input._data.dtype
    if src.kind == "c" and dtype.kind != "c":
        if OWNED.current is None and not _user_conversion():
            raise RuntimeError(
                f"cannot cast a complex tensor ({src}, shape {list(input._data.shape)}) to "
                f"{dtype} implicitly: this op does not support complex tensors, and tapegrad "
                "raises rather than drop the imaginary part. Use .real, .abs() or an explicit "
                f".to({dtype}) first."
            )
        if OWNED.current is None and not _COMPLEX_TO_REAL_WARNED[0]:  # torch's, once
            _COMPLEX_TO_REAL_WARNED[0] = True
            _warn.warn("Casting complex values to real discards the imaginary part")
        out = _fpquiet.call(input._data.real.astype, dtype)
    elif src.itemsize == 1 and src.kind in "fV" or dtype.itemsize == 1 and dtype.kind in "fV":
        out = _float8_cast(input._data, src, dtype)  # Note [float8 as torch] in _float8.py
    else:
        out = _fpquiet.call(input._data.astype, dtype)  # NaN -> int, 1e5 -> float16: silent
    if dtype.kind not in "fc" and not _dtypes.is_floating(dtype):  # bfloat16 is kind "V"
        return Tensor._wrap(out)

    def backward(g):
        return (g._cast(src),)

    return make_result(out, (input,), backward, "ToCopyBackward")


def _float8_cast(data, src, dtype):
    from .. import _float8  # noqa: PLC0415

    if src.itemsize == 1 and src.kind in "fV":
        data = _fpquiet.call(_float8.from_float8, data, np.float32)
    if dtype.itemsize == 1 and dtype.kind in "fV":
        return _float8.to_float8(data, dtype)
    return _fpquiet.call(data.astype, dtype)


_CONVERSIONS = frozenset(("to", "float", "double", "half", "bfloat16", "type", "type_as"))


def _user_conversion() -> bool:
    """Whether the outermost tapegrad frame (the one user code called) is a dtype conversion
    method (Note [Complex to real casts])."""
    frame = sys._getframe(2)
    last = None
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        last = frame
        frame = frame.f_back
    return last is not None and last.f_code.co_name in _CONVERSIONS


@register("clone")
def clone(input, *, memory_format=None):
    """A copy that stays in the graph (gradient passes through unchanged).

    ``memory_format`` is accepted for PyTorch compatibility (the copy is C-ordered)."""
    out = input._data.copy()
    return make_result(out, (input,), _passed_on, "CloneBackward", array_backward=_passed_on)


def _passed_on(g):
    """The gradient unchanged: the Tensor rule and the array rule (Note [Array backward])."""
    return (g,)


# -- forward-mode rules (Note [Forward-mode tangents]); other ops derive theirs -----------


def _mul_jvp(tans, inputs, outs):
    (a, b), (ta, tb) = inputs, tans
    if a is None or b is None:
        return NotImplemented  # a Python scalar operand: its value is not in ``inputs``
    t = None if ta is None else ta * b
    if tb is not None:
        t = a * tb if t is None else t + a * tb
    return [t]


forward_ad.JVP_RULES["MulBackward"] = _mul_jvp
forward_ad.JVP_RULES["NegBackward"] = lambda tans, inputs, outs: [-tans[0]]
