"""One training step (forward + backward + hand SGD): tapegrad vs PyTorch eager vs NumPy.

Models: an MLP 64-256-256-10 and a digits-sized CNN (1x8x8 input:
conv(1->16, 3, pad 1)-relu-maxpool2-conv(16->32, 3, pad 1)-relu-maxpool2-flatten-linear(128->10)),
both with batch 64 and cross entropy. Prints ms/step (median of repeats) and ratios.

    PYTHONPATH=src python benchmarks/nn_step.py [--steps 200] [--threads N]

On a busy machine pass ``--threads 1``: multithreaded BLAS under contention is very noisy.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def _threads_from_argv(argv):
    for i, arg in enumerate(argv):
        if arg == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--threads="):
            return arg.split("=", 1)[1]
    return None


# BLAS reads its thread count when NumPy is imported, so set it before that import.
_THREADS = _threads_from_argv(sys.argv[1:])
if _THREADS:
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = _THREADS

import numpy as np  # noqa: E402

LR = 0.01
BATCH = 64


def _timeit(step, steps, repeats=5):
    for _ in range(10):
        step()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        times.append((time.perf_counter() - t0) / steps * 1e3)
    return min(times)  # the least disturbed repeat: robust on a shared machine


# -- tapegrad and torch share the model definition through their nn module ----------------------


def mlp(nn):
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def cnn(nn):
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(128, 10),
    )


def tapegrad_step(build, x, y):
    import tapegrad as tg

    model = build(tg.nn)
    loss_fn = tg.nn.CrossEntropyLoss()
    xt, yt = tg.tensor(x), tg.tensor(y)
    params = list(model.parameters())

    def step():
        for p in params:
            p.grad = None
        loss = loss_fn(model(xt), yt)
        loss.backward()
        for p in params:
            p.data -= LR * p.grad.data

    return step


def torch_step(build, x, y):
    import torch

    model = build(torch.nn)
    loss_fn = torch.nn.CrossEntropyLoss()
    xt, yt = torch.tensor(x), torch.tensor(y)
    params = list(model.parameters())

    def step():
        for p in params:
            p.grad = None
        loss = loss_fn(model(xt), yt)
        loss.backward()
        with torch.no_grad():
            for p in params:
                p.sub_(LR * p.grad)

    return step


# -- hand-written NumPy -------------------------------------------------------------------------


def _softmax_xent_grad(logits, y):
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(y)), y] -= 1
    return p / len(y)


def numpy_mlp_step(x, y):
    rng = np.random.default_rng(0)
    sizes = [64, 256, 256, 10]
    ws = [(rng.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32)
          for i, o in zip(sizes[:-1], sizes[1:], strict=True)]
    bs = [np.zeros(o, np.float32) for o in sizes[1:]]

    def step():
        acts = [x]
        h = x
        for k, (w, b) in enumerate(zip(ws, bs, strict=True)):
            h = h @ w.T + b
            if k < len(ws) - 1:
                h = np.maximum(h, 0)
            acts.append(h)
        g = _softmax_xent_grad(h, y)
        for k in range(len(ws) - 1, -1, -1):
            gw = g.T @ acts[k]
            gb = g.sum(axis=0)
            if k:
                g = (g @ ws[k]) * (acts[k] > 0)
            ws[k] -= LR * gw
            bs[k] -= LR * gb

    return step


def _im2col3(x):
    """(N, C, H, W) -> (N*H*W, C*9) for a 3x3 kernel with padding 1."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    return win.transpose(0, 2, 3, 1, 4, 5).reshape(n * h * w, c * 9)


def _col2im3(cols, shape):
    n, c, h, w = shape
    g = cols.reshape(n, h, w, c, 3, 3)
    out = np.zeros((n, c, h + 2, w + 2), cols.dtype)
    for i in range(3):
        for j in range(3):
            out[:, :, i:i + h, j:j + w] += g[:, :, :, :, i, j].transpose(0, 3, 1, 2)
    return out[:, :, 1:-1, 1:-1]


