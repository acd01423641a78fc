"""The kernels a small GPT's step spends its time in, at the GPT's shapes and at the edges,
against torch: exact GELU's float32 forward (19 NumPy passes, the sign copied as a bit),
cross entropy's fused path (flat gathers, one-pass backward) and attention (causal
rows). Values and gradients, float32 and float64, second order where the op has it."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F


def _both(torch, fn_tg, fn_torch, *arrays, grad=None):
    """(values, grads) of tapegrad and torch for the same inputs."""
    out = []
    for m, fn in ((tg, fn_tg), (torch, fn_torch)):
        ts = [m.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
        y = fn(*ts)
        if grad is None:
            y.sum().backward()
        else:
            y.backward(m.tensor(grad))
        out.append((y.detach().numpy(), [t.grad.numpy() for t in ts if t.grad is not None]))
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["contiguous", "strided", "gpt"])
def test_gelu_matches_torch(torch_mod, dtype, layout):
    rng = np.random.default_rng(0)
    if layout == "gpt":  # 16 x 64 x 256: the size the GPT's MLP runs at
        x = rng.standard_normal((16, 64, 256)) * 3
    else:
        x = rng.standard_normal((40, 50)) * 3
    x = x.astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)

    def take(m):
        # a non-contiguous view (a column slice of a transpose) exercises the bit copy of
        # the sign on strided memory
        return (lambda t: m.nn.functional.gelu(t.mT[:, ::2])) if layout == "strided" else None

    f_tg = take(tg) or tg.nn.functional.gelu
    f_torch = take(torch_mod) or torch_mod.nn.functional.gelu
    gg = g.swapaxes(-1, -2)[:, ::2].copy() if layout == "strided" else g
    (y, (gx,)), (ry, (rgx,)) = _both(torch_mod, f_tg, f_torch, x, grad=gg)
    tol = dict(rtol=1.3e-6, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y, ry, **tol)
    np.testing.assert_allclose(gx, rgx, **tol)


def test_gelu_float32_near_zero_and_signed_zero():
    x = np.array([0.0, -0.0, 1e-8, -1e-8, 1e-3, -1e-3, 1e-38, -1e-38], np.float32)
    y = tg.nn.functional.gelu(tg.tensor(x)).numpy()
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(y, x64 * (0.5 + x64 / np.sqrt(2 * np.pi)), rtol=1e-6, atol=1e-12)
    assert np.all(y[x > 0] > 0) and np.all(y[x < 0] < 0) and np.all(y[x == 0] == 0)


def test_gelu_second_order_float64():
    x = tg.tensor(np.random.default_rng(1).standard_normal((3, 4)), requires_grad=True)
    assert tg.autograd.gradcheck(tg.nn.functional.gelu, (x,))
    assert tg.autograd.gradgradcheck(tg.nn.functional.gelu, (x,))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ignore", [False, True])
def test_cross_entropy_gpt_size_matches_torch(torch_mod, dtype, ignore):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((1024, 96)) * 4).astype(dtype)
    t = rng.integers(0, 96, 1024)
    if ignore:
        t[::7] = -100
    (loss, (gx,)), (rloss, (rgx,)) = _both(
        torch_mod,
        lambda a, b: F.cross_entropy(a, b),
        lambda a, b: torch_mod.nn.functional.cross_entropy(a, b),
        x,
        t,
    )
    rtol = 2e-6 if dtype == np.float32 else 1e-12
    assert loss.dtype == dtype
    np.testing.assert_allclose(loss, rloss, rtol=rtol)
    np.testing.assert_allclose(gx, rgx, rtol=rtol * 5, atol=1e-9)


def test_cross_entropy_backward_twice_and_batched_gradients(torch_mod):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 5))
    t = np.array([0, 4, -100, 2, 2, 1])
    xt = tg.tensor(x, requires_grad=True)
    loss = F.cross_entropy(xt, tg.tensor(t))
    (g1,) = tg.autograd.grad(loss, xt, retain_graph=True)
    (g2,) = tg.autograd.grad(loss, xt)  # the saved exponentials were not overwritten
    np.testing.assert_array_equal(g1.numpy(), g2.numpy())
    jac = tg.func.jacrev(lambda a: F.cross_entropy(a, tg.tensor(t)))(tg.tensor(x))
    tt = torch_mod.tensor(t)
    ref = torch_mod.func.jacrev(lambda a: torch_mod.nn.functional.cross_entropy(a, tt))(
        torch_mod.tensor(x)
    )
    np.testing.assert_allclose(jac.numpy(), ref.numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(g1.numpy(), ref.numpy(), rtol=1e-12, atol=1e-15)


def test_cross_entropy_nan_logit_propagates(torch_mod):
    x = np.zeros((3, 4), np.float32)
    x[1, 2] = np.nan
    t = np.array([0, 1, 3])
    (loss, (gx,)), (rloss, (rgx,)) = _both(
        torch_mod,
        lambda a, b: F.cross_entropy(a, b),
        lambda a, b: torch_mod.nn.functional.cross_entropy(a, b),
        x,
        t,
    )
    assert np.isnan(loss) and np.isnan(rloss)
    np.testing.assert_array_equal(np.isnan(gx), np.isnan(rgx))


def _qkv_attention(m, qkv, n_head, **kw):
    """The GPT's attention: q, k, v as (N, H, L, E) views of one (N, L, 3C) projection."""
    n, seq, c3 = qkv.shape
    c = c3 // 3
    q, k, v = (t.view(n, seq, n_head, c // n_head).transpose(1, 2) for t in qkv.split(c, dim=2))
    y = m.nn.functional.scaled_dot_product_attention(q, k, v, **kw)
    return y, y.transpose(1, 2).reshape(n, seq, c)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [dict(is_causal=True), dict(), dict(scale=0.3, is_causal=True)])
def test_attention_on_projection_views_matches_torch(torch_mod, dtype, kw):
    rng = np.random.default_rng(4)
    qkv = rng.standard_normal((3, 16, 3 * 24)).astype(dtype)
    g = rng.standard_normal((3, 16, 24)).astype(dtype)
    res = []
    for m in (tg, torch_mod):
        x = m.tensor(qkv, requires_grad=True)
        _, y = _qkv_attention(m, x, 2, **kw)
        y.backward(m.tensor(g))
        res.append((y.detach().numpy(), x.grad.numpy()))
    (y, gx), (ry, rgx) = res
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(y, ry, **tol)
    np.testing.assert_allclose(gx, rgx, **tol)


def test_attention_output_is_laid_out_heads_last():
    # the (N, H, L, E) result is a view of (N, L, H, E) memory, so the model's
    # transpose(1, 2).reshape(N, L, H·E) is a view, not a copy (as torch's CPU flash kernel)
    x = tg.randn(2, 8, 3 * 12)
    y, merged = _qkv_attention(tg, x, 3, is_causal=True)
    assert np.shares_memory(y._data, merged._data)
    assert merged._data.flags.c_contiguous


@pytest.mark.parametrize("query", ["contiguous", "heads_last", "strided"])
@pytest.mark.parametrize("rg", [False, True])
def test_attention_output_memory_order_follows_the_query_as_torchs(torch_mod, query, rg):
    # torch gives the output the query's memory order: a contiguous query gives a
    # contiguous output (user code may .view() it), a (N, L, H, E) one a heads-last output
    rng = np.random.default_rng(6)
    arrays = [rng.standard_normal((2, 3, 5, 4)) for _ in range(3)]
    strides = []
    for m in (tg, torch_mod):
        q, k, v = (m.tensor(a) for a in arrays)
        if query == "heads_last":
            q = q.transpose(1, 2).contiguous().transpose(1, 2)
        elif query == "strided":
            q = q.transpose(2, 3).contiguous().transpose(2, 3)
        q.requires_grad_(rg)
        y = m.nn.functional.scaled_dot_product_attention(q, k, v)
        strides.append((y.is_contiguous(), y.stride()))
        if y.is_contiguous():
            y.view(6, 5, 4)  # torch allows it: so must we
    assert strides[0] == strides[1]


@pytest.mark.parametrize("shape", [(5, 7), (2, 5, 7), (2, 2, 3, 5, 7)])
def test_attention_other_ranks_and_gqa_match_torch(torch_mod, shape):
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal(shape) for _ in range(3))
    g = rng.standard_normal(shape)
    res = []
    for m in (tg, torch_mod):
        ts = [m.tensor(a, requires_grad=True) for a in (q, k, v)]
        y = m.nn.functional.scaled_dot_product_attention(*ts, is_causal=True)
        y.backward(m.tensor(g))
        res.append([y.detach().numpy()] + [t.grad.numpy() for t in ts])
    for a, b in zip(*res, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)
    # grouped-query attention: 4 query heads served by 2 key/value heads
    qg = rng.standard_normal((2, 4, 5, 6))
    kg, vg = rng.standard_normal((2, 2, 5, 6)), rng.standard_normal((2, 2, 5, 6))
    res = []
    for m in (tg, torch_mod):
        ts = [m.tensor(a, requires_grad=True) for a in (qg, kg, vg)]
        y = m.nn.functional.scaled_dot_product_attention(*ts, enable_gqa=True)
        y.sum().backward()
        res.append([y.detach().numpy()] + [t.grad.numpy() for t in ts])
    for a, b in zip(*res, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)


