"""Per-op overhead: a chain of 200 elementwise ops on 16-element float32 tensors.

The chain alternates mul, add, tanh and exp/sigmoid. Reports microseconds per op
(forward + backward, and forward alone) for tapegrad eager, tapegrad under
``tg.jit.cache``, PyTorch eager (if installed) and hand-written NumPy (forward, and
forward + backward by hand), all measured in the same process: the contenders are
interleaved round by round and each figure is the median over rounds of the best of
``--repeats`` runs, so that load on a shared machine hits them alike. BLAS threads
are left at their defaults (elementwise ops do not use them). Run:
``python benchmarks/overhead.py [--rounds R] [--repeats N] [--cpu-time]``.
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

N_OPS = 200  # the chain alternates four op kinds: mul, add, tanh, exp or sigmoid


def chain(x, m):
    """``N_OPS`` elementwise ops; the same code runs with tapegrad, torch or numpy."""
    for i in range(N_OPS // 4):
        x = x * 0.99
        x = x + 0.01
        x = m.tanh(x)
        x = m.exp(x) if i % 2 else m.sigmoid(x)
    return x


def _numpy_ns():
    class NS:
        tanh = staticmethod(np.tanh)
        exp = staticmethod(np.exp)

        @staticmethod
        def sigmoid(v):
            return 1.0 / (1.0 + np.exp(-v))

    return NS


def numpy_fwd_bwd(data):
    """The chain and its gradient by hand in NumPy: the floor for any tape."""
    saved = []
    x = data
    for i in range(N_OPS // 4):
        x = x * 0.99
        x = x + 0.01
        x = np.tanh(x)
        saved.append(x)
        x = np.exp(x) if i % 2 else 1.0 / (1.0 + np.exp(-x))
        saved.append(x)
    g = np.ones_like(x)
    for i in reversed(range(N_OPS // 4)):
        out = saved[2 * i + 1]
        g = g * out if i % 2 else g * out * (1.0 - out)
        t = saved[2 * i]
        g = g * (1.0 - t * t)
        g = g * 0.99
    return g


CLOCK = [time.perf_counter]  # or time.process_time (--cpu-time)


def best_of(fn, repeats):
    clock = CLOCK[0]
    times = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return min(times)


def contenders(data):
    """name -> zero-argument callable running one chain."""
    out = {}

    def tg_step():
        x = tg.tensor(data, requires_grad=True)
        chain(x, tg).sum().backward()

    def tg_forward():
        x = tg.tensor(data, requires_grad=True)
        chain(x, tg)

    def cached_body(x):
        chain(x, tg).sum().backward()

    cached = tg.jit.cache(cached_body)
    x_cached = tg.tensor(data, requires_grad=True)

    def tg_cached():
        x_cached.grad = None
        cached(x_cached)

    out["tapegrad fwd+bwd"] = tg_step
    out["tapegrad fwd"] = tg_forward
    out["tapegrad cached fwd+bwd"] = tg_cached
    if torch is not None:
        tdata = torch.from_numpy(data)

        def torch_step():
            x = tdata.clone().requires_grad_(True)
            chain(x, torch).sum().backward()

        def torch_forward():
            x = tdata.clone().requires_grad_(True)
            chain(x, torch)

        out["torch fwd+bwd"] = torch_step
        out["torch fwd"] = torch_forward
    ns = _numpy_ns()
    out["numpy fwd+bwd"] = lambda: numpy_fwd_bwd(data)
    out["numpy fwd"] = lambda: chain(data, ns)
    return out


def run(rounds: int = 5, repeats: int = 10, size: int = 16) -> dict:
    """Median over ``rounds`` of best-of-``repeats`` seconds per chain, per contender."""
    data = np.random.default_rng(0).standard_normal(size).astype(np.float32)
    fns = contenders(data)
    for fn in fns.values():  # warm up (and let the graph cache record)
        for _ in range(3):
            fn()
    samples = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            samples[name].append(best_of(fn, repeats))
    return {name: statistics.median(s) for name, s in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="time with the process's CPU time instead of wall time (for a loaded machine)",
    )
    args = parser.parse_args()
    if args.cpu_time:
        CLOCK[0] = time.process_time
    r = run(args.rounds, args.repeats)
    print(
        f"per-op time, chain of {N_OPS} ops on 16 float32 elements "
        f"(median of {args.rounds} interleaved rounds, best of {args.repeats} each, "
        f"{'CPU' if args.cpu_time else 'wall'} time)"
    )
    for name, seconds in r.items():
        ratio = ""
        ref = "torch fwd" if name.endswith(" fwd") else "torch fwd+bwd"
        if ref in r and not name.startswith("torch"):
            ratio = f"  {seconds / r[ref]:.2f}x torch"
        print(f"  {name:24s} {seconds / N_OPS * 1e6:7.2f} us/op{ratio}")


if __name__ == "__main__":
    main()
