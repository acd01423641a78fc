"""The common cases of the elementwise and dim batching rules (issue 15): positional
arguments only, the physical op called without a second dispatch. Checked against a
Python loop, under nested vmap (where an argument is batched at a lower level, so the
rule dispatches again), and against torch.func."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _batched, _vmap

F = tg.func


@pytest.fixture
def no_fallback(monkeypatch):
    """Fail if an op (or the whole function) runs once per element instead of through
    the rules."""

    def refuse(name, *args, **kwargs):
        raise AssertionError(f"{name} fell back to the per-element loop")

    monkeypatch.setattr(_batched, "loop", refuse)
    monkeypatch.setattr(_vmap, "_loop", refuse)


def _t(rng, *shape):
    return tg.tensor(rng.standard_normal(shape))


def _loop(fn, args, dims, n):
    outs = []
    for b in range(n):
        outs.append(fn(*[a if d is None else a.select(d, b) for a, d in zip(args, dims)]))
    return tg.stack(outs)


# (name, function, argument shapes with the batch at dim 0 of mapped ones, in_dims)
ELEMENTWISE = [
    ("sub_same_rank", lambda a, b: a - b, [(5, 3, 4), (5, 3, 4)], (0, 0)),
    ("mul_unbatched_higher_rank", lambda a, b: a * b, [(5, 4), (3, 4)], (0, None)),
    ("add_batched_lower_rank", lambda a, b: tg.add(a, b), [(5, 4), (5, 3, 4)], (0, 0)),
    ("pow_scalar", lambda a: a**2, [(5, 3)], (0,)),
    ("rsub_float", lambda a: 1.5 - a, [(5, 3)], (0,)),
    ("relu_method", lambda a: a.relu(), [(5, 2, 3)], (0,)),
    ("where", lambda c, a, b: tg.where(c > 0, a, b), [(5, 3), (5, 3), (3,)], (0, 0, None)),
    ("maximum_0d", lambda a, b: tg.maximum(a, b), [(5,), (5, 4)], (0, 0)),
    ("atan2_in_dim_1", lambda a, b: tg.atan2(a, b), [(3, 5), (5, 3)], (1, 0)),
]


@pytest.mark.parametrize("name,fn,shapes,dims", ELEMENTWISE, ids=[c[0] for c in ELEMENTWISE])
def test_elementwise_common_case_matches_a_loop(no_fallback, name, fn, shapes, dims):
    rng = np.random.default_rng(0)
    args = [_t(rng, *s) for s in shapes]
    got = F.vmap(fn, in_dims=dims)(*args)
    want = _loop(fn, args, dims, 5)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-14)


def test_elementwise_with_an_argument_of_a_lower_level(no_fallback):
    """Nested vmap: the inner level's rule sees an argument batched at the outer level
    (a lower one), passes it on, and the physical call dispatches to the outer rule."""
    rng = np.random.default_rng(1)
    a, b = _t(rng, 4, 3), _t(rng, 5, 3)

    def f(x, y):
        return x * y - y

    got = F.vmap(F.vmap(f, in_dims=(None, 0)), in_dims=(0, None))(a, b)
    want = tg.stack([tg.stack([f(a[i], b[j]) for j in range(5)]) for i in range(4)])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


DIMS = [
    ("unsqueeze_0", lambda v: v.unsqueeze(0)),
    ("unsqueeze_last", lambda v: v.unsqueeze(-1)),
    ("unsqueeze_mid", lambda v: tg.unsqueeze(v, 1)),
    ("mean_all", lambda v: v.mean()),
    ("sum_all", lambda v: v.sum()),
    ("mean_dim", lambda v: v.mean(1)),
    ("sum_neg_dim", lambda v: v.sum(-2)),
    ("argmax_flat", lambda v: v.argmax()),
    ("argmax_dim", lambda v: v.argmax(1)),
    ("softmax_dim", lambda v: v.softmax(-1)),
    ("cumsum_dim", lambda v: v.cumsum(0)),
]


@pytest.mark.parametrize("name,fn", DIMS, ids=[c[0] for c in DIMS])
@pytest.mark.parametrize("in_dim", [0, 1])
def test_dim_common_case_matches_a_loop(no_fallback, name, fn, in_dim):
    rng = np.random.default_rng(2)
    x = _t(rng, 5, 4, 3) if in_dim == 0 else _t(rng, 4, 5, 3)
    got = F.vmap(fn, in_dims=in_dim)(x)
    want = _loop(fn, [x], [in_dim], 5)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name,fn", DIMS[:6], ids=[c[0] for c in DIMS[:6]])
def test_dim_common_case_under_nested_vmap(no_fallback, name, fn):
    rng = np.random.default_rng(3)
    x = _t(rng, 3, 5, 4, 2)
    got = F.vmap(F.vmap(fn))(x)
    want = tg.stack([tg.stack([fn(x[i, j]) for j in range(5)]) for i in range(3)])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.filterwarnings("ignore:tg.func.vmap")  # the per-element loop raises
@pytest.mark.parametrize("dim", [3, -4])
def test_a_dim_out_of_range_raises_as_a_loop_would(dim):
    """The fast path leaves a bad dim to the general rule; the op's own error comes out."""
    x = tg.zeros(5, 2, 3)
    with pytest.raises(IndexError) as want:
        x[0].sum(dim)
    with pytest.raises(IndexError) as got:
        F.vmap(lambda v: v.sum(dim))(x)
    assert str(got.value) == str(want.value)


