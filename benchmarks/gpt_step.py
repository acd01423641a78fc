"""One GPT training step: tapegrad eager, tapegrad under ``tg.jit.cache``, PyTorch eager.

The network is the demo's (``tapegrad.demo_gpt.build``, written once for both libraries):
2 layers, 2 heads, 64 wide, block 64, batch 16, vocabulary 96; AdamW with weight-decay
groups and ``clip_grad_norm_``, as in ``python -m tapegrad demo gpt``. Every contender
starts from the same weights and sees the same batches; the cached and eager tapegrad
runs are checked to end with the same parameters. Times are medians over interleaved
rounds, BLAS on the library defaults (``--threads 1`` pins BLAS and torch to one thread).

Run: ``python benchmarks/gpt_step.py [--steps N] [--rounds R] [--threads T] [--clock cpu]``.
"""

from __future__ import annotations

import argparse
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


def time_steps(step, batches, warmup=3, clock=time.perf_counter):
    xs, ys = batches
    for i in range(warmup):
        step(xs[i], ys[i])
    start = clock()
    for x, y in zip(xs[warmup:], ys[warmup:]):
        step(x, y)
    return (clock() - start) / (len(xs) - warmup)


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
    args = parser.parse_args()
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
    for _ in range(args.rounds):
        for name, (step, batches) in contenders.items():
            results[name].append(time_steps(step, batches, clock=clock))
    for p, q in zip(eager_model.parameters(), cached_model.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5)
    med = {name: float(np.median(v)) * 1e3 for name, v in results.items()}
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


if __name__ == "__main__":
    main()
