"""0-d and empty rows for test_edge_shapes: the view-copy, view-scatter, storage and aten
ops of issue 10 part V."""


def _pieces(out):
    return tuple(out)


def rows(E, X, B, U):
    """The rows, built with test_edge_shapes' row classes and shape lists."""
    E2 = [[(0, 3)], [(2, 0)]]  # empty 2-D variants
    return [
        # copies of views
        E("alias_copy", lambda m, x: m.alias_copy(x), [()], U),
        E("as_strided_copy", lambda m, x: m.as_strided_copy(x, (), ()), [()]),
        E(
            "as_strided_copy",
            lambda m, x: m.as_strided_copy(x, (0, 2), (1, 1)),
            None,
            [[(0,)], [(2, 0)]],
            name="empty",
        ),
        E("diagonal_copy", lambda m, x: m.diagonal_copy(x), X([()]), E2, names=("diagonal",)),
        E("expand_copy", lambda m, x: m.expand_copy(x, (2, 0)), [()], [[(0,)], [(2, 0)]]),
        E(
            "permute_copy",
            lambda m, x: m.permute_copy(x, ()),
            [()],
            [X([(0,)])],
            names=("permute",),
        ),
        E(
            "split_copy",
            lambda m, x: _pieces(m.split_copy(x, 1)),
            X([()]),
            [[(0,)], [(0, 2)]],
            names=("split",),
        ),
        E(
            "split_with_sizes_copy",
            lambda m, x: _pieces(m.split_with_sizes_copy(x, [0, 0])),
            X([()]),
            [[(0,)], [(0, 2)]],
            names=("split",),
        ),
        E("squeeze_copy", lambda m, x: m.squeeze_copy(x), [()], [[(0,)], [(1, 0)]]),
        E("t_copy", lambda m, x: m.t_copy(x), [()], E2),
        E("transpose_copy", lambda m, x: m.transpose_copy(x, 0, -1), [()], E2),
        E(
            "unbind_copy",
            lambda m, x: _pieces(m.unbind_copy(x, 1)),
            X([()]),
            E2,
            names=("unbind",),
        ),
        E("unfold_copy", lambda m, x: m.unfold_copy(x, 0, 1, 1), [()], [[(1, 0)], [(2, 0)]]),
        E("unsqueeze_copy", lambda m, x: m.unsqueeze_copy(x, 0), [()], U),
        E("view_copy", lambda m, x: m.view_copy(x, (-1,)), [()], U),
        E("detach_copy", lambda m, x: m.detach_copy(x) * 2.0, [()], U),
        E(
            "select_copy",
            lambda m, x: m.select_copy(x, 0, 0),
            X([()]),
            [[(1, 0)], X([(0, 2)])],
            names=("select",),
        ),
        E(
            "slice_copy",
            lambda m, x: m.slice_copy(x, 0, 0, 1),
            X([()]),
            [[(0,)], [(2, 0)]],
            names=("slice",),
        ),
        # split forms
        E(
            "split_with_sizes",
            lambda m, x: _pieces(m.split_with_sizes(x, [0])),
            X([()]),
            [[(0,)], [(0, 2)]],
            names=("split",),
        ),
        E(
            "unsafe_split",
            lambda m, x: _pieces(m.unsafe_split(x, 2)),
            X([()]),
            [[(0,)]],
            names=("split",),
        ),
        E(
            "unsafe_split_with_sizes",
            lambda m, x: _pieces(m.unsafe_split_with_sizes(x, [0])),
            X([()]),
            [[(0,)]],
            names=("split",),
        ),
        E(
            "unsafe_chunk",
            lambda m, x: _pieces(m.unsafe_chunk(x, 2)),
            X([()]),
            [[(0,)]],
            names=("chunk",),
        ),
        # storage views and scatters
        E("as_strided", lambda m, x: m.as_strided(x, (), ()), [()]),
        E(
            "as_strided",
            lambda m, x: m.as_strided(x, (0, 2), (1, 1)),
            None,
            [[(0,)], [(2, 0)]],
            name="empty",
        ),
        # input detached: PyTorch 2.13's input gradient is wrong (tests/test_view_ops.py)
        E(
            "as_strided_scatter",
            lambda m, x, s: m.as_strided_scatter(x.detach(), s, tuple(s.shape), (1,) * s.ndim),
            [(), ()],
            [[(0,), (0,)], [(2, 0), (0,)]],
        ),
        E(
            "diagonal_scatter",
            lambda m, x, s: m.diagonal_scatter(x, s),
            X([(), ()]),
            [[(0, 3), (0,)], [(2, 0), (0,)]],
        ),
        E(
            "select_scatter",
            lambda m, x, s: m.select_scatter(x, s, 0, 0),
            X([(), ()]),
            [[(1, 0), (0,)], [(2, 0), (0,)]],
        ),
        E(
            "slice_scatter",
            lambda m, x, s: m.slice_scatter(x, s, 0, 0, 0),
            X([(), ()]),
            [[(0,), (0,)], [(2, 0), (0, 0)]],
        ),
        E("slice", lambda m, x: m.ops.aten.slice(x, 0, 0, 1), X([()]), [[(0,)], [(2, 0)]]),
        E(
            "native_dropout_backward",
            lambda m, g: m.ops.aten.native_dropout_backward(g, g > 0, 2.0),
            [()],
            U,
        ),
        E(
            "constant_pad_nd",
            lambda m, x: m.constant_pad_nd(x, (1, 1)),
            X([()]),
            E2,
            names=("pad",),
        ),
        # broadcast-shaped
        E(
            "broadcast_tensors",
            lambda m, a, b: _pieces(m.broadcast_tensors(a, b)),
            [(), ()],
            B,
        ),
        E("sum_to_size", lambda m, x: x.sum_to_size(()), [()], [[(0,)], [(2, 0)]]),
        E("fill", lambda m, x, v: m.fill(x, v), [(), ()], [[(0,), ()], [(2, 0), ()]]),
        E("combinations", lambda m, x: m.combinations(x, 2), X([()]), [[(0,)]]),
        # aten norms
        E(
            "native_layer_norm",
            lambda m, x: m.native_layer_norm(x, (3,), None, None, 1e-5),
            X([()]),
            [[(0, 3)]],
            names=("layer_norm",),
        ),
        E(
            "native_batch_norm",
            lambda m, x: m.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5),
            X([()]),
            [X([(0, 2)])],
        ),
        E(
            "native_group_norm",
            lambda m, x: m.native_group_norm(x, None, None, 0, 2, 3, 1, 1e-5),
            X([()]),
            [[(0, 2, 3)]],
        ),
    ]
