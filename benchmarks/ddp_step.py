"""DistributedDataParallel step time and scaling on 1 and 2 ranks (MPI over loopback).

Two workloads, global batch 64 split evenly over the ranks (strong scaling):

* the MLP 64-256-256-10 of ``nn_step`` with SGD momentum;
* the digits CNN of the demo (``tapegrad.demo.make_model``), NCHW 1x8x8 images, Adam.

For each world size it reports the median step time, the scaling efficiency
``t(1 rank) / (N * t(N ranks))`` (1.0 is perfect), the bytes all-reduced per step, and the
fraction of all-reduce time hidden behind backward: ``1 - exposed / blocking``, where
``exposed`` is the time DDP waits for its requests at the end of backward and
``blocking`` the time of a plain blocking all-reduce of the same buckets. On a 2-core
machine two ranks already share the cores with the OS, so the figures show the mechanism
more than the speed-up a cluster would give.

Run: ``python benchmarks/ddp_step.py [--steps N]`` (it starts ``mpiexec`` itself).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

GLOBAL_BATCH = 64


def _worker(steps: int, bucket_mb: float) -> None:
    from threadpoolctl import threadpool_limits

    import tapegrad as tg
    import tapegrad.distributed as dist
    from tapegrad import nn
    from tapegrad.demo import make_model

    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    per_rank = GLOBAL_BATCH // world
    rng = np.random.default_rng(rank)
    results = {}
    workloads = {
        "MLP 64-256-256-10, SGD momentum": (
            lambda: nn.Sequential(
                nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)
            ),
            lambda: rng.standard_normal((per_rank, 64)).astype(np.float32),
            lambda m: tg.optim.SGD(m.parameters(), lr=0.01, momentum=0.9),
        ),
        "digits CNN (NCHW), Adam": (
            make_model,
            lambda: rng.random((per_rank, 1, 8, 8)).astype(np.float32),
            lambda m: tg.optim.Adam(m.parameters(), lr=1e-3),
        ),
    }
    with threadpool_limits(limits=1, user_api="blas"):
        for name, (build, batch, make_opt) in workloads.items():
            tg.manual_seed(0)
            model = nn.parallel.DDP(build(), bucket_cap_mb=bucket_mb)
            opt = make_opt(model)
            loss_fn = nn.CrossEntropyLoss()
            x = tg.tensor(batch())
            y = tg.tensor(rng.integers(0, 10, per_rank))
            times = []
            for i in range(steps + 5):
                dist.barrier()
                start = time.perf_counter()
                opt.zero_grad()
                loss_fn(model(x), y).backward()
                opt.step()
                if i >= 5:
                    times.append(time.perf_counter() - start)
                if i == 4:
                    model.stats.update(allreduce_bytes=0, steps=0, wait_seconds=0.0)
            # The same buckets, all-reduced with blocking calls: what overlap can hide.
            comm = dist.group.WORLD.comm
            from mpi4py import MPI

            blocking = []
            for _ in range(steps):
                dist.barrier()
                start = time.perf_counter()
                for bucket in model._buckets:
                    comm.Allreduce(MPI.IN_PLACE, bucket.flat, op=MPI.SUM)
                blocking.append(time.perf_counter() - start)
            stats = model.stats
            results[name] = {
                "step_ms": float(np.median(times) * 1e3),
                "bytes_per_step": stats["allreduce_bytes"] // max(stats["steps"], 1),
                "exposed_ms": stats["wait_seconds"] / max(stats["steps"], 1) * 1e3,
                "blocking_ms": float(np.median(blocking) * 1e3),
                "buckets": len(model._buckets),
            }
    if rank == 0:
        print("RESULT " + json.dumps({"world": world, "results": results}), flush=True)


def _launch(n: int, steps: int, bucket_mb: float) -> dict:
    from tapegrad.distributed.run import find_mpiexec

    mpiexec = find_mpiexec()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run(
        [mpiexec, "-n", str(n), sys.executable, __file__, "--worker", "--steps", str(steps)]
        + ["--bucket-mb", str(bucket_mb)],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])["results"]
    raise RuntimeError(f"mpiexec -n {n} failed:\n{out.stdout}\n{out.stderr}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument(
        "--bucket-mb",
        type=float,
        default=0.1,
        help="DDP bucket_cap_mb (default 0.1: these models are smaller than torch's 25 MB "
        "buckets, so small buckets are needed for any overlap to show)",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args.steps, args.bucket_mb)
        return
    import tapegrad.distributed as dist
    from tapegrad.distributed.run import find_mpiexec

    if not dist.is_available() or find_mpiexec() is None:
        print("ddp_step: skipped (pip install tapegrad[mpi] for mpi4py and mpiexec)")
        return
    runs = {n: _launch(n, args.steps, args.bucket_mb) for n in (1, 2)}
    print(f"DDP, global batch {GLOBAL_BATCH} split over the ranks, BLAS 1 thread per rank")
    for name in runs[1]:
        one = runs[1][name]
        print(f"  {name}")
        for n, res in runs.items():
            r = res[name]
            efficiency = one["step_ms"] / (n * r["step_ms"])
            # Waiting for a slower rank also counts as exposed time: clip at 0.
            hidden = max(0.0, 1 - r["exposed_ms"] / r["blocking_ms"]) if r["blocking_ms"] else 0
            print(
                f"    {n} rank(s): {r['step_ms']:.3f} ms/step  scaling efficiency "
                f"{efficiency:.2f}  all-reduced {r['bytes_per_step'] / 1e6:.2f} MB/step in "
                f"{r['buckets']} bucket(s)"
                + (f"  hidden behind backward {hidden:.0%}" if n > 1 else "")
            )


if __name__ == "__main__":
    main()
