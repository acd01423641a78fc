"""tg.jit.cache replays whole training steps of tg.nn models with tg.optim optimizers.

Each test runs a cached model and an eager twin (same seed, same initial weights,
same batches, same random stream) and compares them, once with ``verify_every=1``
(every replay also checked against an eager run of the same state) and once
without. Cache counters are asserted exactly, so a cache that silently falls back
to eager fails: the policy (Note [Stable recordings] in jit/cache.py) commits a
program once two consecutive recordings agree, so a signature costs 2 recorded
calls, or 3 when the first call creates state (SGD momentum buffers, Adam moments).
"""

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn

VERIFY = pytest.mark.parametrize("verify_every", [None, 1])


def make_mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))


def make_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(4, 6, 3, padding=1),  # several input channels: a copied weight gradient
        nn.Flatten(),
        nn.Dropout(0.3),
        nn.Linear(6 * 4 * 4, 3),
    )


def twins(make):
    tg.manual_seed(0)
    a = make()
    tg.manual_seed(0)
    b = make()
    return a, b


def make_step(model, opt):
    loss_fn = nn.CrossEntropyLoss()

    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def batches(n, x_shape, n_classes, seed=1):
    rng = np.random.default_rng(seed)
    return [
        (
            tg.tensor(rng.standard_normal(x_shape).astype(np.float32)),
            tg.tensor(rng.integers(0, n_classes, x_shape[0])),
        )
        for _ in range(n)
    ]


def assert_same_state(cached, eager):
    sc, se = cached.state_dict(), eager.state_dict()
    assert sc.keys() == se.keys()
    for k in sc:
        np.testing.assert_allclose(sc[k]._data, se[k]._data, rtol=1e-5, atol=1e-6, err_msg=k)


def train_both(make, make_opt, data, verify_every, seed=7):
    cached_model, eager_model = twins(make)
    cached = tg.jit.cache(
        make_step(cached_model, make_opt(cached_model)), verify_every=verify_every
    )
    eager = make_step(eager_model, make_opt(eager_model))
    tg.manual_seed(seed)
    eager_losses = [eager(x, y).item() for x, y in data]
    tg.manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager, no warning
        cached_losses = [cached(x, y).item() for x, y in data]
    np.testing.assert_allclose(cached_losses, eager_losses, rtol=1e-5, atol=1e-6)
    assert_same_state(cached_model, eager_model)
    return cached, cached_model, eager_model


OPTIMIZERS = {
    "sgd_momentum": lambda m: tg.optim.SGD(m.parameters(), lr=0.05, momentum=0.9),
    "adam": lambda m: tg.optim.Adam(m.parameters(), lr=0.01),
}


@VERIFY
@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_mlp_training_replays_like_eager(opt, verify_every):
    data = batches(20, (5, 6), 4)
    cached, *_ = train_both(make_mlp, OPTIMIZERS[opt], data, verify_every)
    # 3 recordings (the first step creates the optimizer state), then 17 replays
    assert cached.cache_info() == (17, 3, 1024, 1)


@VERIFY
def test_cnn_training_with_batchnorm_and_dropout(verify_every):
    data = batches(20, (5, 1, 8, 8), 3)
    cached, model, eager_model = train_both(make_cnn, OPTIMIZERS["adam"], data, verify_every)
    assert cached.cache_info() == (17, 3, 1024, 1)
    assert int(model[1].num_batches_tracked._data) == 20
    assert model[1].num_batches_tracked._data.dtype == np.int64
    assert not np.allclose(model[1].running_mean._data, 0)  # the statistics did move


@VERIFY
def test_cnn_eval_inference_and_mode_switches_record_again(verify_every):
    model, eager_model = twins(make_cnn)
    infer = tg.jit.cache(lambda x: model(x), verify_every=verify_every)
    xs = [x for x, _ in batches(12, (5, 1, 8, 8), 3)]
    phases = [("eval", xs[:4]), ("train", xs[4:8]), ("eval", xs[8:])]
    tg.manual_seed(3)
    expected = []
    with tg.no_grad():
        for mode, chunk in phases:
            getattr(eager_model, mode)()
            expected += [eager_model(x).numpy() for x in chunk]
    tg.manual_seed(3)
    got = []
    with tg.no_grad():
        for mode, chunk in phases:
            getattr(model, mode)()
            got += [infer(x) for x in chunk]
    for g, e in zip(got, expected, strict=True):
        assert isinstance(g, tg.Tensor) and g.grad_fn is None
        np.testing.assert_allclose(g._data, e, rtol=1e-5, atol=1e-6)
    # each phase: 2 recordings (the training flags are guards), then 2 replays
    assert infer.cache_info() == (6, 6, 1024, 1)
    assert_same_state(model, eager_model)  # train-mode calls updated the running stats


