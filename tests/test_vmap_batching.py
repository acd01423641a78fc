"""vmap's batching rules (Note [vmap levels]): batched execution, per-sample gradients,
nesting, chunking, randomness and the exact fallbacks. The op-table sweep against a loop
is in test_func_vmap.py."""

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _batched
from tapegrad.ops._registry import OPS

F = tg.func


def _no_fallback():
    """A context that fails the test if vmap falls back to a loop."""
    ctx = warnings.catch_warnings(record=True)

    class Guard:
        def __enter__(self):
            self.w = ctx.__enter__()
            warnings.simplefilter("always")
            _batched._WARNED.clear()
            return self

        def __exit__(self, *exc):
            ctx.__exit__(*exc)
            msgs = [str(m.message) for m in self.w if "vmap" in str(m.message)]
            assert not msgs, msgs

    return Guard()


def _mlp():
    tg.manual_seed(0)
    nn = tg.nn
    return nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3))


def test_fast_path_is_untouched():
    # Outside vmap, methods and operators are the registered functions themselves.
    assert tg.Tensor.__add__ is OPS["add"].fn
    assert tg.Tensor.sum is OPS["sum"].fn
    assert not _batched.LEVELS.active


@pytest.mark.parametrize("in_dim", [0, 1])
def test_common_ops_run_batched_without_a_loop(in_dim):
    rng = np.random.default_rng(0)
    x = tg.tensor(rng.standard_normal((4, 3, 5)))
    w = tg.tensor(rng.standard_normal((5, 2)))

    def f(a):
        b = (a.exp() * 2 - a.sin()).clamp(-3, 3) @ w
        c = tg.cat([b, b.T.reshape(3, 2)], dim=0).softmax(-1)
        d = c[1:, None, ::2].squeeze(1).sum(0) + c.mean() + c.amax(dim=1).sum()
        return tg.stack([d, d.flip(0)]).transpose(0, 1).unsqueeze(0).expand(2, -1, -1)

    xs = x.movedim(0, in_dim).contiguous()
    with _no_fallback():
        got = F.vmap(f, in_dims=in_dim)(xs)
    want = tg.stack([f(x[i]) for i in range(4)])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-14)


def test_matmul_rule_every_rank_combination():
    rng = np.random.default_rng(1)
    shapes = [(3,), (2, 3), (4, 2, 3)]
    for sa in shapes:
        for sb in [(3,), (3, 2), (4, 3, 2)]:
            for ba, bb in ((True, False), (False, True), (True, True)):
                a = tg.tensor(rng.standard_normal(((5,) if ba else ()) + sa))
                b = tg.tensor(rng.standard_normal(((5,) if bb else ()) + sb))
                with _no_fallback():
                    got = F.vmap(tg.matmul, in_dims=(0 if ba else None, 0 if bb else None))(a, b)
                want = tg.stack([(a[i] if ba else a) @ (b[i] if bb else b) for i in range(5)])
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_per_sample_gradients_of_a_module_equal_a_loop():
    net = _mlp()
    params = {k: v.detach() for k, v in net.named_parameters()}
    x, y = tg.randn(6, 5), tg.randn(6, 3)

    def loss(p, xb, yb):
        out = F.functional_call(net, p, (xb.unsqueeze(0),))
        return F.functional_call(net, p, (xb,)).sum() * 0 + ((out - yb) ** 2).mean()

    with _no_fallback():
        per = F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for k, v in params.items():
        loop = tg.stack([F.grad(loss)(params, x[i], y[i])[k] for i in range(6)])
        assert per[k].shape == (6, *v.shape)
        np.testing.assert_allclose(per[k].numpy(), loop.numpy(), rtol=1e-5, atol=1e-6)


def test_per_sample_gradients_match_torch_func(torch_mod):
    torch = torch_mod
    rng = np.random.default_rng(2)
    wa, xa = rng.standard_normal((4, 3)), rng.standard_normal((7, 4))

    def make(m):
        def f(w, x):
            return ((x @ w).tanh() ** 2).sum() + (w * w).sum() * x.sum()

        return f

    ours = F.vmap(F.grad(make(tg)), in_dims=(None, 0))(tg.tensor(wa), tg.tensor(xa))
    ref = torch.func.vmap(torch.func.grad(make(torch)), in_dims=(None, 0))(
        torch.tensor(wa), torch.tensor(xa)
    )
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-10)
    ours2 = F.vmap(F.jacrev(make(tg)), in_dims=(None, 0))(tg.tensor(wa), tg.tensor(xa))
    np.testing.assert_allclose(ours2.numpy(), ref.numpy(), rtol=1e-10)


