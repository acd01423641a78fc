"""Scatter-back of advanced indexing (the gradient of ``x[idx]``) against ``np.add.at``.

Run: ``PYTHONPATH=src python benchmarks/indexing.py``. Prints, per case, the best of
five timings of tapegrad's scatter-back, of ``np.add.at`` doing the same accumulation,
and their ratio (below 1 means tapegrad is faster), plus a full ``x[idx].sum().backward()``.
"""

import time

import numpy as np

import tapegrad as tg
from tapegrad.ops.indexing import _scatter_add_array, normalize_key

N = 1_000_000


def best(fn, repeat=5):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def case(name, shape, key):
    rng = np.random.default_rng(0)
    key, advanced = normalize_key(key)
    g = rng.standard_normal(np.zeros(shape, np.float32)[key].shape).astype(np.float32)

    def ours():
        return _scatter_add_array(g, shape, key, advanced)

    def add_at():
        out = np.zeros(shape, np.float32)
        np.add.at(out, key, g)
        return out

    np.testing.assert_allclose(ours(), add_at(), rtol=1e-4, atol=1e-2)
    t_ours, t_ref = best(ours), best(add_at)
    x = tg.zeros(shape, requires_grad=True)
    t_e2e = best(lambda: x[key].sum().backward())
    print(
        f"{name:<34} tapegrad {t_ours * 1e3:7.2f} ms   np.add.at {t_ref * 1e3:7.2f} ms   "
        f"ratio {t_ours / t_ref:5.2f}   x[idx].sum().backward() {t_e2e * 1e3:7.2f} ms"
    )


def main():
    rng = np.random.default_rng(1)
    case("1-D table, 1M indices", (1000,), rng.integers(0, 1000, N))
    case("rows of (1000, 16), 1M indices", (1000, 16), rng.integers(0, 1000, N))
    case(
        "(1000, 1000)[i, j], 1M pairs",
        (1000, 1000),
        (rng.integers(0, 1000, N), rng.integers(-1000, 1000, N)),
    )
    case(
        "(64, 1000)[:, j], 1M / 64 indices",
        (64, 1000),
        (slice(None), rng.integers(0, 1000, N // 64)),
    )


if __name__ == "__main__":
    main()
