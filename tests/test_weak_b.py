"""Tests for condition mutants no test flipped (tools/weakmut.py, list B): boundary inputs of
ops/householder, index_ops, indexing, inplace, joining, linalg, lowrank, matfun, misc_math,
norm, norm_ops, products, scan, shape_more and sorting, each seen to fail on its mutant.

Bugs found on the way, fixed: index_add, index_copy and index_reduce took negative indices
(torch raises for any index < 0; only index_fill wraps them); circular pad raised where
negative pads crop a dim to size 0 (torch: an empty result); linalg.cond of an empty batch
required grad (torch: plain zeros); histc over an infinite range raised NumPy's ValueError
(torch: a RuntimeError).
"""

import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F


def _np(t):
    return t.detach().numpy()


# ---------------------------------------------------------------- householder / ormqr


def test_ormqr_of_a_4d_batch_matches_torch(torch_mod):
    """ormqr's tau check compares tau's last dim; a (1, 2, 4, 3) batch has tau (1, 2, 3)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1, 2, 4, 3))
    c = rng.standard_normal((1, 2, 4, 2))
    ta, ttau = torch_mod.geqrf(torch_mod.tensor(a))
    ga, gtau = tg.geqrf(tg.tensor(a))
    want = torch_mod.ormqr(ta, ttau, torch_mod.tensor(c))
    got = tg.ormqr(ga, gtau, tg.tensor(c))
    np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- index_ops


@pytest.mark.parametrize("zero_in", ["input", "src"])
def test_scatter_reduce_prod_gradient_with_a_zero_on_one_side_matches_torch(torch_mod, zero_in):
    """A zero in only the input (or only src), and no factor equal to 1: the gradient is the
    product of the other factors, not out / x (0 / 0 there)."""
    x = np.array([2.0, 0.0, 3.0, 5.0]) if zero_in == "input" else np.array([2.0, 4.0, 3.0, 5.0])
    s = np.array([3.0, 7.0, 0.5, 2.0]) if zero_in == "input" else np.array([3.0, 0.0, 0.5, 2.0])
    idx = [1, 1, 2, 0]
    outs = []
    for mod in (torch_mod, tg):
        tx = mod.tensor(x, requires_grad=True)
        ts = mod.tensor(s, requires_grad=True)
        out = tx.scatter_reduce(0, mod.tensor(idx), ts, "prod")
        (out * mod.tensor([1.0, 2.0, 3.0, 4.0], dtype=out.dtype)).sum().backward()
        outs.append((out.detach().numpy(), tx.grad.numpy(), ts.grad.numpy()))
    for want, got in zip(*outs, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_take_and_put_accept_the_index_minus_numel(torch_mod):
    """-numel is the first element, as in torch."""
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    want = torch_mod.take(torch_mod.tensor(x), torch_mod.tensor([-6, 5]))
    got = tg.take(tg.tensor(x), tg.tensor([-6, 5]))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    want = torch_mod.tensor(x).put(torch_mod.tensor([-6]), torch_mod.tensor([9.0]))
    got = tg.tensor(x).put(tg.tensor([-6]), tg.tensor([9.0]))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.filterwarnings("ignore:index_reduce")  # torch's "in beta"
@pytest.mark.parametrize("i", [-1, -3, 3])
def test_index_add_copy_reduce_refuse_negative_and_too_large_indices_as_torch(torch_mod, i):
    """torch's index_add (RuntimeError), index_copy and index_reduce (IndexError) take no
    negative index at all; index_fill wraps -size <= i < 0 (next test)."""
    for mod in (torch_mod, tg):
        x, idx, src = mod.zeros(3, 2), mod.tensor([i]), mod.ones(1, 2)
        with pytest.raises(RuntimeError, match="out of"):
            x.index_add(0, idx, src)
        with pytest.raises(IndexError, match="out of"):
            x.index_copy(0, idx, src)
        with pytest.raises(IndexError, match="out of"):
            x.index_reduce(0, idx, src, "prod")


@pytest.mark.filterwarnings("ignore:index_reduce")  # torch's "in beta"
def test_index_add_copy_reduce_at_the_first_and_last_index_match_torch(torch_mod):
    res = []
    for mod in (torch_mod, tg):
        x, idx = mod.ones(3, 2), mod.tensor([0, 2])
        src = mod.tensor([[2.0, 3.0], [4.0, 5.0]])
        outs = (
            x.index_add(0, idx, src),
            x.index_copy(0, idx, src),
            x.index_reduce(0, idx, src, "prod"),
        )
        res.append([o.numpy() for o in outs])
    for got, want in zip(res[1], res[0], strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("i", [-3, -1])
def test_index_fill_wraps_negative_indices_down_to_minus_size(torch_mod, i):
    want = torch_mod.zeros(3, 2).index_fill(0, torch_mod.tensor([i]), 1.0)
    got = tg.zeros(3, 2).index_fill(0, tg.tensor([i]), 1.0)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(IndexError, match="out of bounds"):
        tg.zeros(3, 2).index_fill(0, tg.tensor([3]), 1.0)
    with pytest.raises(IndexError, match="out of bounds"):
        tg.zeros(3, 2).index_fill(0, tg.tensor([-4]), 1.0)


# ---------------------------------------------------------------- indexing


def test_gather_and_scatter_on_a_0d_input_refuse_a_2d_index(torch_mod):
    """A 0-d input takes a 0-d or 1-D index; a 2-D one raises, as in torch."""
    for mod in (torch_mod, tg):
        idx = mod.zeros(1, 1, dtype=mod.long)
        with pytest.raises(RuntimeError, match="same number of dim"):
            mod.gather(mod.tensor(5.0), 0, idx)
        with pytest.raises(RuntimeError, match="same number of dim"):
            mod.scatter(mod.tensor(5.0), 0, idx, mod.ones(1, 1))


def test_out_of_range_index_message_lists_up_to_8_entries_then_gives_the_shape(torch_mod):
    """tapegrad's message names the index: its values up to 8 entries, its shape beyond."""
    x = tg.zeros(10)
    with pytest.raises(IndexError, match=r"\[0, 1, 2, 3, 4, 5, 6, 20\]"):
        x[tg.tensor([0, 1, 2, 3, 4, 5, 6, 20])]
    with pytest.raises(IndexError, match=r"array\(shape=\[9\], dtype=int64\)"):
        x[tg.tensor([0, 1, 2, 3, 4, 5, 6, 7, 20])]
    with pytest.raises(IndexError):  # torch raises IndexError too
        torch_mod.zeros(10)[torch_mod.tensor([0, 1, 2, 3, 4, 5, 6, 20])]


