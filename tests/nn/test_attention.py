"""F.scaled_dot_product_attention against torch: values, gradients, masks, GQA, dropout."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

rng = np.random.default_rng(0)

_MASK = rng.random((4, 6)) > 0.4
_MASK[1] = False  # a query row with every key masked out: output and gradients are 0

CASES = [
    # (q shape, k shape, v shape, kwargs, mask)
    ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7), {}, None),
    ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7), {"is_causal": True}, None),
    ((2, 3, 6, 5), (2, 3, 4, 5), (2, 3, 4, 7), {"is_causal": True}, None),
    ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7), {}, _MASK),
    ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7), {"scale": 0.3}, rng.standard_normal((3, 4, 6))),
    ((2, 4, 4, 5), (2, 2, 6, 5), (2, 2, 6, 7), {"enable_gqa": True, "is_causal": True}, None),
    ((2, 4, 4, 5), (2, 1, 6, 5), (2, 1, 6, 7), {"enable_gqa": True}, _MASK),
    ((4, 5), (6, 5), (6, 7), {}, None),
    ((3, 4, 5), (1, 6, 5), (1, 6, 7), {}, None),  # broadcast batch dims
]


def _run(m, arrays, mask, kw, dtype):
    ts = [m.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
    mk = None if mask is None else m.tensor(mask)
    if mk is not None and mask.dtype != bool:
        mk = mk.to(dtype)
    fn = F if m is tg else m.nn.functional
    return ts, fn.scaled_dot_product_attention(*ts, attn_mask=mk, **kw)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_sdpa_matches_torch(case, dtype, torch_mod):
    qs, ks, vs, kw, mask = case
    arrays = [rng.standard_normal(s) for s in (qs, ks, vs)]
    ours, out = _run(tg, arrays, mask, kw, getattr(tg, dtype))
    theirs, ref = _run(torch_mod, arrays, mask, kw, getattr(torch_mod, dtype))
    tol = 1e-12 if dtype == "float64" else 2e-5
    assert out.dtype == getattr(tg, dtype) and out.shape == tuple(ref.shape)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=tol, rtol=tol)
    g = rng.standard_normal(ref.shape)
    out.backward(tg.tensor(g, dtype=out.dtype))
    ref.backward(torch_mod.tensor(g, dtype=ref.dtype))
    for name, a, b in zip("qkv", ours, theirs):
        np.testing.assert_allclose(
            a.grad.numpy(), b.grad.numpy(), atol=tol, rtol=tol, err_msg=f"grad of {name}"
        )


def test_sdpa_second_derivative_matches_torch(torch_mod):
    """create_graph: the backward rebuilds P from q and k, so Hessian-vector products hold."""
    arrays = [rng.standard_normal(s) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 3))]
    res = []
    for m in (tg, torch_mod):
        q, k, v = (m.tensor(a, requires_grad=True) for a in arrays)
        fn = F if m is tg else m.nn.functional
        out = fn.scaled_dot_product_attention(q, k, v, is_causal=True)
        (gq,) = m.autograd.grad((out**2).sum(), [q], create_graph=True)
        res.append([t.detach().numpy() for t in m.autograd.grad(gq.sum(), [q, k, v])])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, atol=1e-10)


def test_sdpa_jacobian_vectorized():
    arrays = [rng.standard_normal(s) for s in ((3, 4), (5, 4), (5, 2))]
    k, v = tg.tensor(arrays[1]), tg.tensor(arrays[2])

    def f(q):
        return F.scaled_dot_product_attention(q, k, v)

    q = tg.tensor(arrays[0])
    a = tg.autograd.functional.jacobian(f, q, vectorize=True)
    b = tg.autograd.functional.jacobian(f, q)
    np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-12)


def test_sdpa_dropout_is_seeded_and_scaled():
    q = tg.randn(2, 2, 8, 4, dtype=tg.float64, requires_grad=True)
    tg.manual_seed(3)
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    tg.manual_seed(3)
    b = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    c = F.scaled_dot_product_attention(q, q, q, dropout_p=0.0)
    assert not np.allclose(a.detach().numpy(), c.detach().numpy())
    zero = F.scaled_dot_product_attention(q, q, q, dropout_p=1.0)
    assert np.all(zero.detach().numpy() == 0)
    # the dropped weights are scaled by 1/(1-p): on average the output is unchanged
    v = tg.ones(1, 1, 64, 3, dtype=tg.float64)
    qq = tg.zeros(1, 1, 256, 3, dtype=tg.float64)
    kk = tg.zeros(1, 1, 64, 3, dtype=tg.float64)
    mean = F.scaled_dot_product_attention(qq, kk, v, dropout_p=0.3).mean().item()
    assert abs(mean - 1.0) < 0.02
    # gradient matches a finite difference with the same mask (same seed each call)
    k = tg.randn(2, 2, 8, 4, dtype=tg.float64, requires_grad=True)

    def f(x):
        tg.manual_seed(5)
        return F.scaled_dot_product_attention(x, k, k, dropout_p=0.4)

    assert tg.autograd.gradcheck(f, [q])


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        (((2, 4, 5), (2, 6, 5), (2, 6, 7)), {"is_causal": True, "attn_mask": 1}, "is_causal"),
        (((2, 4, 5), (2, 6, 4), (2, 6, 7)), {}, "query.shape"),
        (((2, 4, 5), (3, 6, 5), (3, 6, 7)), {}, "broadcast"),
        (((2, 4, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7)), {"enable_gqa": True}, "multiple"),
        (((2, 4, 5), (2, 6, 5), (2, 6, 7)), {"attn_mask": np.ones((5, 6), bool)}, "attn_mask"),
    ],
)
def test_sdpa_errors(args, kwargs, match):
    q, k, v = (tg.randn(*s) for s in args)
    if kwargs.get("attn_mask") is not None and not isinstance(kwargs["attn_mask"], int):
        kwargs = dict(kwargs, attn_mask=tg.tensor(kwargs["attn_mask"]))
    elif kwargs.get("attn_mask") == 1:
        kwargs = dict(kwargs, attn_mask=tg.ones(4, 6, dtype=tg.bool))
    with pytest.raises(RuntimeError, match=match):
        F.scaled_dot_product_attention(q, k, v, **kwargs)


def test_sdpa_dtype_mismatch():
    q = tg.randn(2, 3, 4, dtype=tg.float64)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.scaled_dot_product_attention(q, tg.randn(2, 3, 4), tg.randn(2, 3, 4))
