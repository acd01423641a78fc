"""A chain of elementwise ops on 1M float32 elements: tapegrad vs the same in hand NumPy.

    loss = clamp(exp(sin(tanh(x·w + b) · x)), max=2).sum()      (8 ops)

tapegrad runs forward + backward with x, w, b all requiring grad; the reference
is the forward and a hand-derived backward written directly in NumPy. Prints the
median time of each over several runs and their ratio (target: within 1.2x).

Run: ``python benchmarks/large_ops.py [--n 1000000] [--repeat 15]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import tapegrad as tg


def tapegrad_step(x, w, b):
    for t in (x, w, b):
        t.grad = None
    loss = (((x * w + b).tanh() * x).sin().exp().clamp(max=2.0)).sum()
    loss.backward()
    return loss, x.grad, w.grad, b.grad


def numpy_step(x, w, b):
    z2 = x * w + b
    z3 = np.tanh(z2)
    z4 = z3 * x
    z5 = np.sin(z4)
    z6 = np.exp(z5)
    loss = np.minimum(z6, 2.0).sum()
    # backward, by hand
    g5 = z6 * (z6 <= 2.0)
    g4 = g5 * np.cos(z4)
    g2 = g4 * x * (1.0 - z3 * z3)
    gx = g2 * w + g4 * z3
    gw = g2 * x
    gb = g2
    return loss, gx, gw, gb


def _page_faults():
    try:
        import resource  # noqa: PLC0415 - Unix only
    except ImportError:
        return 0
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _median_times(fns, repeat, block=5):
    """Median seconds and minor page faults per call of each function.

    They run in alternating blocks (each after one untimed warm-up call), so that load on
    the machine hits all alike while each block sees the allocator state its own function
    leaves behind: with 4 MB arrays, first-touch page faults of freshly mapped memory cost
    as much as the arithmetic, so the allocator's reuse of freed memory matters.
    """
    times = [[] for _ in fns]
    faults = [0 for _ in fns]
    for _ in range(max(1, repeat // block)):
        for k, fn in enumerate(fns):
            fn()
            before = _page_faults()
            for _ in range(block):
                start = time.perf_counter()
                fn()
                times[k].append(time.perf_counter() - start)
            faults[k] += _page_faults() - before
    return [(statistics.median(ts), f / len(ts)) for ts, f in zip(times, faults, strict=True)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    xs, ws, bs = (rng.uniform(-1, 1, args.n).astype(np.float32) for _ in range(3))
    x, w, b = (tg.tensor(a, requires_grad=True) for a in (xs, ws, bs))

    ours = tapegrad_step(x, w, b)
    ref = numpy_step(xs, ws, bs)
    np.testing.assert_allclose(float(ours[0].item()), float(ref[0]), rtol=1e-4)
    for got, want in zip(ours[1:], ref[1:], strict=True):
        assert got.dtype == tg.float32
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-6)

    (t_numpy, f_numpy), (t_ours, f_ours) = _median_times(
        [lambda: numpy_step(xs, ws, bs), lambda: tapegrad_step(x, w, b)], args.repeat
    )
    runs = max(1, args.repeat // 5) * 5
    print(f"elements            {args.n:,} float32, 8 ops, forward + backward")
    print(f"hand NumPy          {t_numpy * 1e3:8.2f} ms  {f_numpy:8.0f} page faults/run")
    print(f"tapegrad            {t_ours * 1e3:8.2f} ms  {f_ours:8.0f} page faults/run")
    print(f"ratio               {t_ours / t_numpy:8.2f}x (median of {runs}; target <= 1.2x)")


if __name__ == "__main__":
    main()
