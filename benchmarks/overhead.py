"""Per-op overhead: a chain of 200 elementwise ops on 16-element float32 tensors.

Reports microseconds per op (forward + backward) for tapegrad, PyTorch eager (if
installed) and raw NumPy forward (the floor), measured in the same run, plus
the ratio tapegrad / PyTorch. Run: ``python benchmarks/overhead.py``.
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

N_OPS = 200  # the chain alternates four op kinds: mul, add, tanh, sigmoid-like


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


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def run(repeats: int = 30, size: int = 16) -> dict:
    data = np.random.default_rng(0).standard_normal(size).astype(np.float32)
    results = {}

    def tg_step():
        x = tg.tensor(data, requires_grad=True)
        chain(x, tg).sum().backward()

    def tg_forward():
        x = tg.tensor(data, requires_grad=True)
        chain(x, tg)

    results["tapegrad fwd+bwd"] = best_of(tg_step, repeats)
    results["tapegrad fwd"] = best_of(tg_forward, repeats)
    if torch is not None:
        torch.set_num_threads(1)
        tdata = torch.from_numpy(data)

        def torch_step():
            x = tdata.clone().requires_grad_(True)
            chain(x, torch).sum().backward()

        def torch_forward():
            x = tdata.clone().requires_grad_(True)
            chain(x, torch)

        results["torch fwd+bwd"] = best_of(torch_step, repeats)
        results["torch fwd"] = best_of(torch_forward, repeats)
    ns = _numpy_ns()
    results["numpy fwd"] = best_of(lambda: chain(data, ns), repeats)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    r = run(args.repeats)
    print(f"per-op time, chain of {N_OPS} ops on 16 float32 elements (best of {args.repeats})")
    for name, seconds in r.items():
        print(f"  {name:18s} {seconds / N_OPS * 1e6:7.2f} us/op")
    if "torch fwd+bwd" in r:
        print(
            f"  ratio tapegrad/torch fwd+bwd: {r['tapegrad fwd+bwd'] / r['torch fwd+bwd']:.2f}x "
            "(target <= 1.5x)"
        )
        print(f"  ratio tapegrad/torch fwd:     {r['tapegrad fwd'] / r['torch fwd']:.2f}x")


if __name__ == "__main__":
    main()
