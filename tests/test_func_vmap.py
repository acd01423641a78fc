"""tg.func.vmap: every op of the op table against a Python loop (in_dims 0 and 1, nested),
the in_dims/out_dims/randomness/chunk_size contract, compositions and torch.func."""

import warnings

import numpy as np
import pytest

import tapegrad as tg

from .optable import ALL_CASES

F = tg.func
IDS = [c.id for c in ALL_CASES]


# Ops whose output shape depends on the values: no batched result exists (torch.func.vmap
# refuses them too). The check: a loop over samples gives outputs of different shapes.
def _data_dependent(case, samples):
    shapes = {tuple(o.shape) for s in samples for o in _outs(case.fn(tg, *s))[:1]}
    return len(shapes) > 1


def _samples(case, n):
    return [[tg.tensor(a, dtype=tg.float64) for a in case.make_inputs(seed)] for seed in range(n)]


def _outs(out):
    return out if isinstance(out, tuple) else (out,)


# Rows that draw random numbers: vmap refuses them in randomness="error" mode (as torch.func);
# with randomness="same" every element draws what one call after the same seed draws.
RANDOM_OPS = {"svd_lowrank", "pca_lowrank"}
# Rows vmap refuses with an error (never the loop, which would be wrong): see _batch_rules.
UNSUPPORTED = {"as_strided_scatter": "addresses the storage"}


def _seeded(fn):
    def call(*a):
        tg.manual_seed(0)
        return fn(*a)

    return call


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("case", ALL_CASES, ids=IDS)
def test_every_op_under_vmap_matches_a_loop(case, dim):
    samples = _samples(case, 3)
    if _data_dependent(case, samples):
        pytest.skip(f"{case.id}: output shape depends on the values (torch.func.vmap refuses it)")
    if dim == 1 and any(x.ndim == 0 for x in samples[0]):
        dim = 0  # a 0-d input only stacks along dim 0
    batched = [tg.stack([s[i] for s in samples], dim=dim) for i in range(len(samples[0]))]
    fn = lambda *a: case.fn(tg, *a)  # noqa: E731
    if case.op in UNSUPPORTED:
        with pytest.raises(RuntimeError, match=UNSUPPORTED[case.op]):
            F.vmap(fn, in_dims=dim)(*batched)
        return
    randomness = "error"
    if case.op in RANDOM_OPS:
        with pytest.raises(RuntimeError, match="randomness error mode"):
            F.vmap(fn, in_dims=dim)(*batched)
        fn, randomness = _seeded(fn), "same"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        got = _outs(F.vmap(fn, in_dims=dim, randomness=randomness)(*batched))
    want = [_outs(fn(*s)) for s in samples]
    for k, g in enumerate(got):
        ref = np.stack([w[k].numpy() for w in want])
        np.testing.assert_allclose(g.detach().numpy(), ref, rtol=1e-12, atol=1e-14)
        assert g.dtype == want[0][k].dtype


@pytest.mark.parametrize("case", ALL_CASES[::7], ids=IDS[::7])
def test_nested_vmap_matches_a_double_loop(case):
    samples = [_samples(case, 2) for _ in range(2)]  # 2 x 2 grid (same values per row)
    if _data_dependent(case, samples[0]):
        pytest.skip(f"{case.id}: output shape depends on the values (torch.func.vmap refuses it)")
    grid = [[samples[i][j] for j in range(2)] for i in range(2)]
    nargs = len(grid[0][0])
    batched = [
        tg.stack([tg.stack([grid[i][j][a] for j in range(2)]) for i in range(2)])
        for a in range(nargs)
    ]
    fn, randomness = (lambda *a: case.fn(tg, *a)), "error"
    if case.op in UNSUPPORTED:
        pytest.skip(f"{case.id}: vmap refuses it (test_every_op_under_vmap_matches_a_loop)")
    if case.op in RANDOM_OPS:
        fn, randomness = _seeded(fn), "same"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        got = _outs(F.vmap(F.vmap(fn, randomness=randomness), randomness=randomness)(*batched))
    for k, g in enumerate(got):
        for i in range(2):
            for j in range(2):
                ref = _outs(fn(*grid[i][j]))[k]
                np.testing.assert_allclose(
                    g[i, j].detach().numpy(), ref.numpy(), rtol=1e-12, atol=1e-14
                )


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def test_in_dims_out_dims_and_nests():
    x = tg.randn(3, 4, dtype=tg.float64)
    y = tg.randn(4, dtype=tg.float64)
    out = F.vmap(lambda a, b: a * b, in_dims=(1, None))(x, tg.ones(3, dtype=tg.float64))
    np.testing.assert_allclose(out.numpy(), x.T.numpy())
    r = F.vmap(lambda a, b: a + b, in_dims=(0, None))(x, y)
    np.testing.assert_allclose(r.numpy(), (x + y).numpy())
    r = F.vmap(lambda a: a.sum(), in_dims=1)(x)
    np.testing.assert_allclose(r.numpy(), x.sum(0).numpy())
    r = F.vmap(lambda a: a * 2, out_dims=1)(x)
    np.testing.assert_allclose(r.numpy(), (x * 2).T.numpy())
    d = F.vmap(lambda p: {"s": p["a"] + p["b"][0]}, in_dims=({"a": 0, "b": (1,)},))(
        {"a": x, "b": (x.T,)}
    )
    np.testing.assert_allclose(d["s"].numpy(), (2 * x).numpy())
    a, b = F.vmap(lambda t: (t.sum(), y * 2), out_dims=(0, None))(x)
    assert a.shape == (3,) and b.shape == (4,)
    with pytest.raises(ValueError, match="out_dims=None"):  # torch raises too
        F.vmap(lambda t: (t.sum(), t * 0 + 1.0), out_dims=(0, None))(x)


