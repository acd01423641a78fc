"""Gradient checkpointing: time per step and peak memory, tapegrad beside PyTorch.

A 64-layer tanh MLP (width 1024, batch 256, float32), one step = forward +
backward of ``(y * y).mean()``. Configurations: tapegrad with NoCheckpoint, SqrtN
and Budget (given the peak SqrtN is predicted to reach: can the planner recompute
less for the same memory?), and PyTorch without checkpointing and with
``torch.utils.checkpoint.checkpoint_sequential(model, round(sqrt(n)), x,
use_reentrant=False)``.

Timing: all configurations in one process, interleaved round by round, best of
``--rounds``, so that load from other processes hits them alike. Memory: each
configuration alone in a fresh process for one step: peak RSS above the RSS once
the model and input exist (includes the weight gradients: 256 MB here), and for
tapegrad the saved activations after the forward (``saved_bytes``) and the NumPy
peak during the step (tracemalloc).

    PYTHONPATH=src python benchmarks/checkpoint.py [--layers 64 --width 1024 --batch 256]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc

CONFIGS = ["tg-none", "tg-sqrtn", "tg-budget", "torch-none", "torch-sqrtn"]


def _tanh_layer(W, b):
    """x -> tanh(x @ W + b), binding this layer's weights."""
    return lambda x: (x @ W + b).tanh()


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def reset_peak_rss() -> None:
    """Start the peak RSS (VmHWM) afresh, so building the model does not count (Linux)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak_rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def data(args):
    import numpy as np

    rng = np.random.default_rng(0)
    scale = 1 / np.sqrt(args.width)
    ws = [
        (
            (rng.standard_normal((args.width, args.width)) * scale).astype(np.float32),
            (rng.standard_normal(args.width) * 0.1).astype(np.float32),
        )
        for _ in range(args.layers)
    ]
    return ws, rng.standard_normal((args.batch, args.width)).astype(np.float32)


def tapegrad_step(config, args):
    """A function running one step; it returns the saved bytes after the forward."""
    import tapegrad as tg
    from tapegrad.autograd.graph import saved_bytes
    from tapegrad.utils import checkpoint_plan
    from tapegrad.utils.checkpoint import Budget, NoCheckpoint, SqrtN, checkpoint_sequential

    ws, xs = data(args)
    # from_numpy: no copies, so no freed buffers linger in the heap to hide the step's memory
    params = [(tg.from_numpy(W).requires_grad_(), tg.from_numpy(b).requires_grad_()) for W, b in ws]
    layers = [_tanh_layer(W, b) for W, b in params]
    x = tg.from_numpy(xs)
    if config == "tg-budget":
        profile = checkpoint_plan.measure(layers, x)
        sqrt_plan = SqrtN().plan(args.layers).segments
        strategy = Budget(checkpoint_plan.evaluate(profile, sqrt_plan)[1])
    else:
        strategy = NoCheckpoint() if config == "tg-none" else SqrtN()

    def step():
        for W, b in params:
            W.grad = b.grad = None
        y = checkpoint_sequential(layers, strategy, x)
        kept = saved_bytes(y)
        (y * y).mean().backward()
        return kept

    step.strategy = strategy
    return step


def torch_step(config, args):
    import torch
    from torch.utils.checkpoint import checkpoint_sequential

    torch.set_num_threads(args.threads)
    ws, xs = data(args)

    class Layer(torch.nn.Module):
        def __init__(self, W, b):
            super().__init__()
            self.W = torch.nn.Parameter(torch.from_numpy(W))
            self.b = torch.nn.Parameter(torch.from_numpy(b))

        def forward(self, t):
            return torch.tanh(t @ self.W + self.b)

    model = torch.nn.Sequential(*[Layer(W, b) for W, b in ws])
    x = torch.from_numpy(xs)
    segments = max(1, round(args.layers**0.5))

    def step():
        model.zero_grad(set_to_none=True)
        if config == "torch-none":
            y = model(x)
        else:
            y = checkpoint_sequential(model, segments, x, use_reentrant=False)
        (y * y).mean().backward()

    return step


def make_step(config, args):
    return (tapegrad_step if config.startswith("tg") else torch_step)(config, args)


def time_all(args) -> dict:
    steps = {c: make_step(c, args) for c in CONFIGS}
    for step in steps.values():
        step()  # warm-up (and Budget's measuring run)
    best = dict.fromkeys(CONFIGS, float("inf"))
    for _ in range(args.rounds):
        for config, step in steps.items():
            start = time.perf_counter()
            step()
            best[config] = min(best[config], time.perf_counter() - start)
    best["plan"] = steps["tg-budget"].strategy.explain()
    return best


def memory_of(config, args) -> dict:
    step = make_step(config, args)
    base = rss_mb()
    reset_peak_rss()
    if not config.startswith("tg"):
        step()
        return dict(rss=peak_rss_mb() - base)
    tracemalloc.start()
    kept = step()
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return dict(rss=peak_rss_mb() - base, kept=kept / 2**20, traced=traced / 2**20)


def child(mode, args) -> dict:
    flags = [f"--{k}={getattr(args, k)}" for k in ("layers", "width", "batch", "rounds", "threads")]
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(args.threads)
    out = subprocess.run(
        [sys.executable, __file__, f"--mode={mode}", *flags],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=64)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="BLAS and torch threads")
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode:
        result = time_all(args) if args.mode == "time" else memory_of(args.mode, args)
        print(json.dumps(result))
        return
    times = child("time", args)
    memory = {c: child(c, args) for c in CONFIGS}
    print(
        f"{args.layers}-layer tanh MLP, width {args.width}, batch {args.batch}, float32, "
        f"{args.threads} thread(s); best of {args.rounds} interleaved rounds"
    )
    print(
        f"{'config':<13}{'s/step':>8}{'vs none':>9}{'peak RSS MB':>13}{'saved MB':>10}"
        f"{'numpy peak MB':>15}"
    )
    for config in CONFIGS:
        m = memory[config]
        none = times["tg-none" if config.startswith("tg") else "torch-none"]
        kept = f"{m['kept']:.0f}" if "kept" in m else "-"
        traced = f"{m['traced']:.0f}" if "traced" in m else "-"
        print(
            f"{config:<13}{times[config]:>8.3f}{times[config] / none:>8.2f}x{m['rss']:>13.0f}"
            f"{kept:>10}{traced:>15}"
        )
    print()
    print(times["plan"])


if __name__ == "__main__":
    main()
