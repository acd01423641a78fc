"""The ``_`` twins of the hand-written ops: ``exp_``, ``masked_fill_``, ``addmm_``, ``t_``...

Note [Generated in-place twins]
The table ops (ops/_table.py) get their ``<name>_`` from their row; the ops written by
hand get theirs here, from the same :func:`~._table.make_inplace`: the out-of-place op
recorded on an alias of self and written back (Note [In-place ops and the graph]), so
versions, the leaf check, views of graph tensors and result-type checks are those of
every in-place op. :data:`TWINS` lists the ops; each ``_`` form is registered (so the op
table and docs/ops.md list it), and the ``_`` forms of the op's aliases are bound too.

The view ops' ``_`` forms (``t_``, ``transpose_``, ``squeeze_``, ``unsqueeze_``,
``swapaxes_``, ``swapdims_``) change self's shape and strides only, as PyTorch's do: self
takes the view's array and grad_fn, keeps its base, and its version is bumped.
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import make_result, mark_view
from ..grad_mode import STATE
from ..tensor import Tensor
from . import arithmetic
from . import inplace as _inplace
from ._registry import OPS, register
from ._table import make_inplace
from .elementwise import _zero_backward

__all__ = ["TWINS", "VIEW_TWINS"]

# Ops whose torch method has a ``_`` twin, each made by make_inplace.
TWINS = (
    "abs neg sign ceil floor round exp expm1 log log1p sqrt rsqrt sin cos tan tanh sigmoid "
    "relu erf conj_physical pow remainder fmod floor_divide eq ne lt le gt ge "
    "masked_fill masked_scatter scatter scatter_add scatter_reduce index_add index_copy "
    "index_fill index_put index_reduce put cumsum cumprod tril triu renorm "
    "addmm addmv addbmm baddbmm addr"
).split()

VIEW_TWINS = ("t", "transpose", "squeeze", "unsqueeze", "swapaxes", "swapdims")

# Other names torch gives the ``_`` forms: {alias_: target_}.
ALIASES = {
    "absolute_": "abs_",
    "negative_": "neg_",
    "clip_": "clamp_",
    "divide_": "div_",
    "true_divide_": "div_",
    "multiply_": "mul_",
    "subtract_": "sub_",
}

# Python's augmented assignments torch binds beyond += -= *= /= (ops/inplace.py).
IN_PLACE_OPERATORS = {
    "__ifloordiv__": "floor_divide_",
    "__imod__": "remainder_",
    "__ipow__": "pow_",
}

_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}


def _comparison(name: str, fn):
    """``fn`` with its result cast to self's dtype and kept in the graph with a zero
    gradient, as torch's ``eq_`` on a tensor that requires grad (``EqBackward0``)."""
    node = f"{name.capitalize()}Backward"

    def cmp(old, *args, **kwargs):
        out = fn(old, *args, **kwargs)._data.astype(old._data.dtype, copy=False)
        other = args[0] if args else kwargs.get("other")
        if not (isinstance(other, Tensor) and other._rg):
            return make_result(out, (old,), _zero_backward, node)
        shape, dtype, self_rg = other._data.shape, other._data.dtype, old._rg

        def backward(g):  # torch's LtBackward1: zeros for both operands
            zero = Tensor._wrap(np.zeros(g._data.shape, g._data.dtype)) if self_rg else None
            return zero, Tensor._wrap(np.zeros(shape, dtype))

        return make_result(out, (old, other), backward, node)

    cmp.__name__ = name
    return cmp


