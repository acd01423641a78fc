"""x[key] in every form against NumPy (values) and PyTorch (values and gradients),
repeated-index accumulation, views, errors, and the shape/joining ops' edge cases."""

import numpy as np
import pytest

import tapegrad as tg

X = np.arange(24.0).reshape(2, 3, 4)

KEYS = [
    1,
    -1,
    (1, 2),
    (slice(None), 1),
    (Ellipsis, 1),
    (None, 0, Ellipsis, None),
    (slice(None), slice(None, None, 2)),
    ([0, 1, 1],),
    (slice(None), [2, 0, 2]),
    ([1, 0], slice(None), [3, 3]),
    ([1, 0], [2, 2], [3, 0]),
    (np.array([True, False]),),
    (slice(None), np.array([True, False, True])),
    (X > 10,),
    (slice(None), X[0] > 3),
    (0, [1, 2], slice(1, 3)),
    ([[0, 1], [1, 1]],),
    (Ellipsis, [0, 0, 3]),
]


def _torch_key(torch, key):
    key = key if isinstance(key, tuple) else (key,)
    return tuple(torch.tensor(k) if isinstance(k, (list, np.ndarray)) else k for k in key)


@pytest.mark.parametrize("key", KEYS, ids=[repr(k)[:40] for k in KEYS])
@pytest.mark.parametrize("as_tensor", [False, True])
def test_getitem_matches_numpy_and_torch(key, as_tensor, torch_mod):
    x = tg.tensor(X, requires_grad=True)
    tkey = key
    if as_tensor:  # index arrays given as tapegrad tensors
        tkey = tuple(
            tg.tensor(k) if isinstance(k, (list, np.ndarray)) else k
            for k in (key if isinstance(key, tuple) else (key,))
        )
    out = x[tkey]
    np.testing.assert_array_equal(out.detach().numpy(), X[key if isinstance(key, tuple) else key])
    w = np.random.default_rng(0).standard_normal(out.shape)
    (out * tg.tensor(w)).sum().backward()
    xt = torch_mod.tensor(X, requires_grad=True)
    (xt[_torch_key(torch_mod, key)] * torch_mod.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


def test_negative_steps_match_numpy():
    x = tg.tensor(X, requires_grad=True)
    key = (slice(None, None, -1), slice(2, 0, -1), slice(None, None, -3))
    out = x[key]
    np.testing.assert_array_equal(out.detach().numpy(), X[key])
    out.sum().backward()
    expected = np.zeros_like(X)
    expected[key] = 1
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_repeated_indices_accumulate():
    x = tg.tensor(np.zeros((4, 2)), requires_grad=True)
    idx = np.array([3, 3, 0, 3, -1])
    x[idx].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[:, 0], [1, 0, 0, 4])
    x.grad = None
    x[[1, 1, 1], [0, 0, 1]].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[1], [2, 1])
    x.grad = None
    x[tg.tensor([2, 2]), :].sum().backward()  # with a trailing slice
    np.testing.assert_array_equal(x.grad.numpy()[2], [2, 2])


def test_large_repeated_index_gradient_matches_add_at():
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 7, 5000)
    for shape in [(7,), (7, 3), (7, 2, 2)]:
        x = tg.tensor(np.zeros(shape), requires_grad=True)
        g = rng.standard_normal((5000,) + shape[1:])
        x[idx].backward(tg.tensor(g))
        expected = np.zeros(shape)
        np.add.at(expected, idx, g)
        np.testing.assert_allclose(x.grad.numpy(), expected)


def test_basic_index_is_a_view_sharing_the_version_counter():
    base = tg.tensor(X)
    v = base[1, :, ::2]
    assert v._vc is base._vc
    base._data[1, 0, 0] = -5
    assert v[0, 0].item() == -5
    adv = base[[0, 1]]
    assert adv._vc is not base._vc
    assert base[0, 0, 0].shape == ()


def test_second_derivative_through_indexing():
    x = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64, requires_grad=True)
    y = (x[[0, 0, 2]] ** 3).sum()
    (g,) = tg.autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [6.0, 0.0, 27.0])
    (h,) = tg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), [12.0, 0.0, 18.0])


@pytest.mark.parametrize(
    "key, what",
    [
        (5, "5"),
        ((0, 3), "3"),
        ([0, 7], "7"),
        ((slice(None), slice(None), [-5]), "-5"),
        (np.array([True, False, True]), "boolean"),
        ((0, 0, 0, 0), "too many"),
        (1.5, "float"),
    ],
)
def test_bad_index_raises_index_error_naming_index_and_shape(key, what):
    with pytest.raises(IndexError) as err:
        tg.tensor(X)[key]
    msg = str(err.value)
    assert "index" in msg and "[2, 3, 4]" in msg


def test_float_tensor_index_is_rejected():
    with pytest.raises(IndexError, match="integer or bool"):
        tg.tensor(X)[tg.tensor([0.0, 1.0])]


def test_named_ops_errors():
    x = tg.tensor(X)
    with pytest.raises(IndexError, match=r"index_select: index 3 .*dimension 1 with size 3"):
        x.index_select(1, tg.tensor([0, 3]))
    with pytest.raises(RuntimeError, match="gather: index -1"):  # torch's type
        x.gather(2, tg.tensor(np.full((2, 3, 1), -1)))
    with pytest.raises(RuntimeError, match="gather: index must have the same number of dims"):
        x.gather(0, tg.tensor([0]))
    with pytest.raises(RuntimeError, match=r"masked_fill: mask of shape \[2\]"):
        x.masked_fill(tg.tensor([True, False]), 0.0)
    with pytest.raises(TypeError, match="masked_fill: mask must be a bool"):
        x.masked_fill(tg.tensor([1, 0, 1, 0]), 0.0)


