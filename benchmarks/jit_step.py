"""Graph cache speed: training steps, eager tapegrad vs ``tg.jit.cache`` vs PyTorch eager.

Three workloads, each timed in the same run for all contenders, with BLAS pinned
to one thread everywhere (threadpoolctl; ``torch.set_num_threads(1)``): on a shared
machine multi-threaded BLAS makes these small GEMMs erratic.

* MLP 64-128-10, batch 32, hand-written: forward (matmul, +, relu, matmul, +), MSE
  against one-hot targets, backward, SGD momentum with in-place NumPy ops.
* MLP 64-128-10, batch 32, with ``tg.nn`` (Linear, ReLU, Sequential,
  CrossEntropyLoss) and ``tg.optim.SGD(momentum=0.9)``.
* The digits CNN of the demo (``tapegrad.demo.make_model``), batch 64 of 1x8x8
  images, CrossEntropyLoss, ``tg.optim.Adam``, in train mode (dropout on).

Reports microseconds per step and the ratios. Run:
``python benchmarks/jit_step.py [--steps N]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

import tapegrad as tg
from tapegrad import nn
from tapegrad.demo import make_model

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

SIZES = (64, 128, 10)
BATCH = 32


def make_params(seed=0):
    rng = np.random.default_rng(seed)
    arrays = []
    for n_in, n_out in zip(SIZES[:-1], SIZES[1:], strict=True):
        arrays.append((rng.standard_normal((n_in, n_out)) / n_in**0.5).astype(np.float32))
        arrays.append(np.zeros(n_out, np.float32))
    return arrays


def tapegrad_step(arrays, lr=0.01, momentum=0.9):
    params = [tg.tensor(a, requires_grad=True) for a in arrays]
    bufs = [np.zeros_like(a) for a in arrays]

    def step(x, y):
        for p in params:
            p.grad = None
        w1, b1, w2, b2 = params
        out = (x @ w1 + b1).relu() @ w2 + b2
        diff = out - y
        loss = (diff * diff).mean()
        loss.backward()
        with tg.no_grad():
            for p, buf in zip(params, bufs, strict=True):
                buf *= momentum
                buf += p.grad._data
                p._data -= lr * buf
        return loss

    return step, params


def torch_step(arrays, lr=0.01, momentum=0.9):
    params = [torch.tensor(a, requires_grad=True) for a in arrays]
    opt = torch.optim.SGD(params, lr=lr, momentum=momentum)

    def step(x, y):
        opt.zero_grad()
        w1, b1, w2, b2 = params
        out = (x @ w1 + b1).relu() @ w2 + b2
        diff = out - y
        loss = (diff * diff).mean()
        loss.backward()
        opt.step()
        return loss

    return step, params


def data(n, seed=1):
    rng = np.random.default_rng(seed)
    xs = rng.standard_normal((n, BATCH, SIZES[0])).astype(np.float32)
    ys = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], (n, BATCH))]
    return xs, ys


def time_steps(step, batches, repeats=5):
    """Best over ``repeats`` of the mean time per step (microseconds)."""
    for x, y in batches[:5]:
        step(x, y)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for x, y in batches:
            step(x, y)
        best = min(best, (time.perf_counter() - t0) / len(batches))
    return best * 1e6


def nn_step(model, opt, loss_fn):
    """One step with the framework's own modules and optimizer (tapegrad or torch)."""

    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def torch_twin(tg_model, layers):
    """A torch model with ``layers`` holding ``tg_model``'s weights (same order)."""
    model = torch.nn.Sequential(*layers)
    with torch.no_grad():
        for p, q in zip(model.parameters(), tg_model.parameters(), strict=True):
            p.copy_(torch.from_numpy(q._data.copy()))
    return model


def mlp_nn(n_steps):
    rng = np.random.default_rng(2)
    xs = rng.standard_normal((n_steps, BATCH, SIZES[0])).astype(np.float32)
    ys = rng.integers(0, SIZES[-1], (n_steps, BATCH))

    def tg_model():
        tg.manual_seed(0)
        return nn.Sequential(
            nn.Linear(SIZES[0], SIZES[1]), nn.ReLU(), nn.Linear(SIZES[1], SIZES[2])
        )

    def tg_step(model):
        return nn_step(
            model, tg.optim.SGD(model.parameters(), lr=0.01, momentum=0.9), nn.CrossEntropyLoss()
        )

    def torch_model(ref):
        return torch_twin(
            ref,
            [
                torch.nn.Linear(SIZES[0], SIZES[1]),
                torch.nn.ReLU(),
                torch.nn.Linear(SIZES[1], SIZES[2]),
            ],
        )

    def torch_step(model):
        return nn_step(
            model,
            torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
            torch.nn.CrossEntropyLoss(),
        )

    return xs, ys, tg_model, tg_step, torch_model, torch_step


def digits_cnn(n_steps, batch=64):
    rng = np.random.default_rng(3)
    xs = rng.random((n_steps, batch, 1, 8, 8), dtype=np.float32)
    ys = rng.integers(0, 10, (n_steps, batch))

    def tg_model():
        tg.manual_seed(0)
        return make_model()

    def tg_step(model):
        return nn_step(model, tg.optim.Adam(model.parameters(), lr=1e-2), nn.CrossEntropyLoss())

    def torch_model(ref):
        return torch_twin(ref, list(make_model(torch.nn)))

    def torch_step(model):
        return nn_step(
            model, torch.optim.Adam(model.parameters(), lr=1e-2), torch.nn.CrossEntropyLoss()
        )

    return xs, ys, tg_model, tg_step, torch_model, torch_step


