"""One GPT training step: tapegrad eager, tapegrad under ``tg.jit.cache``, PyTorch eager.

The network is the demo's (``tapegrad.demo_gpt.build``, written once for both libraries):
2 layers, 2 heads, 64 wide, block 64, batch 16, vocabulary 96; AdamW with weight-decay
groups and ``clip_grad_norm_``, as in ``python -m tapegrad demo gpt``. Every contender
starts from the same weights and sees the same batches; the cached and eager tapegrad
runs are checked to end with the same parameters. Times are medians over interleaved
rounds, BLAS on the library defaults (``--threads 1`` pins BLAS and torch to one thread).

``--env LABEL:VAR=VALUE[,VAR2=VALUE2]`` (repeatable) compares settings: this script then
runs one child process per setting and round, interleaved (the plain setting, labelled
``default``, first), each measuring its own tapegrad and torch steps, and prints per
setting the medians of the ms per step and of each run's ratio to torch. For the one-pool
switch (Note [One pool per step] in ``src/tapegrad/_parallel.py``), on an idle machine:
``python benchmarks/gpt_step.py --rounds 3 --runs 6 --env step:TAPEGRAD_INTRA_OP=step``.
``--splits`` also prints, for the cached step, the splits over the pool per step, the CPU
time of their pieces, and the CPU time per step of the calling thread and of the pool's
workers (thread clocks; ``_parallel._run`` wrapped by the benchmark).

Run: ``python benchmarks/gpt_step.py [--steps N] [--rounds R] [--threads T] [--clock cpu]
[--runs K --env LABEL:VAR=VALUE ...] [--splits]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import tapegrad as tg
from tapegrad import demo_gpt

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

VOCAB, BLOCK, BATCH = 96, 64, 16
CONFIG = dict(block_size=BLOCK, n_layer=2, n_head=2, n_embd=64)


def make_batches(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, VOCAB, (n, BATCH, BLOCK))
    return x, np.roll(x, -1, axis=2)


def tapegrad_step(model, opt):
    def step(x, y):
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        tg.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    return step


def torch_step(model, opt):
    def step(x, y):
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    return step


def time_steps(step, batches, warmup=3, clock=time.perf_counter, around=None):
    xs, ys = batches
    for i in range(warmup):
        step(xs[i], ys[i])
    if around is not None:
        around.__enter__()
    start = clock()
    for x, y in zip(xs[warmup:], ys[warmup:]):
        step(x, y)
    took = clock() - start
    if around is not None:
        around.__exit__(None, None, None)
    return took / (len(xs) - warmup)


class SplitCounter:
    """While installed: the splits over tapegrad's pool (``_parallel._run`` calls), the
    thread CPU time of their pieces, and the CPU time of the calling thread and of the
    pool's workers (thread clocks: BLAS's and torch's own threads are not counted)."""

    def __init__(self):
        from tapegrad import _parallel  # noqa: PLC0415 - only for --splits

        self.parallel, self.run = _parallel, _parallel._run
        self.splits, self.pieces, self.cpu = 0, 0, 0.0
        self.caller, self.workers = 0.0, 0.0

    def _timed(self, fn):
        def piece(*args):
            t = time.thread_time()
            try:
                return fn(*args)
            finally:
                self.cpu += time.thread_time() - t

        return piece

    @staticmethod
    def _worker_cpu():
        import threading  # noqa: PLC0415

        return {
            t.ident: time.clock_gettime(time.pthread_getcpuclockid(t.ident))
            for t in threading.enumerate()
            if t.name.startswith("tapegrad-intraop-")
        }

    def __enter__(self):
        def run(first, rest):
            self.splits += 1
            self.pieces += 1 + len(rest)
            timed = [(self._timed(f), a) for f, a in rest]
            return self.run((self._timed(first[0]), first[1]), timed)

        self.parallel._run = run
        self._t0, self._w0 = time.thread_time(), self._worker_cpu()
        return self

    def __exit__(self, *exc):
        self.caller += time.thread_time() - self._t0
        self.workers += sum(v - self._w0.get(k, 0.0) for k, v in self._worker_cpu().items())
        self.parallel._run = self.run


