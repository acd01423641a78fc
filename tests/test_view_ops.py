"""Storage views, copies of views, scatters into views, layouts and resizing (issue 10 V).

Gradients of these ops are checked by the op table (tests/optable/views_v.py); here: the
memory semantics (what shares storage with what), errors, and the cases op_db does not see.
"""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.ops.copy_variants import COPIES


def _f64(values, requires_grad=False):
    return tg.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


# -- as_strided over the storage ------------------------------------------------------------


def test_as_strided_reads_the_base_storage_as_torch(torch_mod):
    base = tg.arange(20.0)
    view = base[5:15]
    tbase = torch_mod.arange(20.0)
    tview = tbase[5:15]
    assert view.storage_offset() == tview.storage_offset() == 5
    for args in [((2, 2), (1, 2)), ((2, 2), (1, 2), 0), ((2, 2), (1, 2), 10), ((3,), (0,), 19)]:
        np.testing.assert_array_equal(view.as_strided(*args).numpy(), tview.as_strided(*args))


def test_as_strided_shares_memory_and_version():
    x = tg.zeros(6)
    y = tg.as_strided(x, (2, 2), (1, 2))
    with tg.no_grad():
        y[1, 1] = 5.0
    assert x.tolist() == [0.0, 0.0, 0.0, 5.0, 0.0, 0.0]
    assert y._vc is x._vc


def test_as_strided_errors():
    x = tg.zeros(3, 3)
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 36"):
        x.as_strided((2, 2), (1, 2), 6)
    with pytest.raises(RuntimeError, match="negative strides"):
        x.as_strided((2,), (-1,))
    with pytest.raises(RuntimeError, match="mismatch in length"):
        x.as_strided((2, 2), (1,))


def test_as_strided_gradient_of_an_overlapping_input_matches_torch(torch_mod):
    """An expanded input shares each storage element between several of its elements: the
    gradient is divided among them, as PyTorch's as_strided_backward does."""
    w = np.random.default_rng(0).uniform(-1, 1, size=(2, 2))
    x = _f64([1.0, 2.0, 3.0], requires_grad=True)
    (got,) = tg.autograd.grad((x.expand(2, 3).as_strided((2, 2), (1, 1)) * _f64(w)).sum(), [x])
    tx = torch_mod.tensor([1.0, 2.0, 3.0], dtype=torch_mod.float64, requires_grad=True)
    ty = tx.expand(2, 3).as_strided((2, 2), (1, 1))
    (want,) = torch_mod.autograd.grad((ty * torch_mod.tensor(w)).sum(), tx)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-12)


def test_as_strided_batched_gradient():
    """Note [Batched gradients]: a jacobian through as_strided in one batched pass."""
    x = _f64(np.arange(6.0), requires_grad=True)
    jac = tg.autograd.functional.jacobian(
        lambda t: t.as_strided((2, 2), (1, 2), 1), x, vectorize=True
    )
    want = np.zeros((2, 2, 6))
    for i in range(2):
        for j in range(2):
            want[i, j, 1 + i + 2 * j] = 1.0
    np.testing.assert_array_equal(jac.numpy(), want)


# -- the *_copy table -------------------------------------------------------------------------

_COPY_ARGS = {
    "alias_copy": ((2, 3), ()),
    "as_strided_copy": ((2, 3), ((2, 2), (1, 2))),
    "detach_copy": ((2, 3), ()),
    "diagonal_copy": ((3, 3), ()),
    "expand_copy": ((2, 1), ((2, 4),)),
    "permute_copy": ((2, 3), ((1, 0),)),
    "select_copy": ((2, 3), (1, -1)),
    "slice_copy": ((2, 5), (1, 1, None, 2)),
    "split_copy": ((4, 2), (2,)),
    "split_with_sizes_copy": ((4, 2), ([1, 3],)),
    "squeeze_copy": ((2, 1), ()),
    "t_copy": ((2, 3), ()),
    "transpose_copy": ((2, 3), (0, 1)),
    "unbind_copy": ((2, 3), ()),
    "unfold_copy": ((2, 4), (1, 2, 2)),
    "unsqueeze_copy": ((2, 3), (0,)),
    "view_copy": ((2, 3), ((3, 2),)),
    "view_as_real_copy": ((2, 3), ()),
    "view_as_complex_copy": ((3, 2), ()),
}
_COPY_DTYPES = {"view_as_real_copy": np.complex128}  # the input's, where not float64


