"""The digits CNN row of the README table with every contender in its own process.

``eager_table.py`` runs torch and tapegrad in one process. With default threads that
puts torch's OpenMP pool and OpenBLAS's threads (each spinning after its parallel
regions) on the same cores, and on a 2-core machine each library then pays for the
other's spinning. Here each cell (contender x round) is a fresh process: the step is
warmed up, then timed over ``--batches`` steps five times (the best of the five is the
cell's figure), rounds interleave the contenders, and the table gives the median over
rounds, in wall time and in CPU time of the process (all of its threads).

``--src LABEL=PATH`` adds contenders: tapegrad imported from another source tree (say
a checkout of an earlier commit), eager and cached, to compare before and after in
one run. ``--env LABEL:VAR=VALUE`` adds this tree run with an environment variable set
(``--env serial:TAPEGRAD_INTRA_OP=0``: the convolutions' split over two cores off).
``--threads N`` pins BLAS (threadpoolctl) and torch to N threads.

Run: ``python benchmarks/cnn_cells.py [--rounds 3] [--threads 1] [--src before=/tmp/old/src]
[--env serial:TAPEGRAD_INTRA_OP=0]``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
SRC = HERE.parent / "src"

CELL = r"""
import json, sys, time
sys.path.insert(0, sys.argv[5])
import numpy as np
kind, threads, batches, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
if threads:
    from threadpoolctl import threadpool_limits
    threadpool_limits(limits=threads, user_api="blas")
import eager_table as et
shapes, forward, x_shape, classes = et.CNN
arrays = et._init(shapes)
rng = np.random.default_rng(1)
xs = [rng.standard_normal(x_shape).astype(np.float32) for _ in range(batches)]
ys = [rng.integers(0, classes, x_shape[0]) for _ in range(batches)]
if kind == "torch":
    import torch as m
    if threads:
        m.set_num_threads(threads)
    data = [(m.from_numpy(x), m.from_numpy(y)) for x, y in zip(xs, ys)]
    step = et.make_step(m, arrays, forward)
else:
    import tapegrad as m
    data = [(m.tensor(x), m.tensor(y)) for x, y in zip(xs, ys)]
    step = et.make_step(m, arrays, forward)
    if kind == "cached":
        step = m.jit.cache(step)
for i in range(warmup):
    step(*data[i % batches])
wall, cpu = [], []
for _ in range(5):
    t0, c0 = time.perf_counter(), time.process_time()
    for x, y in data:
        step(x, y)
    wall.append((time.perf_counter() - t0) / batches * 1e3)
    cpu.append((time.process_time() - c0) / batches * 1e3)
print(json.dumps([min(wall), min(cpu)]))
"""


def run_cell(kind, src, args, extra=None):
    env = dict(os.environ, PYTHONPATH=str(src), **(extra or {}))
    argv = [sys.executable, "-c", CELL, kind, str(args.threads), str(args.batches), "6", str(HERE)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        raise RuntimeError(f"cell {kind} ({src}) failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--threads", type=int, default=0, help="0: the libraries' defaults")
    parser.add_argument("--src", action="append", default=[], help="LABEL=PATH of another src")
    parser.add_argument(
        "--env", action="append", default=[], help="LABEL:VAR=VALUE: this tree with VAR set"
    )
    parser.add_argument("--no-torch", action="store_true")
    args = parser.parse_args(argv)
    cells = [] if args.no_torch else [("torch eager", "torch", SRC, None)]
    trees = [("tapegrad", SRC, None)] + [(*s.split("=", 1), None) for s in args.src]
    for spec in args.env:
        label, assignment = spec.split(":", 1)
        var, value = assignment.split("=", 1)
        trees.append((label, SRC, {var: value}))
    for label, src, extra in trees:
        for kind in ("eager", "cached"):
            cells.append((f"{label} {kind}", kind, src, extra))
    samples = {name: [] for name, _, _, _ in cells}
    for _ in range(args.rounds):
        for name, kind, src, extra in cells:
            samples[name].append(run_cell(kind, src, args, extra))
    threads = "default" if not args.threads else args.threads
    print(
        f"digits CNN, batch 64, NCHW, F.conv2d, SGD momentum; one process per cell, "
        f"BLAS/torch threads: {threads}; median of {args.rounds} rounds; ms per step"
    )
    ref = statistics.median(s[0] for s in samples["torch eager"]) if not args.no_torch else None
    for name, runs in samples.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        ratio = f"  {wall / ref:.2f}x torch" if ref and name != "torch eager" else ""
        print(f"  {name:24s} wall {wall:8.3f}  cpu {cpu:8.3f}{ratio}")
    return samples


if __name__ == "__main__":
    main()