def test_cnn_new_input_shape_records_again():
    model, _ = twins(make_cnn)
    step = tg.jit.cache(make_step(model, OPTIMIZERS["sgd_momentum"](model)), verify_every=1)
    for x, y in batches(4, (5, 1, 8, 8), 3):
        step(x, y)
    assert step.cache_info() == (1, 3, 1024, 1)
    for x, y in batches(4, (3, 1, 8, 8), 3):
        step(x, y)
    # the momentum buffers exist now: 2 recordings for the new batch size
    assert step.cache_info() == (3, 5, 1024, 2)


@VERIFY
def test_lr_scheduler_changes_are_never_stale(verify_every):
    data = batches(20, (5, 6), 4)
    results = []
    for cache in (False, True):
        tg.manual_seed(0)
        model = make_mlp()
        opt = tg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        sched = tg.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.3)
        step = make_step(model, opt)
        if cache:
            step = tg.jit.cache(step, verify_every=verify_every)
        for i, (x, y) in enumerate(data):
            step(x, y)
            if i % 5 == 4:  # an 'epoch' of 5 steps
                sched.step()
        results.append(model)
    assert_same_state(*results)
    assert results[1].training and abs(opt.param_groups[0]["lr"] - 0.1 * 0.3**4) < 1e-12
    # lr is a guard: each change records twice; first epoch 3 recordings (new state)
    assert step.cache_info() == (11, 9, 1024, 1)


def test_lr_changing_every_call_runs_eagerly():
    data = batches(8, (5, 6), 4)
    results = []
    for cache in (False, True):
        tg.manual_seed(0)
        model = make_mlp()
        opt = tg.optim.SGD(model.parameters(), lr=0.1)
        step = make_step(model, opt)
        if cache:
            step = tg.jit.cache(step)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for i, (x, y) in enumerate(data):
                opt.param_groups[0]["lr"] = 0.1 / (i + 1)
                step(x, y)
        results.append(model)
    assert_same_state(*results)
    assert step.cache_info().hits == 0
    assert any("changes from call to call" in str(w.message) for w in caught)


def test_batchnorm_cumulative_average_replays():
    tg.manual_seed(0)
    bn, eager_bn = nn.BatchNorm1d(3, momentum=None), nn.BatchNorm1d(3, momentum=None)
    f = tg.jit.cache(lambda x: bn(x), verify_every=1)
    # no_grad: with grad on the output would carry a graph, which a replay cannot return
    # (test_jit_signature.py); running statistics still update under no_grad
    with tg.no_grad():
        for x, _ in batches(6, (4, 3), 2):
            f(x)
            eager_bn(x)
    assert f.cache_info() == (4, 2, 1024, 1)
    assert_same_state(bn, eager_bn)


def test_python_list_entries_and_lengths_are_guarded():
    scale = [2.0]
    weights = [tg.ones(2)]

    def f(x):
        for w in weights:
            x = x * w
        return x * scale[0]

    c = tg.jit.cache(f)
    x = tg.ones(2)
    for _ in range(3):
        c(x)
    scale[0] = 5.0
    np.testing.assert_array_equal(c(x)._data, [5, 5])
    weights.append(tg.full((2,), 3.0))
    np.testing.assert_array_equal(c(x)._data, [15, 15])
    assert c.cache_info().hits == 1


def test_out_of_range_target_raises_in_replay():
    model = make_mlp()
    step = tg.jit.cache(make_step(model, OPTIMIZERS["adam"](model)))
    data = batches(4, (5, 6), 4)
    for x, y in data:
        step(x, y)
    assert step.cache_info().hits == 1
    x, y = data[0]
    bad = tg.tensor(np.array([0, 1, 7, 2, 3]))
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        step(x, bad)
    assert step.cache_info() == (1, 3, 1024, 1)  # raised by the replay, not a new recording


def test_demo_cnn_step_replays():
    from tapegrad.demo import make_model  # noqa: PLC0415

    data = batches(5, (4, 1, 8, 8), 10)
    cached, *_ = train_both(
        make_model, lambda m: tg.optim.Adam(m.parameters(), lr=1e-2), data, verify_every=1
    )
    assert cached.cache_info() == (2, 3, 1024, 1)


def test_step_stored_beside_its_state_still_replays():
    """The state walk reaches the cached function itself (trainer.step); its own hit and
    miss counters must not become guards, or no two recordings would ever agree."""

    class Trainer:
        def __init__(self):
            tg.manual_seed(0)
            self.model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
            self.opt = tg.optim.SGD(self.model.parameters(), lr=0.1)
            self.loss_fn = nn.CrossEntropyLoss()
            self.step = tg.jit.cache(self._step)

        def _step(self, x, y):
            self.opt.zero_grad()
            loss = self.loss_fn(self.model(x), y)
            loss.backward()
            self.opt.step()
            return loss

    trainer = Trainer()
    x, y = tg.randn(6, 4), tg.randint(0, 3, (6,))
    for _ in range(8):
        trainer.step(x, y)
    assert trainer.step.cache_info().hits > 0