# ---------------------------------------------------------------- inplace


def test_exp_inplace_without_and_with_grad_matches_torch(torch_mod):
    """exp_ saves self as its output: without a graph there is no node to update."""
    x = np.array([0.5, -1.0, 2.0])
    g = tg.tensor(x)
    g.exp_()
    np.testing.assert_allclose(g.numpy(), np.exp(x), rtol=1e-15)
    with tg.no_grad():
        h = tg.tensor(x, requires_grad=True).clone()
        h.exp_()
    assert h.grad_fn is None
    res = []
    for mod in (torch_mod, tg):
        leaf = mod.tensor(x, requires_grad=True)
        y = leaf * 2
        y.exp_()
        y.sum().backward()
        res.append(leaf.grad.numpy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-14)


def test_half_add_inplace_of_a_float32_tensor_with_alpha_matches_torch(torch_mod):
    """float16 self, float32 other, alpha 3: the half-pair rounding does not apply."""
    a = np.array([1.0, 2.5, -3.25], np.float16)
    b = np.array([0.1, 0.2, 0.3], np.float32)
    want = torch_mod.tensor(a).add_(torch_mod.tensor(b), alpha=3)
    got = tg.tensor(a).add_(tg.tensor(b), alpha=3)
    assert got.dtype == tg.float16
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    want = torch_mod.tensor(a).sub_(torch_mod.tensor(b), alpha=3)
    got = tg.tensor(a).sub_(tg.tensor(b), alpha=3)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_half_add_inplace_of_a_wider_array_overflows_to_inf_silently(torch_mod):
    """A float64 array beside a float16 tensor: the sum rounds once to float16, and an
    overflow to inf is silent, as torch's with a float64 tensor operand."""
    a = np.array([1.0, 2.5, 60000.0], np.float16)
    b = np.array([0.1, 3e4, 2e4])
    want = torch_mod.tensor(a).add_(torch_mod.tensor(b), alpha=3)
    got = tg.tensor(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got.add_(b, alpha=3)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# ---------------------------------------------------------------- joining


def test_cat_refuses_a_generator(torch_mod):
    with pytest.raises(TypeError):
        torch_mod.cat(t for t in [torch_mod.ones(2)])
    with pytest.raises(TypeError, match="sequence of tensors"):
        tg.cat(t for t in [tg.ones(2)])


def test_reflect_pad_takes_value_zero_but_not_one(torch_mod):
    x = np.arange(3.0).reshape(1, 1, 3)
    want = torch_mod.nn.functional.pad(torch_mod.tensor(x), (0, 1), mode="reflect", value=0)
    got = F.pad(tg.tensor(x), (0, 1), mode="reflect", value=0)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    for mod, f in ((torch_mod, torch_mod.nn.functional), (tg, F)):
        with pytest.raises(RuntimeError, match="value"):
            f.pad(mod.tensor(x), (0, 1), mode="reflect", value=1)


def test_reflect_pad_as_large_as_the_dim_raises(torch_mod):
    x = np.arange(3.0).reshape(1, 1, 3)
    for mod, f in ((torch_mod, torch_mod.nn.functional), (tg, F)):
        with pytest.raises(RuntimeError):
            f.pad(mod.tensor(x), (0, 3), mode="reflect")
    want = torch_mod.nn.functional.pad(torch_mod.tensor(x), (0, 2), mode="reflect")
    np.testing.assert_array_equal(F.pad(tg.tensor(x), (0, 2), mode="reflect").numpy(), want)


@pytest.mark.parametrize(
    "pad, n",
    [((1, 0), 1), ((2, 0), 2), ((0, 2), 2), ((-1, -1), 2), ((-2, 0), 2), ((-1, -2), 3)],
)
def test_circular_pad_up_to_the_size_and_crops_to_nothing_match_torch(torch_mod, pad, n):
    """Circular pads of the dim's whole (cropped) size wrap once; crops to size 0 give an
    empty dim, as torch."""
    x = np.arange(float(n)).reshape(1, 1, n)
    want = torch_mod.nn.functional.pad(torch_mod.tensor(x), pad, mode="circular")
    got = F.pad(tg.tensor(x), pad, mode="circular")
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_circular_pad_beyond_the_cropped_size_raises():
    with pytest.raises(RuntimeError, match="too large"):
        F.pad(tg.arange(2.0).reshape(1, 1, 2), (-2, 1), mode="circular")
    with pytest.raises(RuntimeError, match="too large"):
        F.pad(tg.arange(2.0).reshape(1, 1, 2), (3, 0), mode="circular")


# ---------------------------------------------------------------- linalg / lowrank


@pytest.mark.parametrize("which", ["vector_first", "vector_last"])
def test_matmul_of_a_length_1_vector_and_a_4d_stack_matches_torch(torch_mod, which):
    rng = np.random.default_rng(0)
    if which == "vector_first":
        a, b = rng.standard_normal(1), rng.standard_normal((2, 3, 1, 4))
    else:
        a, b = rng.standard_normal((2, 3, 4, 1)), rng.standard_normal(1)
    want = torch_mod.matmul(torch_mod.tensor(a), torch_mod.tensor(b))
    got = tg.matmul(tg.tensor(a), tg.tensor(b))
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-14)


