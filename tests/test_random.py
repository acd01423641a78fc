"""Random numbers (issue 12): Generator, seeding, states, generator= everywhere, the
randint/randperm/multinomial/normal/bernoulli family and the in-place fills."""

import os
import subprocess
import sys

import numpy as np
import pytest

import tapegrad as tg


def test_generator_api_matches_torch(torch_mod):
    g, tgen = tg.Generator(), torch_mod.Generator()
    assert g.initial_seed() == tgen.initial_seed() == 67280421310721
    assert g.manual_seed(5) is g and g.initial_seed() == 5
    s = g.seed()
    assert g.initial_seed() == s and isinstance(s, int)
    state = g.get_state()
    assert isinstance(state, tg.Tensor) and state.dtype == tg.uint8 and state.ndim == 1
    a = tg.rand(5, generator=g)
    assert g.set_state(state) is g
    assert tg.rand(5, generator=g).tolist() == a.tolist()
    assert g.initial_seed() == s
    with pytest.raises(TypeError, match="uint8 tensor"):
        g.set_state(tg.zeros(3))
    with pytest.raises(RuntimeError, match="CPU"):
        tg.Generator("cuda")
    assert (
        tg.Generator().manual_seed(-1).initial_seed()
        == torch_mod.Generator().manual_seed(-1).initial_seed()
    )


def test_manual_seed_makes_every_random_source_reproducible():
    def draw():
        lin = tg.nn.Linear(3, 2)
        return [
            tg.rand(2).tolist(),
            tg.randn(2).tolist(),
            tg.randint(10, (3,)).tolist(),
            tg.randperm(5).tolist(),
            tg.multinomial(tg.ones(4), 2).tolist(),
            tg.normal(tg.zeros(2), 1.0).tolist(),
            tg.bernoulli(tg.full((4,), 0.5)).tolist(),
            tg.empty(3).uniform_(-1, 1).tolist(),
            tg.nn.functional.dropout(tg.ones(6), 0.5).tolist(),
            lin.weight.detach().tolist(),
            list(tg.utils.data.RandomSampler(range(6))),
        ]

    assert tg.manual_seed(7) is tg.default_generator
    first = draw()
    tg.manual_seed(7)
    assert draw() == first
    tg.manual_seed(8)
    assert draw() != first


def test_generator_argument_is_used_by_every_sampling_function():
    fns = [
        lambda g: tg.rand(3, generator=g),
        lambda g: tg.randn(3, generator=g),
        lambda g: tg.randint(0, 100, (3,), generator=g),
        lambda g: tg.randperm(8, generator=g),
        lambda g: tg.rand_like(tg.ones(3), generator=g),
        lambda g: tg.randn_like(tg.ones(3), generator=g),
        lambda g: tg.randint_like(tg.ones(3), 100, generator=g),
        lambda g: tg.multinomial(tg.ones(8), 3, generator=g),
        lambda g: tg.normal(0.0, 1.0, (3,), generator=g),
        lambda g: tg.bernoulli(tg.full((8,), 0.5), generator=g),
        lambda g: tg.poisson(tg.full((8,), 3.0), generator=g),
        lambda g: tg.empty(3).normal_(generator=g),
        lambda g: tg.empty(3).uniform_(generator=g),
        lambda g: tg.empty(8).bernoulli_(0.5, generator=g),
        lambda g: tg.empty(3).exponential_(generator=g),
        lambda g: tg.empty(3).random_(0, 100, generator=g),
        lambda g: tg.nn.init.normal_(tg.empty(3), generator=g),
    ]
    for fn in fns:
        a = fn(tg.Generator().manual_seed(3)).tolist()
        tg.manual_seed(99)  # the default generator must not matter
        assert fn(tg.Generator().manual_seed(3)).tolist() == a
        assert fn(tg.Generator().manual_seed(4)).tolist() != a
    with pytest.raises(TypeError, match="Generator"):
        tg.rand(2, generator=np.random.default_rng(0))


def test_torch_random_module(torch_mod):
    assert set(n for n in dir(torch_mod.random) if not n.startswith("_")) >= {
        "manual_seed",
        "seed",
        "initial_seed",
        "get_rng_state",
        "set_rng_state",
        "fork_rng",
    }
    for name in ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state"]:
        assert callable(getattr(tg.random, name)) and callable(getattr(tg, name))
    tg.random.manual_seed(3)
    assert tg.initial_seed() == 3
    state = tg.get_rng_state()
    with tg.random.fork_rng():
        tg.randn(100)
    after_fork = tg.randn(3).tolist()
    tg.set_rng_state(state)
    assert tg.randn(3).tolist() == after_fork
    with tg.random.fork_rng(enabled=False):
        tg.randn(1)
    assert tg.randn(3).tolist() != after_fork
    s = tg.seed()
    assert tg.initial_seed() == s


def test_unseeded_numbers_differ_per_process():
    code = "import tapegrad as tg; print(tg.rand(4).tolist(), tg.initial_seed())"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(2)
    ]
    outs = {p.communicate(timeout=120)[0] for p in procs}
    assert all(p.returncode == 0 for p in procs) and len(outs) == 2


