"""Gradient checkpointing: checkpoint, checkpoint_sequential, strategies, the Budget planner."""

import itertools
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd.graph import saved_bytes
from tapegrad.utils import checkpoint_plan as cp
from tapegrad.utils.checkpoint import (
    Budget,
    Every,
    NoCheckpoint,
    Segment,
    Selective,
    SqrtN,
    checkpoint,
    checkpoint_sequential,
)


def mlp(n, width, dtype=np.float64, seed=0, bias=True):
    """Layers as closures over leaf weights: x -> tanh(x @ W + b)."""
    rng = np.random.default_rng(seed)
    params, layers = [], []
    for _ in range(n):
        W = tg.tensor(
            (rng.standard_normal((width, width)) / np.sqrt(width)).astype(dtype), requires_grad=True
        )
        b = tg.tensor((rng.standard_normal(width) * 0.1).astype(dtype), requires_grad=True)
        params += [W, b] if bias else [W]
        layers.append(tanh_layer(W, b if bias else 0.0))
    return layers, params


def tanh_layer(W, b):
    return lambda x: (x @ W + b).tanh()


def dropout(p):
    def layer(x):
        keep = (tg.rand(*x.shape, dtype=x.dtype) >= p).to(x.dtype)
        return x * keep * (1.0 / (1.0 - p))

    return layer


def batch_norm(width, dtype=np.float64):
    gamma = tg.tensor(np.linspace(0.5, 1.5, width).astype(dtype), requires_grad=True)
    beta = tg.tensor(np.linspace(-0.2, 0.2, width).astype(dtype), requires_grad=True)

    def layer(x):
        mean = x.mean(dim=0, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=0, keepdim=True)
        return (x - mean) / (var + 1e-5).sqrt() * gamma + beta

    return layer, [gamma, beta]


def run(layers, params, x, strategy, seed=None):
    """Loss and gradients (params, then x if it requires grad) of one checkpointed step."""
    for p in params + [x]:
        p.grad = None
    if seed is not None:
        tg.manual_seed(seed)
    y = checkpoint_sequential(layers, strategy, x)
    loss = (y * y).sum()
    loss.backward()
    grads = [p.grad.numpy().copy() for p in params]
    if x.requires_grad:
        grads.append(x.grad.numpy().copy())
    return loss.item(), grads


def assert_same(a, b):
    assert a[0] == pytest.approx(b[0], rel=1e-12)
    assert len(a[1]) == len(b[1])
    for ga, gb in zip(a[1], b[1]):
        np.testing.assert_allclose(ga, gb, rtol=1e-10, atol=1e-12)


STRATEGIES = [
    NoCheckpoint(),
    1,
    3,
    12,
    SqrtN(),
    Every(1),
    Every(5),
    Selective(lambda i, layer: i % 3 == 1),
    Budget(9000),
    Budget(6144, cost="layers"),
]


@pytest.mark.parametrize("strategy", STRATEGIES, ids=repr)
@pytest.mark.parametrize("input_grad", [False, True])
def test_tanh_mlp_same_gradients_for_every_strategy(strategy, input_grad):
    layers, params = mlp(12, 16)
    x = tg.tensor(np.random.standard_normal((8, 16)), requires_grad=input_grad)
    assert_same(run(layers, params, x, strategy), run(layers, params, x, NoCheckpoint()))


@pytest.mark.parametrize("strategy", [2, SqrtN(), Every(2), Budget(6000, cost="layers")], ids=repr)
def test_dropout_and_batch_norm_model_same_gradients(strategy):
    layers, params = mlp(6, 16)
    bn, bn_params = batch_norm(16)
    model = [layers[0], dropout(0.3), layers[1], bn, layers[2], dropout(0.5), *layers[3:]]
    x = tg.tensor(np.random.standard_normal((8, 16)), requires_grad=True)
    ps = params + bn_params
    plain = run(model, ps, x, NoCheckpoint(), seed=7)
    assert_same(run(model, ps, x, strategy, seed=7), plain)


