"""``linear`` under vmap with a batched weight (Note [Per-sample linear]): one Node whose
first-order backward runs on arrays and whose recorded backward gives higher orders,
checked against a loop of single-sample calls, gradcheck/gradgradcheck and torch.func."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad._vmap_grad import physical
from tapegrad.autograd import graph

F = tg.func
NF = tg.nn.functional


def _node_names(t):
    return {n.name() for n in graph.iter_graph([t]) if type(n) is graph.Node}


def _data(rng, *shape, dtype=np.float64):
    return tg.tensor(rng.standard_normal(shape).astype(dtype))


@pytest.mark.parametrize("x_shape", [(4,), (1, 4), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("bias", [True, False])
def test_per_sample_gradients_equal_a_loop(x_shape, bias):
    """Two layers, so the first layer's output gradient (the second's input gradient)
    goes through the fused Node too."""
    rng = np.random.default_rng(0)
    n = 5
    p = {"w1": _data(rng, 3, 4), "b1": _data(rng, 3), "w2": _data(rng, 2, 3)}
    if bias:
        p["b2"] = _data(rng, 2)
    x = _data(rng, n, *x_shape)

    def loss(q, xb):
        h = NF.linear(xb, q["w1"], q["b1"]).tanh()
        return (NF.linear(h, q["w2"], q.get("b2")).sin() ** 2).sum()

    per = F.vmap(F.grad(loss), in_dims=(None, 0))(p, x)
    gx = F.vmap(F.grad(lambda xb, q: loss(q, xb)), in_dims=(0, None))(x, p)
    for i in range(n):
        one = F.grad(loss)(p, x[i])
        for k in p:
            np.testing.assert_allclose(per[k][i].numpy(), one[k].numpy(), rtol=1e-12, atol=1e-14)
        one = F.grad(lambda xb, q: loss(q, xb))(x[i], p)
        np.testing.assert_allclose(gx[i].numpy(), one.numpy(), rtol=1e-12, atol=1e-14)


def test_the_fused_node_is_recorded_and_gradients_are_contiguous():
    rng = np.random.default_rng(1)
    w, b = _data(rng, 3, 4, dtype=np.float32), _data(rng, 3, dtype=np.float32)
    x = _data(rng, 6, 4, dtype=np.float32)
    seen = []

    def loss(w, b, xb):
        out = NF.linear(xb.unsqueeze(0), w, b)
        seen.append(_node_names(physical(out)))
        return (out**2).mean()

    gw, gb = F.vmap(F.grad(loss, argnums=(0, 1)), in_dims=(None, None, 0))(w, b, x)
    assert "PerSampleLinearBackward" in seen[0]
    assert gw.shape == (6, 3, 4) and gb.shape == (6, 3)
    assert gw.numpy().flags.c_contiguous  # written once in the weight's layout
    want = 2 * (x.numpy() @ w.numpy().T + b.numpy()) / 3
    np.testing.assert_allclose(gb.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(gw.numpy(), want[:, :, None] * x.numpy()[:, None, :], rtol=1e-6)


def test_batched_weights_of_an_ensemble_and_a_shared_bias():
    """in_dims over stacked weights (not a stride-0 expansion) and an unbatched bias."""
    rng = np.random.default_rng(2)
    ws, b, x = _data(rng, 4, 3, 5), _data(rng, 3), _data(rng, 4, 2, 5)

    def f(w, xb):
        return NF.linear(xb, w, b).sin().sum()

    g = F.vmap(F.grad(f), in_dims=(0, 0))(ws, x)
    out = F.vmap(lambda w, xb: NF.linear(xb, w, b))(ws, x)
    for i in range(4):
        np.testing.assert_allclose(g[i].numpy(), F.grad(f)(ws[i], x[i]).numpy(), rtol=1e-12)
        np.testing.assert_allclose(out[i].numpy(), NF.linear(x[i], ws[i], b).numpy())
    # The shared bias's gradient sums over the batch, through the fused Node.
    bb = b.detach().requires_grad_(True)
    wr = ws.detach().requires_grad_(True)
    F.vmap(lambda w, xb: NF.linear(xb, w, bb))(wr, x).sin().sum().backward()
    want = sum(F.grad(lambda c, i=i: NF.linear(x[i], ws[i], c).sin().sum())(b) for i in range(4))
    np.testing.assert_allclose(bb.grad.numpy(), want.numpy(), rtol=1e-12)
    np.testing.assert_allclose(wr.grad.numpy(), g.numpy(), rtol=1e-12)


def test_second_order_through_the_recorded_backward():
    """create_graph=True runs the backward in tapegrad ops: per-sample Hessians, and
    gradcheck/gradgradcheck of a function that takes per-sample gradients."""
    rng = np.random.default_rng(3)
    w, b, x = _data(rng, 2, 3), _data(rng, 2), _data(rng, 4, 3)

    def f(w, xb):
        return NF.linear(xb, w, b).tanh().sum()

    h = F.vmap(F.hessian(f), in_dims=(None, 0))(w, x)
    for i in range(4):
        np.testing.assert_allclose(h[i].numpy(), F.hessian(f)(w, x[i]).numpy(), rtol=1e-10)

    def per_sample_norm(w):
        return F.vmap(F.grad(f), in_dims=(None, 0))(w, x).pow(2).sum()

    wg = w.detach().requires_grad_(True)
    assert tg.autograd.gradcheck(per_sample_norm, (wg,))
    assert tg.autograd.gradgradcheck(per_sample_norm, (wg,))


def test_jacrev_and_jacfwd_under_vmap():
    """jacrev under vmap pushes a batch of gradients (Note [Batched gradients]) through
    the Node; jacfwd derives the tangents from its backward."""
    rng = np.random.default_rng(4)
    w, b, x = _data(rng, 3, 4), _data(rng, 3), _data(rng, 5, 2, 4)

    def f(w, xb):
        return NF.linear(xb, w, b).sin()

    for jac in (F.jacrev, F.jacfwd):
        j = F.vmap(jac(f), in_dims=(None, 0))(w, x)
        for i in range(5):
            np.testing.assert_allclose(
                j[i].numpy(), F.jacrev(f)(w, x[i]).numpy(), rtol=1e-12, atol=1e-14
            )


def test_mixed_dtypes_raise_like_torch():
    rng = np.random.default_rng(5)
    w, x = _data(rng, 3, 4, dtype=np.float32), _data(rng, 5, 4)
    with pytest.raises(RuntimeError, match="linear"):
        F.vmap(F.grad(lambda w, xb: NF.linear(xb, w).sum()), in_dims=(None, 0))(w, x)


def test_against_torch_func(torch_mod):
    torch = torch_mod
    rng = np.random.default_rng(6)
    wa, ba, xa = rng.standard_normal((3, 4)), rng.standard_normal(3), rng.standard_normal((7, 4))

    def loss(m):
        def f(w, b, xb):
            return (m.nn.functional.linear(xb.unsqueeze(0), w, b).relu() ** 2).mean()

        return f

    ours = F.vmap(F.grad(loss(tg), argnums=(0, 1)), in_dims=(None, None, 0))(
        tg.tensor(wa), tg.tensor(ba), tg.tensor(xa)
    )
    theirs = torch.func.vmap(torch.func.grad(loss(torch), argnums=(0, 1)), in_dims=(None, None, 0))(
        torch.tensor(wa), torch.tensor(ba), torch.tensor(xa)
    )
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-12, atol=1e-14)


def test_nested_vmap_takes_the_composed_rules_and_matches_a_double_loop():
    """Under two vmap levels the physical values are themselves batched: the fused Node
    does not apply and the composed rules give the same per-sample gradients."""
    rng = np.random.default_rng(7)
    w, b, x = _data(rng, 3, 4), _data(rng, 3), _data(rng, 2, 3, 4)

    def f(w, b, xb):
        return NF.linear(xb, w, b).tanh().sum()

    g = F.vmap(F.vmap(F.grad(f, argnums=(0, 1)), in_dims=(None, None, 0)), in_dims=(None, None, 0))
    gw, gb = g(w, b, x)
    assert gw.shape == (2, 3, 3, 4) and gb.shape == (2, 3, 3)
    for i in range(2):
        for j in range(3):
            ow, ob = F.grad(f, argnums=(0, 1))(w, b, x[i, j])
            np.testing.assert_allclose(gw[i, j].numpy(), ow.numpy(), rtol=1e-12)
            np.testing.assert_allclose(gb[i, j].numpy(), ob.numpy(), rtol=1e-12)