def test_scatter_add_repeats_and_src_larger_than_index(torch_mod):
    x = np.zeros((2, 3))
    src = np.arange(8.0).reshape(2, 4)
    idx = np.array([[0, 0, 2], [1, 1, 1]])
    ours = tg.tensor(x).scatter_add(1, tg.tensor(idx), tg.tensor(src))
    ref = torch_mod.tensor(x).scatter_add(1, torch_mod.tensor(idx), torch_mod.tensor(src))
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    s = tg.tensor(src, requires_grad=True)
    tg.tensor(x).scatter_add(1, tg.tensor(idx), s).sum().backward()
    np.testing.assert_array_equal(s.grad.numpy(), [[1, 1, 1, 0], [1, 1, 1, 0]])


# -- shape and joining ops: errors and edge cases ---------------------------------------


def test_cat_and_stack_errors_name_op_and_all_shapes():
    a, b = tg.zeros(2, 3), tg.zeros(2, 4)
    with pytest.raises(RuntimeError, match=r"cat: .*\[2, 3\], \[2, 4\], \[2, 3\]"):
        tg.cat([a, b, a], dim=0)
    with pytest.raises(RuntimeError, match=r"stack: .*\[2, 3\], \[2, 4\]"):
        tg.stack([a, b])
    with pytest.raises(TypeError, match="cat: expected a sequence"):
        tg.cat(a)


def test_cat_promotes_dtypes_and_skips_legacy_empty(torch_mod):
    got = []
    for m in (tg, torch_mod):
        a = m.tensor([[1.0, 2.0]], dtype=m.float32)
        b = m.tensor([[3.0, 4.0]], dtype=m.float64, requires_grad=True)
        out = m.cat([a, m.zeros(0), b])
        assert out.dtype == m.float64 and tuple(out.shape) == (2, 2)
        (out * m.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=m.float64)).sum().backward()
        assert b.grad.dtype == m.float64
        got.append((out.detach().numpy(), b.grad.numpy()))
    for ours, theirs in zip(*got):
        np.testing.assert_array_equal(ours, theirs)


def _pieces_match(ours, ref, x_ours, x_ref):
    """Same pieces (shapes and values) and the same gradient through all of them."""
    assert len(ours) == len(ref)
    for o, r in zip(ours, ref):
        assert o.shape == tuple(r.shape)
        np.testing.assert_array_equal(o.detach().numpy(), r.detach().numpy())
    sum((o * (k + 1.0)).sum() for k, o in enumerate(ours)).backward()
    sum((r * (k + 1.0)).sum() for k, r in enumerate(ref)).backward()
    np.testing.assert_array_equal(x_ours.grad.numpy(), x_ref.grad.numpy())


def test_split_chunk_match_torch(torch_mod):
    x = np.arange(14.0).reshape(2, 7)
    for args in [(3, 1), ([2, 5], 1), (1, 0), (7, 1), (2, -1)]:
        xt, xr = tg.tensor(x, requires_grad=True), torch_mod.tensor(x, requires_grad=True)
        _pieces_match(xt.split(*args), xr.split(*args), xt, xr)
    for n in (1, 3, 4, 7, 9):
        xt, xr = tg.tensor(x, requires_grad=True), torch_mod.tensor(x, requires_grad=True)
        _pieces_match(xt.chunk(n, 1), xr.chunk(n, 1), xt, xr)
    with pytest.raises(RuntimeError, match=r"split: sizes \[2, 2\] must .* sum to the size 7"):
        tg.tensor(x).split([2, 2], 1)


def test_split_pieces_are_views():
    x = tg.tensor(np.arange(6.0))
    a, b = x.split(3)
    assert a._vc is x._vc and b._vc is x._vc


def test_narrow_flatten_unflatten_errors():
    x = tg.zeros(2, 3)
    with pytest.raises(RuntimeError, match="narrow: start"):  # torch's type for the length
        x.narrow(1, 2, 2)
    with pytest.raises(IndexError, match="narrow: start out of range"):  # and the start's
        x.narrow(1, 4, 0)
    with pytest.raises(RuntimeError, match="unflatten: sizes"):
        x.unflatten(1, (2, 2))
    assert tg.zeros(2, 0, 3).flatten(1).shape == (2, 0)
    assert tg.tensor(3.0).flatten().shape == (1,)


def test_flip_and_repeat_are_copies():
    x = tg.tensor([1.0, 2.0])
    f = x.flip(0)
    f._data[0] = 9.0
    assert x._data[1] == 2.0 and f._vc is not x._vc


def test_pad_modes_match_torch(torch_mod):
    import torch.nn.functional as F  # noqa: PLC0415

    from tapegrad.ops.joining import pad  # noqa: PLC0415

    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    for mode in ("constant", "reflect", "replicate", "circular"):
        for widths in [(1, 2), (1, 1, 2, 1), (2, 0, 0, 1)]:
            ours = pad(tg.tensor(x), widths, mode=mode).numpy()
            ref = F.pad(torch_mod.tensor(x), widths, mode=mode).numpy()
            np.testing.assert_allclose(ours, ref, err_msg=f"{mode} {widths}")
    with pytest.raises(RuntimeError, match="reflect padding"):
        pad(tg.tensor(x), (4, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="even length"):
        pad(tg.tensor(x), (1,))