@pytest.mark.parametrize("strategy", [2, SqrtN(), Every(2)], ids=repr)
def test_nn_sequential_with_dropout_and_batchnorm_same_gradients(strategy):
    """tg.nn layers (BatchNorm1d in train mode, Dropout) checkpointed: same loss and
    gradients as a plain run (running statistics are updated again by recomputation,
    as in PyTorch, so they are not compared)."""
    tg.manual_seed(0)
    model = tg.nn.Sequential(
        tg.nn.Linear(16, 32),
        tg.nn.BatchNorm1d(32),
        tg.nn.ReLU(),
        tg.nn.Dropout(0.3),
        tg.nn.Linear(32, 32),
        tg.nn.Tanh(),
        tg.nn.Dropout(0.2),
        tg.nn.Linear(32, 4),
    ).double()
    params = list(model.parameters())
    x = tg.tensor(np.random.standard_normal((8, 16)), requires_grad=True)
    layers = list(model)
    plain = run(layers, params, x, NoCheckpoint(), seed=3)
    assert_same(run(layers, params, x, strategy, seed=3), plain)


def test_rng_state_is_preserved_and_replayed():
    drop = dropout(0.5)
    W = tg.tensor(np.random.standard_normal((16, 16)), requires_grad=True)

    def f(x):
        return drop(x @ W).tanh()

    x = tg.tensor(np.random.standard_normal((8, 16)), requires_grad=True)

    def step(preserve):
        W.grad = x.grad = None
        tg.manual_seed(3)
        y = checkpoint(f, x, preserve_rng_state=preserve) if preserve is not None else f(x)
        after_forward = tg.default_generator.get_state()
        y.sum().backward()
        return W.grad.numpy().copy(), after_forward, tg.default_generator.get_state()

    plain, kept, replayed = step(None), step(True), step(False)
    np.testing.assert_allclose(kept[0], plain[0])
    # backward replays the forward's numbers and leaves the generator where the forward did
    # (states are uint8 tensors, as torch's ByteTensor states)
    assert np.array_equal(kept[1], plain[1]) and np.array_equal(kept[2], plain[2])
    # without preserving, the recomputation draws a different mask: the test can fail
    assert not np.allclose(replayed[0], plain[0])


def test_several_inputs_outputs_non_tensor_args_and_kwargs():
    a = tg.tensor(np.random.standard_normal((3, 4)), requires_grad=True)
    b = tg.tensor(np.random.standard_normal((4,)), requires_grad=True)
    c = tg.tensor(np.random.standard_normal((3, 4)))  # no grad
    s = tg.tensor(np.random.standard_normal((3, 4)), requires_grad=True)

    def f(x, y, const, scale, *, shift):
        return (x * y + const).tanh() * scale, "tag", (x - shift).exp(), 3

    def losses(fn):
        for t in (a, b, s):
            t.grad = None
        p, tag, q, three = fn(f, a, b, c, 2.0, shift=s)
        assert tag == "tag" and three == 3
        ((p * q).sum() + q.sum()).backward()
        return [t.grad.numpy().copy() for t in (a, b, s)]

    plain = losses(lambda fn, *args, **kw: fn(*args, **kw))
    ck = losses(checkpoint)
    for g1, g2 in zip(plain, ck):
        np.testing.assert_allclose(g1, g2, rtol=1e-12)
    out = checkpoint(f, a, b, c, 2.0, shift=s)
    assert out[0].grad_fn is out[2].grad_fn and out[0].grad_fn.name() == "CheckpointBackward"
    assert out[0].grad_fn.next_functions[2] is None  # c does not require grad