def test_pca_lowrank_with_no_subspace_iteration_matches_torch(torch_mod):
    """niter=0 is allowed; for a rank-2 matrix and q=2 S holds its singular values."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 5))
    _, ts, _ = torch_mod.pca_lowrank(torch_mod.tensor(a), q=2, center=False, niter=0)
    _, gs, _ = tg.pca_lowrank(tg.tensor(a), q=2, center=False, niter=0)
    np.testing.assert_allclose(gs.numpy(), ts.numpy(), rtol=1e-10)
    with pytest.raises(ValueError, match="niter"):
        tg.pca_lowrank(tg.tensor(a), q=2, niter=-1)


# ---------------------------------------------------------------- matfun


@pytest.mark.parametrize("shape", [(2, 0, 3, 3), (0, 3, 3), (2, 3, 0, 0)])
@pytest.mark.parametrize("p", [None, -2, "nuc", "fro", 1])
def test_cond_of_an_empty_batch_is_zeros_without_grad_as_torch(torch_mod, shape, p):
    want = torch_mod.linalg.cond(torch_mod.zeros(shape, requires_grad=True), p)
    got = tg.linalg.cond(tg.zeros(shape, requires_grad=True), p)
    assert tuple(got.shape) == tuple(want.shape)
    assert got.requires_grad == want.requires_grad
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


# ---------------------------------------------------------------- misc_math


def test_isclose_with_zero_rtol_or_atol_matches_torch(torch_mod):
    a, b = [1.0, 2.0, 3.0], [1.0, 2.0 + 1e-9, 3.1]
    for kw in ({"rtol": 0.0}, {"atol": 0.0}, {"rtol": 0.0, "atol": 0.0}):
        want = torch_mod.isclose(torch_mod.tensor(a), torch_mod.tensor(b), **kw)
        got = tg.isclose(tg.tensor(a), tg.tensor(b), **kw)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(RuntimeError):
        tg.isclose(tg.tensor(a), tg.tensor(b), rtol=-1e-9)


def test_addcdiv_of_an_integer_and_a_float_tensor_matches_torch(torch_mod):
    """torch refuses only two integer tensors."""
    x, t1, t2 = [1.0, 2.0], [3, 4], [2.0, 8.0]
    want = torch_mod.addcdiv(torch_mod.tensor(x), torch_mod.tensor(t1), torch_mod.tensor(t2))
    got = tg.addcdiv(tg.tensor(x), tg.tensor(t1), tg.tensor(t2))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-7)
    want = torch_mod.addcdiv(torch_mod.tensor(x), torch_mod.tensor(t2), torch_mod.tensor(t1))
    got = tg.addcdiv(tg.tensor(x), tg.tensor(t2), tg.tensor(t1))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-7)


# ---------------------------------------------------------------- norm


@pytest.mark.parametrize("ord", [2, -2])
def test_matrix_norm_spectral_orders_match_torch(torch_mod, ord):
    a = np.array([[3.0, 1.0], [0.5, 2.0], [1.0, -1.0]])
    want = torch_mod.linalg.matrix_norm(torch_mod.tensor(a), ord)
    got = tg.linalg.matrix_norm(tg.tensor(a), ord)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("ord", [0, 0.5])
def test_vector_norm_of_an_empty_dim_with_ord_0_or_below_1_is_zero(torch_mod, ord):
    """Only ord < 0 and ±inf have no identity on an empty dim."""
    want = torch_mod.linalg.vector_norm(torch_mod.zeros(2, 0), ord, dim=1)
    got = tg.linalg.vector_norm(tg.zeros(2, 0), ord, dim=1)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_vector_norm_double_backward_for_p_between_2_and_3_matches_torch(torch_mod):
    """torch's p >= 2 rule is x·|x|^(p−2): its derivative at x = 0 is NaN there."""
    x = np.array([0.0, 1.0, -2.0])
    res = []
    for mod in (torch_mod, tg):
        t = mod.tensor(x, requires_grad=True)
        (g,) = mod.autograd.grad(mod.linalg.vector_norm(t, 2.5), t, create_graph=True)
        (gg,) = mod.autograd.grad(g.sum(), t)
        res.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-14)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-12, equal_nan=True)


