"""The ``*_copy`` ops (``expand_copy``, ``diagonal_copy``, ...): a view op's result as a tensor
that owns its memory, one row per view op; plus ``split_with_sizes`` and the ``unsafe_``
split forms.

Note [Copy variants]
PyTorch exposes every view op ``X`` also as ``X_copy`` (functionalization's form): the same
values, shape and gradient, but never sharing memory with the input. Each row of ``COPIES``
names the view op; the copy is the view followed by ``clone`` (the gradient is the view's,
so second derivatives come from the view op's rule). Ops that return several views
(``unbind``, ``split_with_sizes``) clone each piece.
"""

from __future__ import annotations

from ..tensor import Tensor
from . import aten, complex_ops, joining, shape, shape_more, strided, tri
from ._registry import register

__all__ = ["COPIES", "split_with_sizes", "unsafe_split", "unsafe_chunk"]


@register("split_with_sizes")
def split_with_sizes(input, split_sizes, dim=0):
    """Views of ``input`` along ``dim`` of the given sizes (which must sum to its size)."""
    if not isinstance(split_sizes, (list, tuple)):
        raise TypeError(
            f"split_with_sizes(): argument 'split_sizes' must be a list of ints, not "
            f"{type(split_sizes).__name__}"
        )
    return joining.split(input, list(split_sizes), dim)


@register("unsafe_split")
def unsafe_split(input, split_size, dim=0):
    """:func:`split` (PyTorch's form that skips the views' version checks)."""
    return joining.split(input, split_size, dim)


@register("unsafe_split_with_sizes")
def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """:func:`split_with_sizes` (PyTorch's form that skips the views' version checks)."""
    return split_with_sizes(input, split_sizes, dim)


@register("unsafe_chunk")
def unsafe_chunk(input, chunks, dim=0):
    """:func:`chunk` (PyTorch's form that skips the views' version checks)."""
    return joining.chunk(input, chunks, dim)


def _alias(input):
    return shape.view_result(input._data.view(), input, lambda g: (g,), "AliasBackward")


def _t(input):
    return shape_more.t(input)


# name -> the view op it copies (Note [Copy variants])
COPIES = {
    "alias_copy": _alias,
    "as_strided_copy": strided.as_strided,
    "detach_copy": Tensor.detach,
    "diagonal_copy": tri.diagonal,
    "expand_copy": lambda input, size, *, implicit=False: shape.expand(input, size),
    "permute_copy": shape.permute,
    "select_copy": shape_more.select,
    "slice_copy": aten.slice,
    "split_copy": joining.split,
    "split_with_sizes_copy": split_with_sizes,
    "squeeze_copy": shape.squeeze,
    "t_copy": _t,
    "transpose_copy": shape.transpose,
    "unbind_copy": shape_more.unbind,
    "unfold_copy": shape_more.unfold,
    "unsqueeze_copy": shape.unsqueeze,
    "view_copy": shape.view,
    "view_as_real_copy": complex_ops.view_as_real,
    "view_as_complex_copy": complex_ops.view_as_complex,
}


def _copy_of(name, view):
    def op(input, *args, **kwargs):
        out = view(input, *args, **kwargs)
        if isinstance(out, Tensor):
            return out.clone()
        return type(out)(piece.clone() for piece in out)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (
        f"``{name[: -len('_copy')]}``'s result as a new tensor that shares no memory with "
        "``input`` (Note [Copy variants] in ops/copy_variants.py)."
    )
    return op


for _name, _view in COPIES.items():
    register(_name, method=False)(_copy_of(_name, _view))
del _name, _view