def _pool2(x):
    n, c, h, w = x.shape
    v = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(
        n, c, h // 2, w // 2, 4)
    idx = v.argmax(axis=-1)
    return np.take_along_axis(v, idx[..., None], -1)[..., 0], idx


def _unpool2(g, idx, shape):
    n, c, h, w = shape
    out = np.zeros((n, c, h // 2, w // 2, 4), g.dtype)
    np.put_along_axis(out, idx[..., None], g[..., None], -1)
    return out.reshape(n, c, h // 2, w // 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(shape)


def numpy_cnn_step(x, y):
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((16, 9)) / 3).astype(np.float32)
    b1 = np.zeros(16, np.float32)
    w2 = (rng.standard_normal((32, 144)) / 12).astype(np.float32)
    b2 = np.zeros(32, np.float32)
    w3 = (rng.standard_normal((10, 128)) / np.sqrt(128)).astype(np.float32)
    b3 = np.zeros(10, np.float32)
    n = x.shape[0]

    def step():
        c1 = _im2col3(x)
        a1 = (c1 @ w1.T + b1).reshape(n, 8, 8, 16).transpose(0, 3, 1, 2)
        r1 = np.maximum(a1, 0)
        p1, i1 = _pool2(r1)
        c2 = _im2col3(p1)
        a2 = (c2 @ w2.T + b2).reshape(n, 4, 4, 32).transpose(0, 3, 1, 2)
        r2 = np.maximum(a2, 0)
        p2, i2 = _pool2(r2)
        f = p2.reshape(n, 128)
        logits = f @ w3.T + b3
        g = _softmax_xent_grad(logits, y)
        gw3, gb3 = g.T @ f, g.sum(0)
        gf = (g @ w3).reshape(p2.shape)
        ga2 = _unpool2(gf, i2, r2.shape) * (a2 > 0)
        gm2 = ga2.transpose(0, 2, 3, 1).reshape(-1, 32)
        gw2, gb2 = gm2.T @ c2, gm2.sum(0)
        gp1 = _col2im3(gm2 @ w2, p1.shape)
        ga1 = _unpool2(gp1, i1, r1.shape) * (a1 > 0)
        gm1 = ga1.transpose(0, 2, 3, 1).reshape(-1, 16)
        gw1, gb1 = gm1.T @ c1, gm1.sum(0)
        for p, gp in ((w1, gw1), (b1, gb1), (w2, gw2), (b2, gb2), (w3, gw3), (b3, gb3)):
            p -= LR * gp

    return step


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="steps per timed repeat")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for torch and NumPy's BLAS (default: their own choice)")
    args = parser.parse_args(argv)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, BATCH)
    cases = [
        ("MLP 64-256-256-10", mlp, rng.standard_normal((BATCH, 64)).astype(np.float32),
         numpy_mlp_step),
        ("CNN digits 1x8x8", cnn, rng.standard_normal((BATCH, 1, 8, 8)).astype(np.float32),
         numpy_cnn_step),
    ]
    print(f"batch {BATCH}, {args.steps} steps x 5 repeats (best), torch threads "
          f"{torch.get_num_threads()}, cpus {os.cpu_count()}, numpy {np.__version__}, "
          f"torch {torch.__version__}")
    print(f"{'model':<20}{'tapegrad':>11}{'torch':>11}{'numpy':>11}{'tg/torch':>10}{'tg/numpy':>10}")
    for name, build, x, numpy_step in cases:
        t_tg = _timeit(tapegrad_step(build, x, y), args.steps)
        t_torch = _timeit(torch_step(build, x, y), args.steps)
        t_np = _timeit(numpy_step(x, y), args.steps)
        print(f"{name:<20}{t_tg:>9.3f}ms{t_torch:>9.3f}ms{t_np:>9.3f}ms"
              f"{t_tg / t_torch:>9.2f}x{t_tg / t_np:>9.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