def test_randint_forms(torch_mod):
    for args, kwargs in [
        ((10, (4,)), {}),
        ((3, 5, (2, 2)), {}),
        ((), {"low": 2, "high": 5, "size": (3,)}),
        ((), {"high": 5, "size": (3,)}),
        ((5,), {"size": (2,)}),
        ((10, (4,)), {"dtype": tg.int32}),
    ]:
        ours = tg.randint(*args, **kwargs)
        targs = {k: (torch_mod.int32 if v is tg.int32 else v) for k, v in kwargs.items()}
        theirs = torch_mod.randint(*args, **targs)
        assert ours.shape == tuple(theirs.shape)
        assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    assert tg.randint(10, (4,), dtype=tg.float32).dtype == tg.float32
    v = tg.randint(3, 5, (1000,)).numpy()
    assert v.min() == 3 and v.max() == 4
    with pytest.raises(RuntimeError, match="from=5 >= to=5"):
        tg.randint(5, 5, (2,))
    with pytest.raises(TypeError, match="size"):
        tg.randint(0, 5)
    with pytest.raises(RuntimeError, match="floating point"):
        tg.randint(10, (4,), requires_grad=True)


def test_randperm(torch_mod):
    p = tg.randperm(50)
    assert p.dtype == tg.int64 and sorted(p.tolist()) == list(range(50))
    assert tg.randperm(0).shape == (0,)
    assert tg.randperm(4, dtype=tg.float32).dtype == tg.float32
    with pytest.raises(RuntimeError, match="non-negative"):
        tg.randperm(-1)


def test_multinomial_distribution_and_errors(torch_mod):
    w = tg.tensor([1.0, 0.0, 3.0])
    draws = tg.multinomial(w, 20000, replacement=True).numpy()
    freq = np.bincount(draws, minlength=3) / draws.size
    np.testing.assert_allclose(freq, [0.25, 0.0, 0.75], atol=0.02)
    # without replacement: distinct, never a zero-weight category while others remain
    rows = tg.multinomial(tg.tensor([[1.0, 0.0, 2.0, 1.0]] * 50), 3).numpy()
    assert rows.shape == (50, 3) and all(len(set(r)) == 3 and 1 not in r for r in rows)
    # first pick without replacement follows the weights
    first = tg.multinomial(tg.tensor([[1.0, 3.0]] * 20000), 1).numpy()[:, 0]
    assert abs(first.mean() - 0.75) < 0.02
    for bad, n, pattern in [
        (tg.tensor([-1.0, 2.0]), 1, "element < 0"),
        (tg.tensor([0.0, 0.0]), 1, "sum of probabilities"),
        (tg.ones(2, 2, 2), 1, "1 or 2 dim"),
        (tg.ones(2), 3, "without replacement"),
    ]:
        with pytest.raises(RuntimeError, match=pattern):
            tg.multinomial(bad, n)
        with pytest.raises(RuntimeError, match=pattern):
            torch_mod.multinomial(torch_mod.tensor(bad.numpy()), n)
    assert tg.ones(3).multinomial(2).dtype == tg.int64


def test_normal_bernoulli_poisson(torch_mod):
    x = tg.normal(tg.full((20000,), 2.0), 0.5)
    assert x.dtype == tg.float32 and abs(float(x.mean()) - 2.0) < 0.02
    assert abs(float(x.std()) - 0.5) < 0.02
    assert tg.normal(0.0, 1.0, (2, 3)).shape == (2, 3)
    assert tg.normal(tg.zeros(2, 1), tg.ones(3)).shape == (2, 3)
    with pytest.raises(RuntimeError, match="std >= 0"):
        tg.normal(tg.zeros(2), -1.0)
    b = tg.bernoulli(tg.tensor([0.0, 1.0] * 10))
    assert b.tolist() == [0.0, 1.0] * 10 and b.dtype == tg.float32
    assert abs(float(tg.bernoulli(tg.zeros(20000), 0.3).mean()) - 0.3) < 0.02
    with pytest.raises(RuntimeError, match="0 <= p <= 1"):
        tg.bernoulli(tg.tensor([2.0]))
    pois = tg.poisson(tg.full((20000,), 4.0))
    assert abs(float(pois.mean()) - 4.0) < 0.1


def test_inplace_fills_respect_the_graph_rules(torch_mod):
    w = tg.zeros(3, requires_grad=True)
    tw = torch_mod.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        tw.uniform_()
    for name in ["uniform_", "normal_", "bernoulli_", "exponential_"]:
        with pytest.raises(RuntimeError, match=f"{name}: a leaf Variable"):
            getattr(w, name)()
    with tg.no_grad():
        w.uniform_(-2, 3)
    v = w.detach().numpy()
    assert ((v >= -2) & (v < 3)).all() and w.grad_fn is None
    # on a non-leaf the fill is recorded: the old values get no gradient
    h = w * 2
    h.normal_()
    h.sum().backward()
    assert w.grad is None or not w.grad.numpy().any()  # copy_'s rule: no gradient to w
    r = tg.empty(1000, dtype=tg.int64).random_(0, 5).numpy()
    assert r.min() == 0 and r.max() == 4
    e = tg.empty(1000).exponential_(2.0).numpy()
    assert (e >= 0).all() and abs(e.mean() - 0.5) < 0.1