def test_nested_vmap_of_grad_and_grad_of_vmap():
    rng = np.random.default_rng(3)
    W = tg.tensor(rng.standard_normal((3, 2)))
    X = tg.tensor(rng.standard_normal((4, 5, 3)))

    def f(w, x):
        return ((x @ w).sin() * x.sum()).sum()

    with _no_fallback():
        g2 = F.vmap(F.vmap(F.grad(f), in_dims=(None, 0)), in_dims=(None, 0))(W, X)
        gx = F.vmap(F.vmap(F.grad(f, argnums=1), in_dims=(None, 0)), in_dims=(None, 1))(W, X)
        gv = F.grad(lambda w: F.vmap(lambda x: f(w, x))(X.reshape(20, 3)).sum())(W)
    want = np.stack([[F.grad(f)(W, X[i, j]).numpy() for j in range(5)] for i in range(4)])
    np.testing.assert_allclose(g2.numpy(), want, rtol=1e-12)
    wantx = np.stack([[F.grad(f, 1)(W, X[j, i]).numpy() for j in range(4)] for i in range(5)])
    np.testing.assert_allclose(gx.numpy(), wantx, rtol=1e-12)
    loop = F.grad(lambda w: sum(f(w, x) for x in X.reshape(20, 3)))(W)
    np.testing.assert_allclose(gv.numpy(), loop.numpy(), rtol=1e-12)


def test_hessian_compositions_under_vmap():
    rng = np.random.default_rng(4)
    X = tg.tensor(rng.standard_normal((3, 4)))

    def f(x):
        return (x.sin() * x.exp()).sum()

    h = F.vmap(F.hessian(f))(X)
    jj = F.vmap(F.jacfwd(F.jacrev(f)))(X)
    jr = F.vmap(F.jacrev(F.jacrev(f)))(X)
    want = tg.stack([F.hessian(f)(X[i]) for i in range(3)])
    for got in (h, jj, jr):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(F.jacfwd(F.jacrev(f))(X[0]).numpy(), want[0].numpy(), rtol=1e-12)


def test_chunk_size_chunks_for_real():
    calls = []
    x = tg.randn(10, 3, dtype=tg.float64)

    def f(a):
        calls.append(a.shape)
        return a.exp().sum()

    out = F.vmap(f, chunk_size=4)(x)
    assert len(calls) == 3  # 4 + 4 + 2, each chunk batched
    np.testing.assert_allclose(out.numpy(), x.exp().sum(1).numpy())
    a, b = F.vmap(lambda t: (t * 2, t.sum()), chunk_size=3, out_dims=(1, 0))(x)
    np.testing.assert_allclose(a.numpy(), (x * 2).T.numpy())


def test_randomness_policies_with_dropout():
    x = tg.ones(6, 50)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        F.vmap(lambda a: tg.nn.functional.dropout(a, 0.5))(x)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")

        def f(a):  # dropout draws once (logical shape); bernoulli runs per element
            return tg.nn.functional.dropout(a, 0.5) + (a * 0.5).bernoulli() * 10

        same = F.vmap(f, randomness="same")(x).numpy()
    assert (same == same[0]).all() and (same % 10 == 0).any() and (same % 10 == 2).any()
    assert (same >= 10).any() and (same < 10).any()
    assert not any(
        "once per batch element (a Python loop): exact" in str(m.message)
        and "reads the data" in str(m.message)
        for m in w
    )  # no whole-function rerun
    diff = F.vmap(lambda a: tg.nn.functional.dropout(a, 0.5), randomness="different")(x).numpy()
    assert not (diff == diff[0]).all()


def test_data_dependent_control_flow_falls_back_exactly():
    x = tg.tensor([[1.0, 2.0], [-3.0, 1.0], [0.5, -0.1]])

    def f(a):
        return a * 2 if a.sum().item() > 0 else -a

    with pytest.warns(UserWarning, match="runs once per batch element"):
        out = F.vmap(f)(x)
    np.testing.assert_allclose(out.numpy(), np.stack([f(r).numpy() for r in x]))


def test_inplace_and_setitem_on_batched_tensors():
    x = tg.randn(4, 3, dtype=tg.float64)

    def f(a):
        b = a.clone()
        b.mul_(2)
        b[0] = 7.0
        b[1:] += a[1:]
        return b

    with _no_fallback():
        got = F.vmap(f)(x)
    np.testing.assert_allclose(got.numpy(), np.stack([f(r).numpy() for r in x]))
    # Writing a batched tensor into an unbatched one: torch refuses; the exact fallback
    # (whole function per element) computes it.
    with pytest.warns(UserWarning, match="runs once per batch element"):
        got = F.vmap(lambda a: tg.zeros(3, dtype=tg.float64).add_(a))(x)
    np.testing.assert_allclose(got.numpy(), x.numpy())