def test_per_sample_gradients_through_the_common_cases(no_fallback):
    """vmap(grad) through every fast path at once, against single-sample gradients."""
    rng = np.random.default_rng(4)
    w, x, y = _t(rng, 3, 4), _t(rng, 6, 4), _t(rng, 6, 3)

    def loss(w, xb, yb):
        h = (xb.unsqueeze(0) @ w.T).relu() * 2.0 - yb.unsqueeze(0)
        return (h**2).mean() + h.sum(-1).mean()

    per = F.vmap(F.grad(loss), in_dims=(None, 0, 0))(w, x, y)
    for i in range(6):
        one = F.grad(loss)(w, x[i], y[i])
        np.testing.assert_allclose(per[i].numpy(), one.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(
    "name,fn,shapes,dims", ELEMENTWISE[:6], ids=[c[0] for c in ELEMENTWISE[:6]]
)
def test_elementwise_against_torch_func(torch_mod, name, fn, shapes, dims):
    torch = torch_mod
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s) for s in shapes]
    tfn = {
        "add_batched_lower_rank": lambda a, b: torch.add(a, b),
    }.get(name, fn)
    got = F.vmap(fn, in_dims=dims)(*[tg.tensor(a) for a in arrays])
    want = torch.func.vmap(tfn, in_dims=dims)(*[torch.tensor(a) for a in arrays])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name,fn", DIMS, ids=[c[0] for c in DIMS])
def test_dim_against_torch_func(torch_mod, name, fn):
    torch = torch_mod
    tfn = {
        "unsqueeze_mid": lambda v: torch.unsqueeze(v, 1),
    }.get(name, fn)
    a = np.random.default_rng(6).standard_normal((5, 4, 3))
    got = F.vmap(fn)(tg.tensor(a))
    want = torch.func.vmap(tfn)(torch.tensor(a))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("n,size", [(4, 64), (32, 128)])
def test_per_sample_linear_gemm_with_and_without_a_thread_block(n, size):
    """Shared weights: m·n·k below 2^18 (OpenBLAS keeps one thread by itself) and above
    it (a one-thread block): the same per-sample gradients as a loop."""
    rng = np.random.default_rng(7)
    p = {"w": tg.tensor(rng.standard_normal((size, size)).astype(np.float32))}
    x = tg.tensor(rng.standard_normal((n, size)).astype(np.float32))

    def loss(q, xb):
        h = tg.nn.functional.linear(xb.unsqueeze(0), q["w"]).tanh()
        return tg.nn.functional.linear(h, q["w"]).sum()

    per = F.vmap(F.grad(loss), in_dims=(None, 0))(p, x)
    for i in (0, n - 1):
        one = F.grad(loss)(p, x[i])
        np.testing.assert_allclose(per["w"][i].numpy(), one["w"].numpy(), rtol=1e-4, atol=1e-5)
