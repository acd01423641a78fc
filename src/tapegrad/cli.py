"""Command line: ``python -m tapegrad demo|bench``."""

from __future__ import annotations

import argparse


def _demo(args) -> int:
    """Fit a tiny two-layer network to y = sin(x) with the core ops and plain SGD."""
    import numpy as np  # noqa: PLC0415

    import tapegrad as tg  # noqa: PLC0415

    tg.manual_seed(args.seed)
    x = tg.linspace(-3, 3, 128).reshape(-1, 1)
    y = tg.tensor(np.sin(x.numpy()))
    w1 = (tg.randn(1, 32) * 0.8).requires_grad_()
    b1 = tg.zeros(32, requires_grad=True)
    w2 = (tg.randn(32, 1) * 0.2).requires_grad_()
    b2 = tg.zeros(1, requires_grad=True)
    params = [w1, b1, w2, b2]
    for step in range(args.steps + 1):
        loss = (((x @ w1 + b1).tanh() @ w2 + b2 - y) ** 2).mean()
        loss.backward()
        with tg.no_grad():
            for p in params:
                p.data -= 0.1 * p.grad.data
                p.grad = None
        if step % max(args.steps // 10, 1) == 0:
            print(f"step {step:5d}  loss {loss.item():.5f}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tapegrad", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="train a small model and print its loss falling")
    demo.add_argument("--steps", type=int, default=2000, help="training steps (default 2000)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.set_defaults(run=_demo)
    args = parser.parse_args(argv)
    return args.run(args)