def test_escaped_batched_tensor_is_refused():
    kept = []
    F.vmap(lambda a: kept.append(a) or a)(tg.ones(2, 3))
    with pytest.raises(RuntimeError, match="already returned"):
        kept[0] + 1


@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_rule_and_per_sample_gradients_of_a_convolution(groups):
    rng = np.random.default_rng(5)
    img = tg.tensor(rng.standard_normal((3, 2, 4, 5, 5)))
    w = tg.tensor(rng.standard_normal((4, 4 // groups, 3, 3)))
    b = tg.tensor(rng.standard_normal(4))
    Fn = tg.nn.functional

    def loss(ww, bb, a):
        return (Fn.conv2d(a, ww, bb, stride=2, padding=1, groups=groups).tanh() ** 2).sum()

    with _no_fallback():
        out = F.vmap(lambda a: Fn.conv2d(a, w, b, padding=1, groups=groups))(img)
        per = F.vmap(F.grad(loss, argnums=(0, 1)), in_dims=(None, None, 0))(w, b, img)
        one = F.vmap(lambda a: Fn.conv2d(a, w, None, groups=groups))(img[:, 0])
    ref = tg.stack([Fn.conv2d(img[i], w, b, padding=1, groups=groups) for i in range(3)])
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12)
    for k in range(2):
        loop = tg.stack([F.grad(loss, argnums=(0, 1))(w, b, img[i])[k] for i in range(3)])
        np.testing.assert_allclose(per[k].numpy(), loop.numpy(), rtol=1e-12)
    ref1 = tg.stack([Fn.conv2d(img[i, 0], w, None, groups=groups) for i in range(3)])
    np.testing.assert_allclose(one.numpy(), ref1.numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    "kw",
    [{}, {"reduction": "sum"}, {"reduction": "none"}, {"label_smoothing": 0.1}, {"weight": True}],
)
def test_cross_entropy_rule_matches_a_loop(kw):
    Fn = tg.nn.functional
    rng = np.random.default_rng(6)
    x = tg.tensor(rng.standard_normal((4, 3, 5)))
    t = tg.tensor(rng.integers(0, 5, (4, 3)))
    t[1, 0] = -100  # ignored
    if kw.get("weight"):
        kw = {"weight": tg.tensor(rng.uniform(0.5, 1.5, 5)), "label_smoothing": 0.2}
    with _no_fallback():
        got = F.vmap(lambda a, b: Fn.cross_entropy(a, b, **kw))(x, t)
        one = F.vmap(lambda a, b: Fn.cross_entropy(a, b, **kw), in_dims=(0, None))(x[:, 0], t[0, 1])
    ref = tg.stack([Fn.cross_entropy(x[i], t[i], **kw) for i in range(4)])
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-12)
    ref1 = tg.stack([Fn.cross_entropy(x[i, 0], t[0, 1], **kw) for i in range(4)])
    np.testing.assert_allclose(one.numpy(), ref1.numpy(), rtol=1e-12)


def test_layer_norm_rule_and_per_sample_gradients():
    ln = tg.nn.LayerNorm(5).double()
    with tg.no_grad():
        ln.weight.add_(tg.randn(5, dtype=tg.float64))
    p = {k: v.detach() for k, v in ln.named_parameters()}
    x = tg.randn(4, 3, 5, dtype=tg.float64)

    def loss(pp, a):
        return (F.functional_call(ln, pp, (a,)) ** 3).sum()

    with _no_fallback():
        per = F.vmap(F.grad(loss), in_dims=(None, 0))(p, x)
        out = F.vmap(ln)(x)
    np.testing.assert_allclose(out.detach().numpy(), ln(x).detach().numpy(), rtol=1e-12)
    for k in p:
        loop = tg.stack([F.grad(loss)(p, x[i])[k] for i in range(4)])
        np.testing.assert_allclose(per[k].numpy(), loop.numpy(), rtol=1e-10, atol=1e-12)


def test_einsum_and_advanced_indexing_rules():
    rng = np.random.default_rng(7)
    x = tg.tensor(rng.standard_normal((4, 3, 5, 6)))
    w = tg.tensor(rng.standard_normal((6, 2)))
    idx, idx2 = tg.tensor([2, 0, 2]), tg.tensor([[1, 4], [0, 0]])
    mask = tg.tensor([True, False, True])
    fns = [
        lambda a: tg.einsum("ijk,kl->jil", a, w),
        lambda a: tg.einsum("...k,kl->...l", [a, w]),
        lambda a: a[idx],
        lambda a: a[:, idx2],
        lambda a: a[0, idx2],
        lambda a: a[mask],
        lambda a: a[..., idx, None],
        lambda a: a[[0, 2]],
    ]
    for f in fns:
        with _no_fallback():
            got = F.vmap(f)(x)
        want = tg.stack([f(x[i]) for i in range(4)])
        assert got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    # Non-adjacent advanced indices move to the front in NumPy: per element, still exact.
    got = F.vmap(lambda a: a[idx, :, 0])(x)
    np.testing.assert_allclose(got.numpy(), np.stack([x[i][idx, :, 0].numpy() for i in range(4)]))


def test_jvp_under_vmap_is_batched_forward_mode():
    rng = np.random.default_rng(8)
    X, V = (tg.tensor(rng.standard_normal((4, 3))) for _ in range(2))
    W = tg.tensor(rng.standard_normal((3, 5)))

    def f(x):
        return (x @ W).sin() * x.sum()

    def g(x):
        return (x.sin() * x.exp()).sum()

    with _no_fallback():
        out, tan = F.vmap(lambda x, v: F.jvp(f, (x,), (v,)))(X, V)
        _, shared = F.vmap(lambda x: F.jvp(f, (x,), (V[0],)))(X)
        _, hvp = F.vmap(lambda x, v: F.jvp(F.grad(g), (x,), (v,)))(X, V)  # per-sample H v
    for i in range(4):
        o, t = F.jvp(f, (X[i],), (V[i],))
        np.testing.assert_allclose(out[i].numpy(), o.numpy(), rtol=1e-12)
        np.testing.assert_allclose(tan[i].numpy(), t.numpy(), rtol=1e-12)
        np.testing.assert_allclose(shared[i].numpy(), F.jvp(f, (X[i],), (V[0],))[1].numpy())
        np.testing.assert_allclose(hvp[i].numpy(), (F.hessian(g)(X[i]) @ V[i]).numpy(), rtol=1e-10)
    jv = F.jvp(F.vmap(f), (X,), (V,))[1]  # forward mode over vmap
    np.testing.assert_allclose(jv.numpy(), tan.numpy(), rtol=1e-12)


def test_as_strided_under_vmap_sees_each_elements_own_storage():
    # Regression: the per-element loop read the batch's storage (a wrong answer).
    x = tg.arange(15.0).reshape(3, 5)
    got = tg.func.vmap(lambda r: r.clone()[1:].as_strided((2,), (2,), 1))(x)
    want = tg.stack([r.clone()[1:].as_strided((2,), (2,), 1) for r in x.unbind(0)])
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    # batch dim not outermost in memory: an error, never the loop over shared storage
    with pytest.raises(RuntimeError, match="as_strided"):
        tg.func.vmap(lambda r: r.as_strided((2,), (1,)), in_dims=1)(tg.arange(15.0).reshape(5, 3))
    with pytest.raises(RuntimeError, match="as_strided_scatter"):
        tg.func.vmap(lambda r: tg.as_strided_scatter(r, r[:2], (2,), (1,)))(x)


def test_matmul_with_a_stride0_stack_is_one_gemm_and_exact():
    """An unbatched weight expanded under vmap(grad) (a stride-0 stack) times a batched
    operand runs as one 2-D GEMM (ops/linalg.matmul_array): same values as np.matmul."""
    from tapegrad.ops.linalg import matmul_array

    rng = np.random.default_rng(0)
    w = rng.standard_normal((5, 3))
    for a, b in (
        (rng.standard_normal((4, 2, 5)), np.broadcast_to(w, (4, 5, 3))),
        (rng.standard_normal((4, 5, 2)).swapaxes(1, 2), np.broadcast_to(w, (4, 5, 3))),
        (rng.standard_normal((2, 4, 1, 5)), np.broadcast_to(w, (2, 4, 5, 3))),
    ):
        np.testing.assert_allclose(matmul_array(a, b), np.matmul(a, b), rtol=1e-12)


def test_grad_under_grad_mode_keeps_a_graph_only_where_needed():
    """grad skips recording its backward when nothing but its own variables feeds f
    (the results would be detached anyway); a closed-over tensor that requires grad,
    and grad of grad, still get a differentiable result."""
    x = tg.tensor([1.0, 2.0])
    g = F.grad(lambda x: (x**3).sum())(x)
    assert not g.requires_grad
    np.testing.assert_allclose(g.numpy(), [3.0, 12.0])
    w = tg.tensor([2.0, 3.0], requires_grad=True)
    g = F.grad(lambda x: (w * x * x).sum())(x)
    assert g.requires_grad
    g.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 4.0])
    np.testing.assert_allclose(F.grad(F.grad(lambda x: (x**3).sum()))(tg.tensor(2.0)).item(), 12.0)
    per = F.vmap(F.grad(lambda x: (w * x * x).sum()))(tg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert per.requires_grad
    np.testing.assert_allclose(per.detach().numpy(), [[4.0, 12.0], [12.0, 24.0]])