def test_renorm_refuses_p_0_and_takes_maxnorm_0(torch_mod):
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    for mod in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="non-positive-norm"):
            mod.renorm(mod.tensor(x), 0, 0, 1.0)
    want = torch_mod.renorm(torch_mod.tensor(x), 2, 0, 0.0)
    got = tg.renorm(tg.tensor(x), 2, 0, 0.0)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# ---------------------------------------------------------------- products / scan


def test_tensordot_with_dims_0_is_the_outer_product(torch_mod):
    want = torch_mod.tensordot(torch_mod.tensor([1.0, 2.0]), torch_mod.tensor([3.0, 4, 5]), 0)
    got = tg.tensordot(tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4, 5]), dims=0)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(RuntimeError, match="dims"):
        tg.tensordot(tg.ones(2), tg.ones(2), dims=-1)


def test_prod_gradient_over_a_size_2_dim_with_a_zero_matches_torch(torch_mod):
    x = np.array([[0.0, 3.0], [2.0, 5.0]])
    res = []
    for mod in (torch_mod, tg):
        t = mod.tensor(x, requires_grad=True)
        t.prod(1).sum().backward()
        res.append(t.grad.numpy())
    np.testing.assert_array_equal(res[1], res[0])


# ---------------------------------------------------------------- shape_more / sorting


def test_hstack_of_one_vector_matches_torch(torch_mod):
    want = torch_mod.hstack([torch_mod.arange(3.0)])
    np.testing.assert_array_equal(tg.hstack([tg.arange(3.0)]).numpy(), want.numpy())


def test_tensor_split_at_index_0_matches_torch(torch_mod):
    want = torch_mod.tensor_split(torch_mod.arange(5.0), [0, 2])
    got = tg.tensor_split(tg.arange(5.0), [0, 2])
    assert [tuple(t.shape) for t in got] == [tuple(t.shape) for t in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_unfold_with_size_0_matches_torch(torch_mod):
    want = torch_mod.arange(5.0).unfold(0, 0, 1)
    got = tg.arange(5.0).unfold(0, 0, 1)
    assert tuple(got.shape) == tuple(want.shape) == (6, 0)
    with pytest.raises(RuntimeError, match="size"):
        tg.arange(5.0).unfold(0, -1, 1)


def test_topk_with_k_0_is_empty_as_torch(torch_mod):
    want = torch_mod.topk(torch_mod.ones(3), 0)
    got = tg.topk(tg.ones(3), 0)
    assert tuple(got.values.shape) == tuple(want.values.shape) == (0,)
    assert tuple(got.indices.shape) == (0,)


@pytest.mark.parametrize("fill, lo, hi", [(float("inf"), 0.0, 0.0), (1.0, -float("inf"), 1.0)])
def test_histc_over_an_infinite_range_raises_torchs_error(torch_mod, fill, lo, hi):
    """Data all inf (its range is [inf, inf] even after widening by 1) or an infinite bound."""
    for mod in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="not finite"):
            mod.histc(mod.full((3,), fill), bins=4, min=lo, max=hi)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        tg.histc(tg.ones(3), bins=4, min=2.0, max=1.0)
