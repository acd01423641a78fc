"""Graph cache speed: one training step of a small MLP (64-128-10, batch 32).

Times, in the same run, eager tapegrad, the same step under ``tg.jit.cache``, and
PyTorch eager (if installed), and reports microseconds per step and the ratios.
The step: forward (matmul, +, relu, matmul, +), MSE loss against one-hot targets,
backward, and SGD with momentum written with in-place NumPy ops on ``p.data`` (as an
optimizer does). Run: ``python benchmarks/jit_step.py [--steps N]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import tapegrad as tg

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
                buf += p.grad.data
                p.data -= lr * buf
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args(argv)
    xs, ys = data(args.steps)
    tg_batches = [(tg.tensor(x), tg.tensor(y)) for x, y in zip(xs, ys, strict=True)]
    arrays = make_params()

    eager, eager_params = tapegrad_step(arrays)
    cached_fn, cached_params = tapegrad_step(arrays)
    cached = tg.jit.cache(cached_fn)
    results = {"tapegrad eager": time_steps(eager, tg_batches),
               "tapegrad cached": time_steps(cached, tg_batches)}
    for p, q in zip(eager_params, cached_params, strict=True):  # same steps, same results
        np.testing.assert_allclose(p.data, q.data, rtol=1e-4, atol=1e-5)
    if torch is not None:
        torch.set_num_threads(1)
        t_step, _ = torch_step(arrays)
        t_batches = [(torch.from_numpy(x), torch.from_numpy(y))
                     for x, y in zip(xs, ys, strict=True)]
        results["torch eager"] = time_steps(t_step, t_batches)
    print(f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, SGD momentum; us per step")
    for name, us in results.items():
        print(f"  {name:16s} {us:8.1f}")
    speed_up = results["tapegrad eager"] / results["tapegrad cached"]
    print(f"  cached speed-up over eager tapegrad: {speed_up:.2f}x")
    if "torch eager" in results:
        vs_torch = results["torch eager"] / results["tapegrad cached"]
        print(f"  cached vs torch eager: {vs_torch:.2f}x faster")
    info = cached.cache_info()
    print(f"  cache: {info}")
    return results


if __name__ == "__main__":
    main()
