"""Command line: ``python -m tapegrad demo|bench``."""

from __future__ import annotations

import argparse
import pathlib
import runpy
import sys

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def _demo(args) -> int:
    if args.job == "gpt":
        from . import demo_gpt  # noqa: PLC0415 - needs the 'demo' extra (tqdm, matplotlib)

        summary = demo_gpt.run(
            steps=args.steps, seed=args.seed, out_dir=args.out, progress=not args.no_progress
        )
        beats = summary["val_loss"] < summary["bigram_val_loss"] - 0.2
        return 0 if beats or args.steps < 1000 else 1
    from . import demo  # noqa: PLC0415 - needs the 'demo' extra (scikit-learn, tqdm, matplotlib)

    summary = demo.run(
        epochs=args.epochs,
        seed=args.seed,
        out_dir=args.out,
        progress=not args.no_progress,
        distributed=args.distributed,
    )
    return 0 if summary["test_accuracy"] >= 0.97 or args.epochs < 10 else 1


def _bench(args) -> int:
    if not BENCHMARKS.is_dir():
        print(f"benchmark scripts not found at {BENCHMARKS} (run from a source checkout)")
        return 2
    names = args.names or sorted(p.stem for p in BENCHMARKS.glob("*.py"))
    for name in names:
        script = BENCHMARKS / f"{name}.py"
        if not script.exists():
            print(
                f"no benchmark named {name!r}; available: "
                f"{', '.join(sorted(p.stem for p in BENCHMARKS.glob('*.py')))}"
            )
            return 2
        print(f"== {name} ==", flush=True)
        saved = sys.argv
        sys.argv = [str(script)]
        try:
            runpy.run_path(str(script), run_name="__main__")
        finally:
            sys.argv = saved
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tapegrad", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo",
        help="train a CNN on scikit-learn's 8x8 digits (or `demo gpt`: a char-level GPT)",
        description="`demo` (or `demo cnn`): train a small CNN on scikit-learn's bundled 8x8 "
        "digits (no download), print held-out accuracy, save and reload the model, and write "
        "training curves (PNG) and one training step's graph (DOT) to the output folder. "
        "`demo gpt`: train a character-level GPT on Python's bundled documentation, print its "
        "validation loss beside a bigram baseline's, sample a few lines, plot the losses.",
    )
    demo.add_argument(
        "job",
        nargs="?",
        choices=("cnn", "gpt"),
        default="cnn",
        help="cnn: the digits CNN (default); gpt: a character-level GPT on Python's docs",
    )
    demo.add_argument("--epochs", type=int, default=30, help="training epochs (default 30)")
    demo.add_argument("--steps", type=int, default=1500, help="gpt: training steps (default 1500)")
    demo.add_argument("--seed", type=int, default=0, help="seed for data split, init, shuffling")
    demo.add_argument(
        "--out",
        default="demo_output",
        help="folder for the model, curves PNG, graph DOT, summary.json (default demo_output)",
    )
    demo.add_argument("--no-progress", action="store_true", help="hide the tqdm progress bar")
    demo.add_argument(
        "--distributed",
        action="store_true",
        help="train with DistributedDataParallel on every rank of `mpiexec -n N` "
        "(rank 0 prints and saves)",
    )
    demo.set_defaults(run=_demo)
    bench = sub.add_parser("bench", help="run the benchmark scripts under benchmarks/")
    bench.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    bench.set_defaults(run=_bench)
    args = parser.parse_args(argv)
    return args.run(args)
