"""Hessian of f(x) = sum(tanh(A x)^2), x in R^100: tapegrad (vectorized) vs PyTorch.

Run: PYTHONPATH=src python benchmarks/hessian.py [--n 100] [--repeat 20]
Prints the best-of-N wall time of each and their ratio; checks that they agree.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import tapegrad as tg


def best_of(fn, repeat):
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), fn()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((args.n, args.n)).astype(args.dtype) / np.sqrt(args.n)
    x0 = rng.standard_normal(args.n).astype(args.dtype)

    a_tg = tg.tensor(A)
    x_tg = tg.tensor(x0)

    def f_tg(x):
        return ((a_tg @ x).tanh() ** 2).sum()

    t_tg, H_tg = best_of(
        lambda: tg.autograd.functional.hessian(f_tg, x_tg, vectorize=True), args.repeat
    )
    t_loop, H_loop = best_of(lambda: tg.autograd.functional.hessian(f_tg, x_tg), 3)
    print(f"tapegrad hessian(vectorize=True):  {t_tg * 1e3:8.2f} ms")
    print(f"tapegrad hessian(vectorize=False): {t_loop * 1e3:8.2f} ms")
    np.testing.assert_allclose(H_tg.numpy(), H_loop.numpy(), rtol=1e-5, atol=1e-8)
    try:
        import torch
    except ImportError:
        print("torch not installed: no reference timing")
        return
    dtype = getattr(torch, args.dtype)
    a_t = torch.tensor(A, dtype=dtype)
    x_t = torch.tensor(x0, dtype=dtype)

    def f_t(x):
        return ((a_t @ x).tanh() ** 2).sum()

    def torch_hessian():
        return torch.autograd.functional.hessian(f_t, x_t, vectorize=True)

    t_t, H_t = best_of(torch_hessian, args.repeat)
    print(
        f"torch    hessian(vectorize=True):  {t_t * 1e3:8.2f} ms  "
        f"({torch.get_num_threads()} threads)"
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    t_t1, _ = best_of(torch_hessian, args.repeat)
    torch.set_num_threads(threads)
    print(f"torch    hessian(vectorize=True):  {t_t1 * 1e3:8.2f} ms  (1 thread)")
    # Compare with torch's better setting, so the ratio never flatters tapegrad.
    print(f"ratio tapegrad / torch (best torch setting): {t_tg / min(t_t, t_t1):.2f}x")
    tol = 1e-4 if args.dtype == "float32" else 1e-9
    np.testing.assert_allclose(H_tg.numpy(), H_t.numpy(), rtol=tol, atol=tol)


if __name__ == "__main__":
    main()