@pytest.mark.parametrize("name", sorted(COPIES))
def test_copy_variants_own_their_memory(name, torch_mod):
    shape, args = _COPY_ARGS[name]
    data = np.arange(float(np.prod(shape))).reshape(shape).astype(_COPY_DTYPES.get(name, float))
    x = tg.tensor(data)
    out = getattr(tg, name)(x, *args)
    want = getattr(torch_mod, name)(torch_mod.tensor(data), *args)
    outs = out if isinstance(out, tuple) else (out,)
    wants = want if isinstance(want, tuple) else (want,)
    assert len(outs) == len(wants)
    for o, w in zip(outs, wants):
        assert str(o.dtype) == str(w.dtype).removeprefix("torch."), name
        np.testing.assert_array_equal(o.numpy(), w.numpy())
        assert not np.may_share_memory(o._data, x._data), name


def test_detach_copy_leaves_the_graph(torch_mod):
    """A detached copy. torch 2.13's says requires_grad=True with a grad_fn whose backward
    is not implemented (a backward through it raises): tapegrad's is plainly detached."""
    x = tg.ones(2, requires_grad=True)
    y = tg.detach_copy(x * 2)
    assert not y.requires_grad and y.grad_fn is None and y.tolist() == [2.0, 2.0]
    t = torch_mod.detach_copy(torch_mod.ones(2, requires_grad=True) * 2)
    with pytest.raises(RuntimeError):
        t.sum().backward()


# -- scatters into views ----------------------------------------------------------------------


def test_scatter_ops_match_torch_and_leave_the_input_alone(torch_mod):
    x = np.arange(24.0).reshape(2, 3, 4)
    cases = [
        ("diagonal_scatter", np.ones((2, 3)), (0, 1, 2)),
        ("select_scatter", np.ones((2, 4)), (1, 0)),
        ("slice_scatter", np.ones((2, 3, 2)), (2, 1, None, 2)),
        ("as_strided_scatter", np.ones((2, 2)), ((2, 2), (1, 3), 4)),
    ]
    for name, src, args in cases:
        ours_in = tg.tensor(x)
        got = getattr(tg, name)(ours_in, tg.tensor(src), *args)
        want = getattr(torch_mod, name)(torch_mod.tensor(x), torch_mod.tensor(src), *args)
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=name)
        np.testing.assert_array_equal(ours_in.numpy(), x)


def test_scatter_size_mismatch_is_a_runtime_error():
    with pytest.raises(RuntimeError, match=r"src size = \[3\], slice size = \[2\]"):
        tg.select_scatter(tg.zeros(2, 2), tg.zeros(3), 0, 0)
    with pytest.raises(IndexError, match="out of range"):
        tg.select_scatter(tg.zeros(2, 2), tg.zeros(2), 0, 2)


def test_as_strided_scatter_gradients(torch_mod):
    """Forward and the src gradient match PyTorch; the input gradient is zero where src
    landed (gradcheck), where PyTorch 2.13's is the opposite (its own gradcheck fails)."""
    rng = np.random.default_rng(1)
    x, s, w = rng.normal(size=(3, 3)), rng.normal(size=(2, 2)), rng.normal(size=(3, 3))
    args = ((2, 2), (1, 2), 1)
    tx, ts = _f64(x, True), _f64(s, True)
    out = tg.as_strided_scatter(tx, ts, *args)
    gx, gs = tg.autograd.grad((out * _f64(w)).sum(), [tx, ts])
    px, ps = (torch_mod.tensor(a, requires_grad=True) for a in (x, s))
    ref = torch_mod.as_strided_scatter(px, ps, *args)
    (want_s,) = torch_mod.autograd.grad((ref * torch_mod.tensor(w)).sum(), ps)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy())
    np.testing.assert_allclose(gs.numpy(), want_s.numpy())
    landed = np.zeros(9, bool)
    landed[[1, 3, 2, 4]] = True
    np.testing.assert_allclose(gx.numpy(), np.where(landed.reshape(3, 3), 0.0, w))
    assert tg.autograd.gradcheck(lambda a: tg.as_strided_scatter(a, ts.detach(), *args), [tx])


# -- layouts and resizing ---------------------------------------------------------------------


