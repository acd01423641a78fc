"""Table rows: the view-copy, view-scatter and storage ops, aten's native ops (issue 10 V)."""

import numpy as np

from . import OpCase


def _aten_slice(m):
    """aten's slice: ``torch.ops.aten.slice`` / ``tapegrad.ops.aten.slice``."""
    return m.ops.aten.slice


def _pieces(out):
    """A weighted sum of a tuple of pieces (one output for the table)."""
    return sum((p * (i + 1.0)).sum() for i, p in enumerate(out))


def _bool_mask(m):
    return m.tensor(np.array([[True, False, True], [False, True, True]]))


CASES = [
    # copies of views (Note [Copy variants])
    OpCase("alias_copy", lambda m, x: m.alias_copy(x) * 2.0, [(2, 3)]),
    OpCase(
        "as_strided_copy",
        lambda m, x: m.as_strided_copy(x.clone(), (2, 2), (1, 3), 1),
        [(3, 3)],
    ),
    OpCase("diagonal_copy", lambda m, x: m.diagonal_copy(x, 1, 0, 2), [(3, 2, 4)]),
    OpCase("expand_copy", lambda m, x: m.expand_copy(x, (2, 3, 4)), [(3, 1)]),
    OpCase("permute_copy", lambda m, x: m.permute_copy(x, (2, 0, 1)), [(2, 3, 4)]),
    OpCase("select_copy", lambda m, x: m.select_copy(x, 1, -1), [(2, 3, 4)]),
    OpCase("slice_copy", lambda m, x: m.slice_copy(x, -1, 1, None, 2), [(2, 5)]),
    OpCase("split_copy", lambda m, x: _pieces(m.split_copy(x, 2, 1)), [(2, 5)]),
    OpCase(
        "split_with_sizes_copy",
        lambda m, x: _pieces(m.split_with_sizes_copy(x, [1, 3], 1)),
        [(2, 4)],
    ),
    OpCase("squeeze_copy", lambda m, x: m.squeeze_copy(x, 1), [(3, 1, 2)]),
    OpCase("t_copy", lambda m, x: m.t_copy(x), [(2, 3)]),
    OpCase("transpose_copy", lambda m, x: m.transpose_copy(x, 0, -1), [(2, 3, 4)]),
    OpCase("unbind_copy", lambda m, x: _pieces(m.unbind_copy(x, 1)), [(2, 3)]),
    OpCase("unfold_copy", lambda m, x: m.unfold_copy(x, 1, 2, 1), [(2, 4)]),
    OpCase("unsqueeze_copy", lambda m, x: m.unsqueeze_copy(x, -1), [(3, 2)]),
    OpCase("view_copy", lambda m, x: m.view_copy(x, (3, 2)), [(2, 3)]),
    # split forms
    OpCase("split_with_sizes", lambda m, x: _pieces(x.split_with_sizes([2, 0, 1])), [(3, 2)]),
    OpCase("unsafe_split", lambda m, x: _pieces(m.unsafe_split(x, 2, -1)), [(2, 5)]),
    OpCase(
        "unsafe_split_with_sizes",
        lambda m, x: _pieces(x.unsafe_split_with_sizes([2, 2], 0)),
        [(4, 2)],
    ),
    OpCase("unsafe_chunk", lambda m, x: _pieces(x.unsafe_chunk(3, 1)), [(2, 7)]),
    # storage views. as_strided reads the storage: each row takes it of a clone (which owns
    # its memory) so that it is a function of the values (vmap's inputs are slices of one
    # batch, the non-contiguous test's are Fortran-ordered)
    OpCase("as_strided", lambda m, x: m.as_strided(x.clone(), (2, 2), (1, 2), 1), [(3, 3)]),
    OpCase(
        "as_strided",
        lambda m, x: x.clone().as_strided((3, 3), (1, 1)),  # overlapping windows: grads add
        [(5,)],
        name="overlapping",
    ),
    OpCase(
        "as_strided",
        # storage offsets count from the base: elements 1 and 3 of x (x[2:4:2] would be 2)
        lambda m, x: x.clone()[1:].as_strided((2,), (2,), 1),
        [(5,)],
        name="base-offset",
    ),
    OpCase(
        "as_strided",
        lambda m, x: x.clone().t().as_strided((2, 3), (3, 1)),
        [(3, 2)],
        name="t",
    ),
    # scatters into views
    OpCase(
        "diagonal_scatter",
        lambda m, x, s: m.diagonal_scatter(x, s, -1, 1, 2),
        [(2, 3, 3), (2, 2)],
    ),
    OpCase("select_scatter", lambda m, x, s: m.select_scatter(x, s, 1, -1), [(2, 3, 4), (2, 4)]),
    OpCase(
        "slice_scatter",
        lambda m, x, s: m.slice_scatter(x, s, 1, 1, None, 2),
        [(2, 5), (2, 2)],
    ),
    OpCase(
        "as_strided_scatter",
        lambda m, x, s: m.as_strided_scatter(x, s, (2, 2), (1, 2), 1),
        [(3, 3), (2, 2)],
        torch=False,  # PyTorch 2.13's input gradient is wrong (tests/test_view_ops.py)
    ),
    # broadcast-shaped ops
    OpCase(
        "broadcast_tensors",
        lambda m, a, b: _pieces(m.broadcast_tensors(a, b)),
        [(3, 1), (2,)],
    ),
    OpCase("sum_to_size", lambda m, x: x.sum_to_size(3, 1), [(2, 3, 4)]),
    OpCase("fill", lambda m, x, v: m.fill(x, v.sum()), [(2, 3), (2,)]),
    OpCase("combinations", lambda m, x: m.combinations(x, 2), [(4,)]),
    OpCase(
        "combinations",
        lambda m, x: m.combinations(x, 3, with_replacement=True),
        [(3,)],
        name="replacement",
    ),
    # aten ops
    OpCase("slice", lambda m, x: _aten_slice(m)(x, 1, 1, 4, 2), [(2, 5)]),
    OpCase(
        "native_dropout_backward",
        lambda m, g: m.ops.aten.native_dropout_backward(g, _bool_mask(m), 2.0),
        [(2, 3)],
    ),
    OpCase("constant_pad_nd", lambda m, x: m.constant_pad_nd(x, (1, -1, 0, 2), 0.5), [(2, 3)]),
    OpCase(
        "native_layer_norm",
        lambda m, x, w, b: m.native_layer_norm(x, (3,), w, b, 1e-5)[0],
        [(2, 3), (3,), (3,)],
    ),
    OpCase(
        "native_batch_norm",
        lambda m, x, w, b: m.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5)[0],
        [(4, 2, 3), (2,), (2,)],
    ),
    OpCase(
        "native_group_norm",
        lambda m, x, w, b: m.native_group_norm(x, w, b, 2, 4, 3, 2, 1e-5),
        [(2, 4, 3), (4,), (4,)],
    ),
]