def test_errors_like_torch():
    x = tg.randn(3, 4)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        F.vmap(lambda a, b: a + b)(x, tg.randn(2, 4))
    with pytest.raises(ValueError, match="in_dims is not compatible"):
        F.vmap(lambda a: a, in_dims=(0, 0))(x)
    with pytest.raises(ValueError, match="Tried to map over dim 2"):
        F.vmap(lambda a: a, in_dims=2)(x)
    with pytest.raises(ValueError, match="at least one input"):
        F.vmap(lambda a: a, in_dims=None)(x)
    with pytest.raises(RuntimeError, match="randomness"):
        F.vmap(lambda a: a, randomness="bad")
    with pytest.raises(ValueError, match="chunk_size"):
        F.vmap(lambda a: a, chunk_size=0)
    with pytest.raises(ValueError, match="only return Tensors"):
        F.vmap(lambda a: 3)(x)


def test_randomness():
    x = tg.zeros(4, 3)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        F.vmap(lambda a: a + tg.rand(3))(x)
    same = F.vmap(lambda a: a + tg.rand(3), randomness="same")(x)
    assert np.allclose(same.numpy(), same.numpy()[0])
    diff = F.vmap(lambda a: a + tg.rand(3), randomness="different")(x)
    assert not np.allclose(diff.numpy(), diff.numpy()[0])


def test_an_op_without_a_rule_warns_once_naming_it():
    from tapegrad import _batched

    _batched._WARNED.discard("cov")  # an op with no rule (kron has one since issue 15)
    x = tg.randn(4, 2, 3, dtype=tg.float64)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = F.vmap(lambda a: tg.cov(a))(x)
        F.vmap(lambda a: tg.cov(a))(x)
    assert sum("cov has no batching rule" in str(m.message) for m in w) == 1
    np.testing.assert_allclose(r.numpy(), [np.cov(a) for a in x.numpy()])


def test_compositions():
    rng = np.random.default_rng(0)
    W = tg.tensor(rng.standard_normal((4, 3)))
    X = tg.tensor(rng.standard_normal((5, 4)))

    def f(w, x):
        return ((x @ w).tanh() ** 2).sum()

    per = F.vmap(F.grad(f), in_dims=(None, 0))(W, X)
    for b in range(5):
        np.testing.assert_allclose(per[b].numpy(), F.grad(f)(W, X[b]).numpy(), rtol=1e-12)
    g = F.grad(lambda w: F.vmap(lambda x: f(w, x))(X).sum())(W)
    np.testing.assert_allclose(g.numpy(), per.sum(0).numpy(), rtol=1e-12)
    j = F.vmap(F.jacfwd(lambda x: (x @ W).sin()))(X)
    for b in range(5):
        np.testing.assert_allclose(j[b].numpy(), F.jacrev(lambda x: (x @ W).sin())(X[b]).numpy())
    h = F.vmap(F.hessian(lambda x: (x.sin() * x).sum()))(X)
    assert h.shape == (5, 4, 4)
    hv = F.jacfwd(F.vmap(lambda x: x.sin()))(X[:2])
    assert hv.shape == (2, 4, 2, 4)


def test_against_torch_func(torch_mod):
    torch = torch_mod
    rng = np.random.default_rng(1)
    xa, wa = rng.standard_normal((6, 4)), rng.standard_normal((4, 3))

    def f(m, w):
        return lambda x: (x @ w).softmax(-1) * x.norm()

    ours = F.vmap(f(tg, tg.tensor(wa)), in_dims=1, out_dims=1)(tg.tensor(xa).T.contiguous())
    theirs = torch.func.vmap(f(torch, torch.tensor(wa)), in_dims=1, out_dims=1)(
        torch.tensor(xa).T.contiguous()
    )
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_chunk_size_and_negative_out_dims_give_the_same_result():
    x = tg.randn(5, 3, dtype=tg.float64)
    ref = F.vmap(lambda a: a.exp())(x)
    np.testing.assert_allclose(F.vmap(lambda a: a.exp(), chunk_size=2)(x).numpy(), ref.numpy())
    np.testing.assert_allclose(F.vmap(lambda a: a.exp(), out_dims=-1)(x).numpy(), ref.T.numpy())