def test_empty_strided_and_permuted_layouts(torch_mod):
    for size, stride in [((2, 3), (1, 2)), ((5, 5, 5), (2, 0, 1)), ((0, 3), (3, 1))]:
        t = tg.empty_strided(size, stride, dtype=tg.float64)
        assert t.shape == size and t.stride() == torch_mod.empty_strided(size, stride).stride()
        assert tg.zeros(2).new_empty_strided(size, stride).stride() == t.stride()
    for size, order in [((1, 3, 5), (2, 0, 1)), ((2, 3), (1, 0)), ((), ())]:
        t = tg.empty_permuted(size, order)
        assert t.stride() == torch_mod.empty_permuted(size, order).stride()
    with pytest.raises(RuntimeError, match="not a permutation"):
        tg.empty_permuted((2, 3), (0, 0))


def test_resize_keeps_the_storage_as_torch(torch_mod):
    data = np.arange(12.0)
    for size in [(2, 5), (5,), (2, 2, 2)]:
        x = tg.tensor(data)[2:]
        y = torch_mod.tensor(data)[2:]
        assert x.resize_(size) is x
        y.resize_(size)
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    grown = tg.tensor(data).resize_(4, 4)
    assert grown.shape == (4, 4)
    np.testing.assert_array_equal(grown.numpy().reshape(-1)[:12], data)
    assert tg.resize_as_(tg.zeros(6), tg.zeros(2, 3)).shape == (2, 3)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        tg.zeros(2, requires_grad=True).resize_(4)


# -- conversions ------------------------------------------------------------------------------


def test_conversions_accept_memory_format_and_bfloat16_is_differentiable():
    x = _f64([1.0, 2.5], requires_grad=True)
    for name in ("float", "double", "int", "long", "bool", "half", "bfloat16"):
        assert getattr(x, name)(memory_format=tg.contiguous_format).shape == (2,)
    y = x.bfloat16()
    assert y.dtype == tg.bfloat16 and y.requires_grad
    (g,) = tg.autograd.grad((y.float() * 3.0).sum(), [x])
    assert g.dtype == tg.float64 and g.tolist() == [3.0, 3.0]


def test_tensor_of_bfloat16_dtype():
    """Regression: tg.tensor(data, dtype=tg.bfloat16) raised 'can't convert np.ndarray'."""
    t = tg.tensor([1.0, 2.0], dtype=tg.bfloat16)
    assert t.dtype == tg.bfloat16 and t.float().tolist() == [1.0, 2.0]


# -- aten ops ---------------------------------------------------------------------------------


def test_aten_namespace_is_not_exported_as_functions():
    assert tg.ops.aten.slice(tg.arange(10.0), 0, 2, 9, 3).tolist() == [2.0, 5.0, 8.0]
    assert "slice" not in tg.__all__  # ``from tapegrad import *`` keeps Python's slice
    assert not hasattr(tg, "native_dropout_backward")


def test_native_batch_norm_statistics_and_running_update(torch_mod):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 3, 5))
    for training in (True, False):
        rm, rv = tg.zeros(3, dtype=tg.float64), tg.ones(3, dtype=tg.float64)
        trm, trv = torch_mod.zeros(3, dtype=torch_mod.float64), torch_mod.ones(3).double()
        ours = tg.native_batch_norm(tg.tensor(x), None, None, rm, rv, training, 0.3, 1e-5)
        ref = torch_mod.native_batch_norm(
            torch_mod.tensor(x), None, None, trm, trv, training, 0.3, 1e-5
        )
        for o, r in zip(ours, ref):
            np.testing.assert_allclose(o.numpy(), r.numpy(), atol=1e-12)
        np.testing.assert_allclose(rm.numpy(), trm.numpy(), atol=1e-12)
        np.testing.assert_allclose(rv.numpy(), trv.numpy(), atol=1e-12)


# -- broadcast-shaped ops ---------------------------------------------------------------------


def test_broadcast_shaped_ops_errors_as_torch(torch_mod):
    for ours, theirs, message in [
        (lambda: tg.ones(5).sum_to_size(2), lambda: torch_mod.ones(5).sum_to_size(2), "expandable"),
        (lambda: tg.randn(3).H, lambda: torch_mod.randn(3).H, "only supported on matrices"),
        (
            lambda: tg.fill(tg.ones(2), tg.ones(2)),
            lambda: torch_mod.fill(torch_mod.ones(2), torch_mod.ones(2)),
            "only supports 0-dimension value tensor",
        ),
    ]:
        with pytest.raises(RuntimeError, match=message):
            ours()
        with pytest.raises(RuntimeError, match=message):
            theirs()
    assert tg.broadcast_shapes((3, 1), 2, (1, 1, 1)) == (1, 3, 2)
    assert tg.combinations(tg.arange(3.0), 4).shape == (0, 4)
    assert tg.combinations(tg.arange(3.0), 0).shape == (0,)