def test_unused_output_and_input_and_autograd_grad():
    x = tg.tensor(np.random.standard_normal(5), requires_grad=True)
    z = tg.tensor(np.random.standard_normal(5), requires_grad=True)
    p, _ = checkpoint(lambda u, v: (u.exp(), u * 2.0), x, z)
    (gx, gz) = tg.autograd.grad(p.sum(), [x, z], allow_unused=True)
    np.testing.assert_allclose(gx.numpy(), np.exp(x.detach().numpy()))
    assert gz is None


def test_captured_parameters_get_gradients_even_when_no_input_requires_grad():
    layers, params = mlp(3, 8)
    x = tg.tensor(np.random.standard_normal((4, 8)))
    plain = run(layers, params, x, NoCheckpoint())
    with pytest.warns(UserWarning, match="none of the Tensor arguments requires grad"):
        y = checkpoint(lambda t: layers[2](layers[1](layers[0](t))), x)
    for p in params:
        p.grad = None
    (y * y).sum().backward()
    for p, g in zip(params, plain[1]):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-12)


def test_nested_checkpoints():
    layers, params = mlp(4, 8)
    x = tg.tensor(np.random.standard_normal((4, 8)), requires_grad=True)

    def inner(t):
        return layers[2](layers[1](t))

    def outer(t):
        return layers[3](checkpoint(inner, layers[0](t)))

    plain = run(layers, params, x, NoCheckpoint())
    for p in params + [x]:
        p.grad = None
    y = checkpoint(outer, x)
    (y * y).sum().backward()
    for t, g in zip(params + [x], plain[1]):
        np.testing.assert_allclose(t.grad.numpy(), g, rtol=1e-12)


def test_retain_graph_recomputes_again_and_no_grad_runs_plainly():
    W = tg.tensor(np.random.standard_normal((3, 3)), requires_grad=True)
    x = tg.tensor(np.random.standard_normal((2, 3)), requires_grad=True)
    y = checkpoint(lambda t: (t @ W).tanh(), x).sum()
    y.backward(retain_graph=True)
    first = W.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(W.grad.numpy(), 2 * first)
    with tg.no_grad():
        z = checkpoint(lambda t: (t @ W).tanh(), x)
    assert z.grad_fn is None and not z.requires_grad


def test_checkpoint_keeps_only_its_inputs():
    layers, _ = mlp(8, 32)
    x = tg.tensor(np.random.standard_normal((16, 32)), requires_grad=True)
    plain = x
    for f in layers:
        plain = f(plain)
    h = layers[0](x)
    y = checkpoint(lambda t: checkpoint_sequential(layers[1:], NoCheckpoint(), t), h)
    act = 16 * 32 * 8
    assert saved_bytes(plain) == 8 * act  # x is a leaf that requires grad: not counted
    assert saved_bytes(y) == act  # only layer 0's output, held by layer 0 and the checkpoint


def test_errors():
    x = tg.tensor(np.random.standard_normal(4), requires_grad=True)
    y = checkpoint(lambda t: t.exp(), x)
    with pytest.raises(RuntimeError, match="create_graph"):
        tg.autograd.grad(y.sum(), x, create_graph=True)
    with pytest.raises(TypeError, match="holding Tensors that require grad"):
        checkpoint(lambda ts: ts[0].exp(), [x])
    with pytest.raises(TypeError, match="top level"):
        checkpoint(lambda t: [(t.exp(), t)], x)
    with pytest.raises(TypeError, match="callable"):
        checkpoint(3, x)
    calls = itertools.count()
    y = checkpoint(lambda t: t.exp().reshape([(4,), (2, 2)][next(calls)]), x)
    with pytest.raises(RuntimeError, match="deterministic"):
        y.sum().backward()
    z = tg.tensor(np.ones(4))
    y = checkpoint(lambda t, c: (t * c).exp(), x, z)
    z._data += 1
    z._vc.bump("add_")
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()


