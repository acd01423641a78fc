"""The harness of the batching-rule tests (test_vmap_rules_*.py): a rule against a Python
loop for in_dims 0 and 1, under nested vmap and through vmap(grad), with no fallback."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _batched, _vmap

F = tg.func
B = 3


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    """A rule that gives up (the per-op loop or the whole-function loop) fails the test."""

    def refuse(name, *a, **k):
        raise AssertionError(f"vmap fell back to a loop for {name}")

    monkeypatch.setattr(_batched, "loop", refuse)
    monkeypatch.setattr(_vmap, "_loop", lambda *a, **k: refuse("the whole function"))


def _ints(rng, high, shape):
    return rng.integers(0, high, size=shape)


def _tensor(a):
    a = np.asarray(a)
    return tg.tensor(a, dtype=tg.int64 if a.dtype.kind in "iu" else tg.float64)


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def _as_list(out):
    return list(out) if isinstance(out, tuple) else [out]


# name -> (fn(*tensors), make(rng, batch) -> arrays, mapped flags, float arg for vmap(grad))
def _loop(fn, args, mapped, n):
    outs = [_as_list(fn(*[a[b] if m else a for a, m in zip(args, mapped)])) for b in range(n)]
    return [np.stack([o[k].detach().numpy() for o in outs]) for k in range(len(outs[0]))]


def _assert_close(got, want):
    got = _as_list(got)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == w.shape
        assert g.detach().numpy().dtype == w.dtype, (g.dtype, w.dtype)
        np.testing.assert_allclose(g.detach().numpy(), w, rtol=1e-12, atol=1e-13)


def _run_in_dims(case, in_dim):
    fn, make, mapped, _ = case
    arrays = make(np.random.default_rng(0), (B,))
    args = [_tensor(a) for a in arrays]
    want = _loop(fn, args, mapped, B)
    dims, moved = [], []
    for a, m in zip(arrays, mapped):
        if m and in_dim == 1 and a.ndim > 1:
            moved.append(_tensor(np.moveaxis(a, 0, 1)))
            dims.append(1)
        else:
            moved.append(_tensor(a))
            dims.append(0 if m else None)
    _assert_close(F.vmap(fn, in_dims=tuple(dims))(*moved), want)


def _run_nested(case):
    fn, make, mapped, _ = case
    arrays = make(np.random.default_rng(1), (2, B))
    args = [_tensor(a) for a in arrays]
    dims = tuple(0 if m else None for m in mapped)
    got = _as_list(F.vmap(F.vmap(fn, in_dims=dims), in_dims=dims)(*args))
    for i in range(2):
        row = [a[i] if m else a for a, m in zip(args, mapped)]
        want = _loop(fn, row, mapped, B)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g[i].detach().numpy(), w, rtol=1e-12, atol=1e-13)


def _run_grad(case):
    fn, make, mapped, k = case
    arrays = make(np.random.default_rng(2), (B,))
    args = [_tensor(a) for a in arrays]
    rng = np.random.default_rng(3)
    probe = [_tensor(rng.standard_normal(o.shape[1:])) for o in _loop(fn, args, mapped, B)[:1]]

    def loss(*a):
        return (_first(fn(*a)) * probe[0]).sum()

    dims = tuple(0 if m else None for m in mapped)
    got = F.vmap(F.grad(loss, argnums=k), in_dims=dims)(*args)
    want = [
        F.grad(loss, argnums=k)(*[a[b] if m else a for a, m in zip(args, mapped)]).numpy()
        for b in range(B)
    ]
    np.testing.assert_allclose(got.numpy(), np.stack(want), rtol=1e-11, atol=1e-13)


def rule_tests(cases):
    """The three tests of a table of rule cases, for a test module to bind at top level:
    against a loop for in_dims 0 and 1, under nested vmap, and per-sample gradients (vmap of
    grad with respect to the float arguments equals a loop of grads; an unmapped argument
    gets per-sample gradients too, Note [grad under vmap])."""
    ids = list(cases)

    @pytest.mark.parametrize("in_dim", [0, 1])
    @pytest.mark.parametrize("name", ids)
    def test_rule_matches_a_loop(name, in_dim):
        _run_in_dims(cases[name], in_dim)

    @pytest.mark.parametrize("name", ids)
    def test_rule_under_nested_vmap(name):
        _run_nested(cases[name])

    @pytest.mark.parametrize("name", ids)
    def test_per_sample_gradients_through_the_rule(name):
        _run_grad(cases[name])

    return (
        test_rule_matches_a_loop,
        test_rule_under_nested_vmap,
        test_per_sample_gradients_through_the_rule,
    )