def test_attention_second_order_on_projection_views():
    x = tg.tensor(np.random.default_rng(6).standard_normal((2, 4, 3 * 4)), requires_grad=True)

    def f(x):
        return _qkv_attention(tg, x, 2, is_causal=True)[1]

    assert tg.autograd.gradcheck(f, (x,))
    assert tg.autograd.gradgradcheck(f, (x,))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape, norm, affine",
    [
        ((16, 64, 64), (64,), "both"),  # the GPT's
        ((4, 6, 5), (5,), "weight"),
        ((4, 6, 5), (6, 5), "both"),
        ((4, 6, 5), (5,), "none"),
    ],
)
def test_layer_norm_matches_torch(torch_mod, dtype, shape, norm, affine):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    w = (1 + 0.5 * rng.standard_normal(norm)).astype(dtype)
    b = rng.standard_normal(norm).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    res = []
    for m in (tg, torch_mod):
        ts = [m.tensor(a, requires_grad=True) for a in (x, w, b)]
        wt = ts[1] if affine != "none" else None
        bt = ts[2] if affine == "both" else None
        y = m.nn.functional.layer_norm(ts[0], norm, wt, bt)
        y.backward(m.tensor(g))
        res.append([y.detach().numpy()] + [t.grad.numpy() for t in ts if t.grad is not None])
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    assert len(res[0]) == len(res[1])
    for a, r in zip(*res, strict=True):
        np.testing.assert_allclose(a, r, **tol)