def compare_nn(workload, n_steps, repeats):
    """Eager vs cached tapegrad vs torch eager on one nn workload; us per step."""
    xs, ys, tg_model, tg_step, torch_model, torch_step = workload(n_steps)
    batches = [(tg.tensor(x), tg.tensor(y)) for x, y in zip(xs, ys, strict=True)]
    eager_model, cached_model = tg_model(), tg_model()
    cached = tg.jit.cache(tg_step(cached_model))
    results = {
        "tapegrad eager": time_steps(tg_step(eager_model), batches, repeats),
        "tapegrad cached": time_steps(cached, batches, repeats),
    }
    assert cached.cache_info().hits > 0, "the cache never replayed"
    if torch is not None:
        t_batches = [
            (torch.from_numpy(x), torch.from_numpy(y)) for x, y in zip(xs, ys, strict=True)
        ]
        results["torch eager"] = time_steps(
            torch_step(torch_model(eager_model)), t_batches, repeats
        )
    return results, cached.cache_info()


def report(title, results, info):
    print(title + "; us per step")
    for name, us in results.items():
        print(f"  {name:16s} {us:9.1f}")
    speed_up = results["tapegrad eager"] / results["tapegrad cached"]
    print(f"  cached speed-up over eager tapegrad: {speed_up:.2f}x")
    if "torch eager" in results:
        vs_torch = results["torch eager"] / results["tapegrad cached"]
        print(f"  cached vs torch eager: {vs_torch:.2f}x faster")
    print(f"  cache: {info}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--cnn-steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--record-ops",
        type=int,
        default=10_000,
        help="also time recording a step of about this many array ops (0: skip)",
    )
    args = parser.parse_args(argv)
    if torch is not None:
        torch.set_num_threads(1)
    with threadpool_limits(limits=1, user_api="blas"):
        out = {"mlp": run_mlp(args.steps, args.repeats)}
        results, info = compare_nn(mlp_nn, args.steps, args.repeats)
        report(
            f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, tg.nn + tg.optim.SGD "
            "momentum, CrossEntropyLoss",
            results,
            info,
        )
        out["mlp_nn"] = results
        results, info = compare_nn(digits_cnn, args.cnn_steps, args.repeats)
        report(
            "digits CNN (demo model), batch 64, CrossEntropyLoss, Adam, train mode", results, info
        )
        out["cnn"] = results
        if args.record_ops:
            out["record"] = recording_cost(args.record_ops)
    return out


def recording_cost(n_ops):
    """Calls before the first replay (warm-up) and the time of each of them, for a step of
    about ``n_ops`` recorded array ops: a chain of small elementwise ops (as
    ``benchmarks/overhead.py``), its backward and an in-place update of the leaf."""
    w = tg.tensor(np.linspace(-1.0, 1.0, 16, dtype=np.float32), requires_grad=True)
    links = max(1, n_ops // 10)  # 4 forward ops per link, about 6 in the backward

    def step(x):
        y = x * w
        for i in range(links):
            y = tg.tanh(y * 0.99 + 0.01)
            y = tg.exp(y) if i % 2 else tg.sigmoid(y)
        loss = y.sum()
        loss.backward()
        with tg.no_grad():
            w.sub_(w.grad * 1e-3)
            w.grad = None
        return loss

    cached = tg.jit.cache(step)
    x = tg.ones(16)
    times = []
    while cached.cache_info().hits == 0 and len(times) < 10:
        t0 = time.perf_counter()
        cached(x)
        times.append(time.perf_counter() - t0)
    eager_t0 = time.perf_counter()
    step(x)
    eager = time.perf_counter() - eager_t0
    replay_t0 = time.perf_counter()
    cached(x)
    replay = time.perf_counter() - replay_t0
    n = _program_ops(cached, x)
    warm = len(times) - 1  # the last timed call replayed
    print(f"recording a step of {n} array ops ({links} links of the small-op chain):")
    print(f"  calls before the first replay: {warm}")
    print("  each of them, s: " + ", ".join(f"{t:.2f}" for t in times[:warm]))
    print(f"  eager call {eager:.3f} s, replay {replay * 1e3:.1f} ms")
    return {"warm_up_calls": warm, "recording_s": times[:warm], "eager_s": eager, "ops": n}


def _program_ops(cached, x):
    """The number of array ops in the replay program (from ``explain()``'s first line)."""
    head = cached.explain(x).splitlines()[0]
    return int(head.split(": ")[1].split(" array ops")[0])


def run_mlp(n_steps, repeats):
    xs, ys = data(n_steps)
    tg_batches = [(tg.tensor(x), tg.tensor(y)) for x, y in zip(xs, ys, strict=True)]
    arrays = make_params()
    eager, eager_params = tapegrad_step(arrays)
    cached_fn, cached_params = tapegrad_step(arrays)
    cached = tg.jit.cache(cached_fn)
    results = {
        "tapegrad eager": time_steps(eager, tg_batches, repeats),
        "tapegrad cached": time_steps(cached, tg_batches, repeats),
    }
    for p, q in zip(eager_params, cached_params, strict=True):  # same steps, same results
        np.testing.assert_allclose(p._data, q._data, rtol=1e-4, atol=1e-5)
    if torch is not None:
        t_step, _ = torch_step(arrays)
        t_batches = [
            (torch.from_numpy(x), torch.from_numpy(y)) for x, y in zip(xs, ys, strict=True)
        ]
        results["torch eager"] = time_steps(t_step, t_batches, repeats)
    report(
        f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, hand-written SGD momentum, MSE",
        results,
        cached.cache_info(),
    )
    return results


if __name__ == "__main__":
    main()