def test_sequential_errors():
    layers, _ = mlp(4, 4)
    x = tg.tensor(np.ones((2, 4)))
    with pytest.raises(TypeError, match="segments must be an int or a strategy"):
        checkpoint_sequential(layers, "sqrt", x)
    with pytest.raises(ValueError, match="positive int"):
        checkpoint_sequential(layers, 0, x)
    with pytest.raises(ValueError, match="positive int"):
        Every(0)
    with pytest.raises(TypeError, match="not callable"):
        checkpoint_sequential([layers[0], 5], 2, x)
    with pytest.raises(TypeError, match="unexpected keyword"):
        checkpoint_sequential(layers, 2, x, preserve=True)
    with pytest.raises(ValueError, match=r"smallest feasible budget is 192 bytes"):
        checkpoint_sequential(layers, Budget(100), x.requires_grad_())


def test_int_segments_match_torch(torch_mod):
    torch = torch_mod

    class Layer(torch.nn.Module):
        def __init__(self, W, b):
            super().__init__()
            self.W, self.b = W, b

        def forward(self, t):
            return torch.tanh(t @ self.W + self.b)

    layers, params = mlp(7, 6)
    x = tg.tensor(np.random.standard_normal((5, 6)), requires_grad=True)
    ours = run(layers, params, x, 3)
    tp = [torch.tensor(p.detach().numpy(), requires_grad=True) for p in params]
    seq = torch.nn.Sequential(*[Layer(tp[2 * i], tp[2 * i + 1]) for i in range(7)])
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    ty = torch.utils.checkpoint.checkpoint_sequential(seq, 3, tx, use_reentrant=False)
    loss = (ty * ty).sum()
    loss.backward()
    assert_same(ours, (loss.item(), [t.grad.numpy() for t in tp + [tx]]))


def test_plans_follow_pytorch_split_and_rules():
    assert SqrtN().plan(64).segments[:2] == (Segment(0, 8, True), Segment(8, 16, True))
    assert len(SqrtN().plan(64).segments) == 8 and not SqrtN().plan(64).segments[-1].checkpoint
    # PyTorch: segments of n // k layers, the last takes the rest and is not recomputed
    assert cp.Segments(3).plan(8).segments == (
        Segment(0, 2, True),
        Segment(2, 4, True),
        Segment(4, 8, False),
    )
    assert Every(3).plan(7).segments == (
        Segment(0, 3, True),
        Segment(3, 6, True),
        Segment(6, 7, False),
    )
    assert NoCheckpoint().plan(0).segments == ()
    assert "no plan made yet" in Every(2).explain()


# -- the planner ----------------------------------------------------------------------------


def all_plans(n):
    """Every partition of n layers into segments, each recomputed or kept."""
    for cuts in itertools.product([False, True], repeat=n - 1):
        bounds = [0] + [i + 1 for i, c in enumerate(cuts) if c] + [n]
        pieces = list(zip(bounds, bounds[1:]))
        for kinds in itertools.product([False, True], repeat=len(pieces)):
            yield tuple(Segment(s, e, k) for (s, e), k in zip(pieces, kinds))


def random_profile(n, rng):
    return cp.Profile(
        boundary=tuple(int(v) for v in rng.integers(1, 50, n + 1)),
        inner=tuple(int(v) for v in rng.integers(0, 80, n)),
        saves_input=tuple(bool(v) for v in rng.integers(0, 2, n)),
        saves_output=tuple(bool(v) for v in rng.integers(0, 2, n)),
        seconds=tuple(float(v) for v in rng.uniform(0.5, 2, n)),
    )