def test_layer_norm_second_order():
    rng = np.random.default_rng(8)
    x, w, b = (tg.tensor(rng.standard_normal(s), requires_grad=True) for s in ((3, 5), 5, 5))

    def f(x, w, b):
        return tg.nn.functional.layer_norm(x, (5,), w, b)

    assert tg.autograd.gradcheck(f, (x, w, b))
    assert tg.autograd.gradgradcheck(f, (x, w, b))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("idx_shape", [(16, 64), (7,), (2, 3, 4)])
def test_embedding_rows_match_torch(torch_mod, dtype, idx_shape):
    # F.embedding gathers rows with np.take (nn/_fused.py:_take_rows); repeated indices
    # sum in the weight's gradient
    rng = np.random.default_rng(9)
    w = rng.standard_normal((96, 8)).astype(dtype)
    idx = rng.integers(0, 96, idx_shape)
    idx.flat[:3] = 5  # repeats
    g = rng.standard_normal(idx_shape + (8,)).astype(dtype)
    res = []
    for m in (tg, torch_mod):
        wt = m.tensor(w, requires_grad=True)
        y = m.nn.functional.embedding(m.tensor(idx), wt)
        y.backward(m.tensor(g))
        res.append((y.detach().numpy(), wt.grad.numpy(), y.dtype, y.shape))
    (y, gw, dt, sh), (ry, rgw, rdt, rsh) = res
    assert str(dt).split(".")[-1] == str(rdt).split(".")[-1] and tuple(sh) == tuple(rsh)
    np.testing.assert_array_equal(y, ry)
    tol = dict(rtol=1e-6, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gw, rgw, **tol)


def test_embedding_second_order_and_bounds():
    rng = np.random.default_rng(10)
    w = tg.tensor(rng.standard_normal((6, 3)), requires_grad=True)
    idx = tg.tensor(np.array([[0, 5, 5], [2, 1, 0]]))

    def f(w):
        return tg.nn.functional.embedding(idx, w) ** 2

    assert tg.autograd.gradcheck(f, (w,))
    assert tg.autograd.gradgradcheck(f, (w,))
    with pytest.raises(IndexError, match="index out of range"):
        tg.nn.functional.embedding(tg.tensor(np.array([6])), w)
    with pytest.raises(IndexError, match="index out of range"):
        tg.nn.functional.embedding(tg.tensor(np.array([-1])), w)