def compare(args) -> None:
    """One child process per setting and round, interleaved; medians per setting."""
    settings = [("default", {})]
    for spec in args.env:
        label, assignments = spec.split(":", 1)
        settings.append((label, dict(a.split("=", 1) for a in assignments.split(","))))
    argv = [sys.executable, os.path.abspath(__file__), "--json", "--steps", str(args.steps)]
    argv += ["--rounds", str(args.rounds), "--threads", str(args.threads), "--clock", args.clock]
    if args.splits:
        argv.append("--splits")
    runs = {label: [] for label, _ in settings}
    for _ in range(args.runs):
        for label, extra in settings:
            done = subprocess.run(
                argv, capture_output=True, text=True, env=dict(os.environ, **extra), check=False
            )
            if done.returncode:
                raise RuntimeError(f"setting {label} failed:\n{done.stderr}")
            runs[label].append(json.loads(done.stdout.strip().splitlines()[-1]))
    threads = "library defaults" if not args.threads else f"{args.threads}"
    print(
        f"GPT step, BLAS threads: {threads}, {args.clock} clock; {args.runs} interleaved runs "
        f"per setting (a process each, {args.rounds} rounds of {args.steps} steps): medians"
    )
    for label, extra in settings:
        results = runs[label]
        env = " ".join(f"{k}={v}" for k, v in extra.items()) or "(environment as given)"
        print(f"  {label}: {env}")
        for name in ("tapegrad eager", "tapegrad cached", "torch eager"):
            if name not in results[0]["ms"]:
                continue
            ms = statistics.median(r["ms"][name] for r in results)
            line = f"    {name:16s} {ms:8.2f} ms/step"
            if "torch eager" in results[0]["ms"] and name != "torch eager":
                ratios = sorted(r["ms"][name] / r["ms"]["torch eager"] for r in results)
                lo, mid, hi = ratios[0], statistics.median(ratios), ratios[-1]
                line += f"  {mid:.2f}x torch (runs {lo:.2f}-{hi:.2f})"
            print(line)
        if results[0].get("splits") is not None:
            per = [r["splits"] for r in results]
            n, us, caller, workers = (statistics.median(p[k] for p in per) for k in range(4))
            print(
                f"    cached: {n:.1f} splits/step, {us:.0f} us of CPU per split (all pieces); "
                f"CPU per step {caller:.2f} ms calling thread + {workers:.2f} ms pool workers"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="0: library defaults")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="cpu: this process's CPU time (with --threads 1, robust to a loaded machine)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        help="LABEL:VAR=VALUE[,VAR=VALUE...]: a setting to compare",
    )
    parser.add_argument("--runs", type=int, default=4, help="child processes per setting")
    parser.add_argument("--splits", action="store_true", help="count the pool's splits")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.env:
        compare(args)
        return
    if args.threads:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads, "blas")
        if torch is not None:
            torch.set_num_threads(args.threads)
    xs, ys = make_batches(args.steps + 3)
    tg.manual_seed(0)
    eager_model = demo_gpt.build(tg, VOCAB, **CONFIG)
    cached_model = demo_gpt.build(tg, VOCAB, **CONFIG)
    cached_model.load_state_dict(eager_model.state_dict())
    eager = tapegrad_step(eager_model, demo_gpt.optimizer_for(tg, eager_model, 1e-3))
    cached = tg.jit.cache(
        tapegrad_step(cached_model, demo_gpt.optimizer_for(tg, cached_model, 1e-3))
    )
    tg_batches = ([tg.from_numpy(x) for x in xs], [tg.from_numpy(y) for y in ys])
    contenders = {"tapegrad eager": (eager, tg_batches), "tapegrad cached": (cached, tg_batches)}
    if torch is not None:
        torch.manual_seed(0)
        tmodel = demo_gpt.build(torch, VOCAB, **CONFIG)
        tmodel.load_state_dict(
            {k: torch.tensor(v.detach().numpy()) for k, v in eager_model.state_dict().items()}
        )
        t_batches = ([torch.from_numpy(x) for x in xs], [torch.from_numpy(y) for y in ys])
        contenders["torch eager"] = (
            torch_step(tmodel, demo_gpt.optimizer_for(torch, tmodel, 1e-3)),
            t_batches,
        )
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    results = {name: [] for name in contenders}
    counter = SplitCounter() if args.splits else None
    for _ in range(args.rounds):
        for name, (step, batches) in contenders.items():
            around = counter if name == "tapegrad cached" else None  # ~1 us per piece
            results[name].append(time_steps(step, batches, clock=clock, around=around))
    for p, q in zip(eager_model.parameters(), cached_model.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5)
    med = {name: float(np.median(v)) * 1e3 for name, v in results.items()}
    splits = None
    if counter is not None:
        n_steps = args.rounds * (len(xs) - 3)
        splits = [
            counter.splits / n_steps,
            counter.cpu / max(counter.splits, 1) * 1e6,
            counter.caller / n_steps * 1e3,
            counter.workers / n_steps * 1e3,
        ]
    if args.json:
        print(json.dumps({"ms": med, "splits": splits}))
        return
    info = cached.cache_info()
    threads = "library defaults" if not args.threads else f"{args.threads}"
    print(
        f"GPT step (2 layers, 2 heads, 64 wide, block {BLOCK}, batch {BATCH}), "
        f"BLAS threads: {threads}, {args.clock} clock, median of {args.rounds} rounds"
    )
    for name, ms in med.items():
        ratio = f"  {ms / med['torch eager']:.2f}x torch" if "torch eager" in med else ""
        print(f"  {name:16s} {ms:8.2f} ms/step{ratio}")
    print(f"  cache: {info.hits} replays, {info.misses} eager calls")
    if splits is not None:
        print(
            f"  cached: {splits[0]:.1f} splits/step, {splits[1]:.0f} us of CPU per split; CPU "
            f"per step {splits[2]:.2f} ms calling thread + {splits[3]:.2f} ms pool workers"
        )


if __name__ == "__main__":
    main()
