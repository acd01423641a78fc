"""The README's speed table: hand NumPy, PyTorch eager, tapegrad eager and cached.

Rows (issue 16), each a training step timed in one process, contenders interleaved
round by round, median over rounds of the mean time per step, BLAS threads left at
their defaults (what users get) and NCHW images:

* MLP 64-256-256-10 (ReLU), batch 64, cross-entropy, SGD momentum 0.9.
* digits CNN: ``F.conv2d`` 1->16 (3x3, pad 1), ReLU, 2x2 max pool, ``F.conv2d`` 16->32,
  ReLU, spatial mean, linear 32->10, cross-entropy, SGD momentum; batch 64 of 1x8x8.
* 48 x (Linear(1024) + tanh), batch 256, MSE, SGD (large GEMMs: BLAS-bound).

The small-op chain row is ``benchmarks/overhead.py``. Run:
``python benchmarks/eager_table.py [--rounds R] [--skip-large] [--cpu-time]``: a table
with the libraries' default threads, then the same rows on one thread (``--threads N``:
only a table on N threads; ``--cpu-time``: process CPU time instead of wall time, for a
machine loaded by other jobs).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import tapegrad as tg

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


def _init(shapes, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for shape in shapes:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        out.append((rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32))
    return out


def _sgd_step(m, params, bufs, lr=0.01, momentum=0.9):
    """SGD with momentum, written once for tapegrad and torch tensors (no_grad, in place)."""
    with m.no_grad():
        for p, b in zip(params, bufs, strict=True):
            b.mul_(momentum).add_(p.grad)
            p.sub_(b * lr)
            p.grad = None


def make_step(m, arrays, forward):
    """A training step ``step(x, y) -> loss`` for module ``m`` (tapegrad or torch)."""
    params = [m.tensor(a.copy(), requires_grad=True) for a in arrays]
    bufs = [m.zeros(a.shape) for a in arrays]

    def step(x, y):
        loss = forward(m, params, x, y)
        loss.backward()
        _sgd_step(m, params, bufs)
        return loss

    return step


# -- the workloads: (parameter shapes, forward(m, params, x, y), data) ------------------------


def mlp_forward(m, p, x, y):
    fn = m.nn.functional
    h = fn.relu(fn.linear(x, p[0], p[1]))
    h = fn.relu(fn.linear(h, p[2], p[3]))
    return fn.cross_entropy(fn.linear(h, p[4], p[5]), y)


MLP = ([(256, 64), (256,), (256, 256), (256,), (10, 256), (10,)], mlp_forward, (64, 64), 10)


def cnn_forward(m, p, x, y):
    fn = m.nn.functional
    h = fn.max_pool2d(fn.relu(fn.conv2d(x, p[0], p[1], padding=1)), 2)
    h = fn.relu(fn.conv2d(h, p[2], p[3], padding=1))
    return fn.cross_entropy(fn.linear(h.mean(dim=(2, 3)), p[4], p[5]), y)


CNN = (
    [(16, 1, 3, 3), (16,), (32, 16, 3, 3), (32,), (10, 32), (10,)],
    cnn_forward,
    (64, 1, 8, 8),
    10,
)


def deep_forward(m, p, x, y):
    fn = m.nn.functional
    h = x
    for i in range(0, len(p), 2):
        h = m.tanh(fn.linear(h, p[i], p[i + 1]))
    return ((h - y) ** 2).mean()


DEEP = ([(1024, 1024), (1024,)] * 48, deep_forward, (256, 1024), None)


def mlp_numpy(arrays):
    """The MLP step by hand in NumPy (forward, backward, SGD momentum): the floor."""
    params = [a.copy() for a in arrays]
    bufs = [np.zeros_like(a) for a in arrays]

    def step(x, y):
        w1, b1, w2, b2, w3, b3 = params
        h1 = np.maximum(x @ w1.T + b1, 0)
        h2 = np.maximum(h1 @ w2.T + b2, 0)
        z = h2 @ w3.T + b3
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        p = e / e.sum(axis=1, keepdims=True)
        n = len(y)
        loss = -np.log(p[np.arange(n), y]).mean()
        dz = p
        dz[np.arange(n), y] -= 1
        dz /= n
        dh2 = (dz @ w3) * (h2 > 0)
        dh1 = (dh2 @ w2) * (h1 > 0)
        grads = [dh1.T @ x, dh1.sum(0), dh2.T @ h1, dh2.sum(0), dz.T @ h2, dz.sum(0)]
        for prm, b, g in zip(params, bufs, grads, strict=True):
            b *= 0.9
            b += g
            prm -= 0.01 * b
        return loss

    return step


def contenders(workload, n_batches, seed=1):
    shapes, forward, x_shape, classes = workload
    arrays = _init(shapes)
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal(x_shape).astype(np.float32) for _ in range(n_batches)]
    if classes is None:
        ys = [np.tanh(rng.standard_normal(x_shape)).astype(np.float32) for _ in range(n_batches)]
    else:
        ys = [rng.integers(0, classes, x_shape[0]) for _ in range(n_batches)]
    tg_data = [(tg.tensor(x), tg.tensor(y)) for x, y in zip(xs, ys, strict=True)]
    out = {}
    if workload is MLP:
        step = mlp_numpy(arrays)
        out["hand NumPy"] = (step, list(zip(xs, ys, strict=True)))
    if torch is not None:
        t_data = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in zip(xs, ys, strict=True)]
        out["torch eager"] = (make_step(torch, arrays, forward), t_data)
    out["tapegrad eager"] = (make_step(tg, arrays, forward), tg_data)
    out["tapegrad cached"] = (tg.jit.cache(make_step(tg, arrays, forward)), tg_data)
    return out


def run_table(workload, rounds, n_batches, warmup=4, clock=time.perf_counter):
    """Median over ``rounds`` of the mean ms per step, per contender, interleaved.

    ``clock``: wall time (default), or ``time.process_time``: the CPU time of this process
    (all its threads), which a machine loaded by other processes inflates far less."""
    fns = contenders(workload, n_batches)
    for step, batches in fns.values():
        for i in range(warmup):
            step(*batches[i % len(batches)])
    samples = {name: [] for name in fns}
    for _ in range(rounds):
        for name, (step, batches) in fns.items():
            t0 = clock()
            for x, y in batches:
                step(x, y)
            samples[name].append((clock() - t0) / len(batches) * 1e3)
    cached = fns["tapegrad cached"][0]
    return {name: statistics.median(s) for name, s in samples.items()}, cached.cache_info()


def report(title, results, info):
    print(f"{title}; ms per step")
    ref = results.get("torch eager")
    for name, ms in results.items():
        ratio = f"  {ms / ref:.2f}x torch" if ref and name != "torch eager" else ""
        print(f"  {name:16s} {ms:9.3f}{ratio}")
    print(f"  cache: {info}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument(
        "--threads", type=int, default=None, help="BLAS/torch threads (default: libraries' own)"
    )
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="time with the process's CPU time instead of wall time (for a loaded machine)",
    )
    parser.add_argument(
        "--no-single",
        action="store_true",
        help="with default threads, skip the second table on one thread",
    )
    args = parser.parse_args(argv)
    if args.threads is not None:
        return _pinned(args, args.threads)
    out = {"default": _table(args)}  # what users get, then the single-thread column
    if not args.no_single:
        out["single"] = _pinned(args, 1)
    return out


def _pinned(args, threads):
    try:
        from threadpoolctl import threadpool_limits  # noqa: PLC0415 - bench extra
    except ImportError:  # pragma: no cover
        print("threadpoolctl is not installed: no pinned-thread table (pip install threadpoolctl)")
        return {}
    args.threads = threads
    saved = torch.get_num_threads() if torch is not None else None
    if torch is not None:
        torch.set_num_threads(threads)
    try:
        with threadpool_limits(limits=threads, user_api="blas"):
            return _table(args)
    finally:
        if torch is not None:
            torch.set_num_threads(saved)


def _table(args):
    threads = torch.get_num_threads() if torch is not None else "?"
    which = "default" if args.threads is None else "pinned"
    clock = time.process_time if args.cpu_time else time.perf_counter
    print(
        f"{which} threads (torch: {threads}), NCHW, median of {args.rounds} interleaved rounds "
        f"of {args.batches} steps, {'CPU' if args.cpu_time else 'wall'} time"
    )
    out = {}
    for title, workload, n in (
        ("MLP 64-256-256-10, batch 64, SGD momentum", MLP, args.batches),
        ("digits CNN (F.conv2d 1->16, pool, 16->32, mean, linear), batch 64", CNN, args.batches),
        ("48 x Linear(1024)+tanh, batch 256, SGD", DEEP, 1),
    ):
        if workload is DEEP and args.skip_large:
            continue
        rounds = args.rounds if workload is not DEEP else 3
        warmup = 4 if workload is not DEEP else 3
        results, info = run_table(workload, rounds, n, warmup=warmup, clock=clock)
        report(title, results, info)
        out[title] = results
    return out


if __name__ == "__main__":
    main()
