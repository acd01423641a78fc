"""The size rule of Note [Deferred outer products on two cores]: the deferred outer
products of vmap(grad) written on one core against two, by size.

For each case (one 64-sample float32 job of 0.5-16 MiB, and the benchmarks' MLP's three
jobs, 21.6 MB), ``_write`` (serial) and ``_write_split`` (two halves, the second on a
worker) run in alternation inside a one-thread OpenBLAS block (as in a vmap call);
printed: the minimum and median wall time and the median process CPU time of each.
The split is called directly, so it runs whatever the load: on a busy machine its worker
waits for a core (check ``uptime``; the library's default rule would not split there).

Run: PYTHONPATH=src python benchmarks/vmap_outer_split.py [--rounds 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from tapegrad import _vmap_linear
from tapegrad._blas_threads import one_thread


def _jobs(rng, n, o, i):
    g = rng.standard_normal((n, o)).astype(np.float32)
    x = rng.standard_normal((n, i)).astype(np.float32)
    return [(g, x, np.empty((n, o, i), np.float32))]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    cases = {"MLP": _jobs(rng, 64, 256, 64) + _jobs(rng, 64, 256, 256) + _jobs(rng, 64, 10, 256)}
    for mib, (o, i) in [(0.5, (32, 64)), (1, (64, 64)), (2, (128, 64)), (4, (256, 64))]:
        cases[f"{mib} MiB"] = _jobs(rng, 64, o, i)
    cases["8 MiB"] = _jobs(rng, 64, 256, 128)
    cases["16 MiB"] = _jobs(rng, 64, 256, 256)
    fns = {"serial": _vmap_linear._write, "split": _vmap_linear._write_split}
    print("deferred outer products: wall min / median, process CPU median (us)")
    with one_thread(0):
        for name, jobs in cases.items():
            wall = {k: [] for k in fns}
            cpu = {k: [] for k in fns}
            for _ in range(args.rounds):
                for k, fn in fns.items():
                    c0, t0 = time.process_time(), time.perf_counter()
                    fn(jobs)
                    wall[k].append(time.perf_counter() - t0)
                    cpu[k].append(time.process_time() - c0)
            cells = [
                f"{k} {min(wall[k]) * 1e6:6.0f} / {np.median(wall[k]) * 1e6:6.0f}, "
                f"cpu {np.median(cpu[k]) * 1e6:6.0f}"
                for k in fns
            ]
            print(f"  {name:8s} " + " | ".join(cells))


if __name__ == "__main__":
    main()