def _view_twin(name: str, view_fn):
    """``<name>_``: self becomes ``view_fn(self, ...)`` (its shape and strides)."""

    def op_(self, *args, **kwargs):
        if STATE.enabled and self._rg and self.grad_fn is None:
            raise RuntimeError(
                f"{name}_: a leaf Variable that requires grad is being used in an in-place "
                "operation. Wrap it in tg.no_grad() or modify a .clone()."
            )
        view = view_fn(self, *args, **kwargs)
        self._data = view._data
        self._size = None
        self.grad_fn = view.grad_fn
        self._output_nr = view._output_nr
        self._rg = view._rg
        self._vc.bump(f"{name}_")
        if self.grad_fn is not None:
            # The view's node was marked as a view of (old) self; self is its own root now.
            if self._base is not None:
                mark_view(self.grad_fn, self._base)
            else:
                self.grad_fn._view_version = None
        return self

    op_.__name__ = f"{name}_"
    op_.__qualname__ = f"{name}_"
    op_.__doc__ = f"In-place ``{name}``: changes self's shape and strides only; returns self."
    return op_


@register("fill_diagonal_", inplace=True)
def fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal (all indices equal) with ``fill_value``; returns self.

    As ``torch.Tensor.fill_diagonal_``: ``self`` has >= 2 dims, all of the same length
    unless it is 2-D; ``wrap=True`` continues a tall matrix's diagonal every ``cols + 1``
    rows. d/dself = g with zeros on the diagonal; d/dvalue = 0 (a number).
    """
    shape = self._data.shape
    if len(shape) < 2:
        raise RuntimeError("fill_diagonal_: dimensions must larger than 1")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise RuntimeError("fill_diagonal_: all dimensions of input must be of equal length")
    if len(shape) == 2:
        rows, cols = shape
        n = rows if wrap else min(rows, cols)
        flat = np.arange(n) * (cols + 1)
        flat = flat[flat < rows * cols]
        key = np.unravel_index(flat, shape)
    else:
        key = (np.arange(shape[0]),) * len(shape)

    def fast(a):
        a[key] = fill_value

    def graph(old):
        return _inplace.index_put(old, key, True, fill_value, out=self._data)

    return _inplace._run(self, "fill_diagonal_", (), graph, fast)


def _not_differentiable(fn, aten_name: str):
    """``fn`` whose recorded Node (named ``NotImplemented``, as torch's) raises PyTorch's
    "derivative for aten::<op> is not implemented" at backward: ``floor_divide`` (torch
    has no derivative for it, and ``x // 2`` silently got a zero gradient here)."""
    message = f"derivative for aten::{aten_name} is not implemented"

    def refuse(*grads):
        raise RuntimeError(message)

    def op(*args, **kwargs):
        out = fn(*args, **kwargs)
        node = out.grad_fn
        if node is not None:
            node._backward = refuse
            node._array_backward = None  # (Note [Array backward]: no way around refuse)
            node._name = "NotImplemented"
        return out

    op.__name__ = fn.__name__
    op.__doc__ = fn.__doc__
    return op


def _floor_divide_without_derivative():
    info = OPS["floor_divide"]
    fn = _not_differentiable(info.fn, "floor_divide")
    info.fn = fn
    Tensor.floor_divide = Tensor.__floordiv__ = fn
    Tensor.__rfloordiv__ = lambda self, other: fn(other, self)
    return _not_differentiable(arithmetic.floor_divide, "floor_divide_")


def _install():
    floor_divide_in_place = _floor_divide_without_derivative()
    for name in TWINS:
        info = OPS[name]
        differentiable = info.differentiable and name not in _COMPARISONS
        fn = _comparison(name, info.fn) if name in _COMPARISONS else info.fn
        if name == "floor_divide":
            fn = floor_divide_in_place
        register(f"{name}_", inplace=True, differentiable=differentiable)(make_inplace(name, fn))
        for alias in info.aliases:
            if getattr(Tensor, alias, None) is info.fn:
                setattr(Tensor, f"{alias}_", getattr(Tensor, f"{name}_"))
    for name in VIEW_TWINS:
        register(f"{name}_", inplace=True)(_view_twin(name, OPS[name].fn))
    for alias, target in ALIASES.items():
        if not hasattr(Tensor, alias):
            setattr(Tensor, alias, getattr(Tensor, target))
    for dunder, target in IN_PLACE_OPERATORS.items():
        setattr(Tensor, dunder, getattr(Tensor, target))


_install()