@pytest.mark.parametrize("seed", range(6))
def test_budget_dp_is_optimal_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = 6
    p = random_profile(n, rng)
    plans = [(cp.evaluate(p, segs), segs) for segs in all_plans(n)]
    least = min(peak for (_, peak, _), _ in plans)
    assert cp.smallest_budget(p) == least
    assert cp.solve(p, p.seconds, least - 1) is None
    for budget in (least, (least + plans[0][0][1]) // 2, 10**9):
        best = min(extra for (_, peak, extra), _ in plans if peak <= budget)
        segs = cp.solve(p, p.seconds, budget)
        _, peak, extra = cp.evaluate(p, segs)
        assert peak <= budget and extra == pytest.approx(best)


class PeakMeter:
    """Wraps layers to record the saved bytes alive after each recorded layer call; during
    backward, the outer graph (from ``root``) and the recomputed one are measured together."""

    def __init__(self):
        self.root, self.peak = None, 0

    def wrap(self, f):
        def layer(x):
            out = f(x)
            if tg.is_grad_enabled():
                roots = [out] if self.root is None else [out, self.root]
                self.peak = max(self.peak, saved_bytes(roots))
            return out

        return layer

    def step(self, layers, strategy, x):
        y = checkpoint_sequential([self.wrap(f) for f in layers], strategy, x)
        self.root = loss = (y * y).sum()
        self.peak = max(self.peak, saved_bytes(loss))
        loss.backward()
        return self.peak


def test_budget_measured_peak_never_exceeds_budget():
    layers, _ = mlp(16, 32, dtype=np.float32)
    x = tg.tensor(np.random.standard_normal((64, 32)).astype(np.float32))
    act = 64 * 32 * 4
    full = PeakMeter().step(layers, NoCheckpoint(), x)
    assert full == 17 * act  # x (a leaf without grad) and the 16 tanh outputs
    profile = cp.measure(layers, x)
    least = cp.smallest_budget(profile)
    for budget in [least, least + act // 2, 8 * act, 12 * act, full]:
        strategy = Budget(budget, cost="layers")
        peak = PeakMeter().step(layers, strategy, x)
        _, predicted, _ = strategy._last.predict()
        assert peak <= budget
        assert peak == predicted  # the memory model is exact for a chain of layers
        assert "predicted saved activations" in strategy.explain()
    assert Budget(full).plan(16, layers, x).segments == (Segment(0, 16, False),)
    strategy = Budget(least)
    with tg.no_grad():
        y = checkpoint_sequential(layers, strategy, x)
    assert "no plan made yet" in strategy.explain() and y.grad_fn is None


def test_sqrt_n_keeps_a_quarter_of_the_activations_on_a_64_layer_mlp():
    rng = np.random.default_rng(0)
    width, batch = 256, 64  # the bytes kept scale with both: a quarter at any size
    weights = [
        tg.tensor((rng.standard_normal((width, width)) / 16).astype(np.float32), requires_grad=True)
        for _ in range(4)
    ]
    layers = [(lambda W: lambda x: (x @ W).tanh())(weights[i % 4]) for i in range(64)]
    x = tg.tensor(rng.standard_normal((batch, width)).astype(np.float32))
    kept = {}
    for strategy in (NoCheckpoint(), SqrtN()):
        y = checkpoint_sequential(layers, strategy, x)
        kept[repr(strategy)] = saved_bytes(y)
        del y
    assert kept["NoCheckpoint()"] == 65 * batch * width * 4
    assert kept["SqrtN()"] <= 0.25 * kept["NoCheckpoint()"]


def test_budget_explain_and_layer_contract():
    layers, _ = mlp(4, 4)
    x = tg.tensor(np.ones((2, 4)), requires_grad=True)
    strategy = Budget(10**6)
    checkpoint_sequential(layers, strategy, x)
    text = strategy.explain()
    assert "layers [0, 4)  keep" in text and "extra compute: 0.00 ms" in text
    with pytest.raises(TypeError, match="one Tensor to one Tensor"):
        checkpoint_sequential([lambda t: (t, t)], Budget(10), x)


def test_sequential_with_children_and_no_warning():
    class Seq:
        def __init__(self, layers):
            self._layers = layers

        def children(self):
            return iter(self._layers)

    layers, params = mlp(4, 4)
    x = tg.tensor(np.ones((2, 4)))  # the first segment's input does not require grad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = checkpoint_sequential(Seq(layers), 2, x)
    out.sum().backward()
    assert all(p.grad is not None for p in params)
