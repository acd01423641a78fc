"""One training step: tapegrad vs PyTorch eager vs hand-written NumPy, BLAS on one thread.

Cases, batch 64, cross entropy, step = forward + loss + backward + update:

* MLP 64-256-256-10 with hand SGD (``p -= lr * grad``);
* the demo's CNN (``tapegrad.demo.make_model``: conv(1->32, 3, pad 1)-relu-maxpool2-
  conv(32->64, 3, pad 1)-relu-maxpool2-flatten-dropout(0.25)-linear(256->10), 1x8x8 inputs)
  with the demo's optimizer, Adam;
* the same CNN with hand SGD, which isolates the autograd part from the optimizer.

All three contenders start from the same weights (copied from the tapegrad model) and the
tapegrad and torch models are checked to agree in eval mode before timing. BLAS and torch
are pinned to one thread (threadpoolctl): the machine is shared and multi-threaded BLAS
timings on small GEMMs are erratic. Contenders are interleaved repeat by repeat; a repeat's
figure is the median step time and the reported figure the best repeat.

    PYTHONPATH=src python benchmarks/nn_step.py [--steps 200] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

import numpy as np

LR = 1e-3
BATCH = 64
DROPOUT = 0.25


def _median_step_ms(step, steps):
    times = np.empty(steps)
    for k in range(steps):
        t0 = time.perf_counter()
        step()
        times[k] = time.perf_counter() - t0
    return float(np.median(times)) * 1e3


def _minor_faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _bench(contenders, steps, repeats):
    """Per contender: best-of-``repeats`` median step time (ms) and minor page faults per step,
    interleaving contenders repeat by repeat."""
    for step in contenders.values():
        for _ in range(10):
            step()
    best = dict.fromkeys(contenders, float("inf"))
    faults = dict.fromkeys(contenders, 0)
    for _ in range(repeats):
        for name, step in contenders.items():
            before = _minor_faults()
            best[name] = min(best[name], _median_step_ms(step, steps))
            faults[name] += _minor_faults() - before
    return {name: (best[name], faults[name] / (steps * repeats)) for name in contenders}


# -- models: tapegrad's and torch's share the definition through their nn module ----------------


def mlp(nn):
    return nn.Sequential(
        nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)
    )


def demo_cnn(nn):
    """The demo's model (``tapegrad.demo.make_model``), built from ``nn``'s layers."""
    import tapegrad.demo

    return tapegrad.demo.make_model(nn)


def _weights(tg_model):
    """The tapegrad model's parameters as float32 arrays (copies), in definition order."""
    return [p.detach().numpy().copy() for p in tg_model.parameters()]


def _torch_twin(build, tg_model, x):
    """The torch mirror of ``tg_model`` with the same weights, checked on ``x`` in eval mode."""
    import torch

    import tapegrad as tg

    model = build(torch.nn)
    with torch.no_grad():
        for p, w in zip(model.parameters(), _weights(tg_model), strict=True):
            p.copy_(torch.from_numpy(w))
        model.eval(), tg_model.eval()
        got = tg_model(tg.tensor(x)).detach().numpy()
        want = model(torch.from_numpy(x)).numpy()
        model.train(), tg_model.train()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    return model


def tapegrad_step(model, x, y, optim):
    import tapegrad as tg

    loss_fn = tg.nn.CrossEntropyLoss()
    xt, yt = tg.tensor(x), tg.tensor(y)
    params = list(model.parameters())
    opt = tg.optim.Adam(params, lr=LR) if optim == "adam" else None

    def step():
        for p in params:
            p.grad = None
        loss = loss_fn(model(xt), yt)
        loss.backward()
        if opt is not None:
            opt.step()
        else:
            for p in params:
                p.data -= LR * p.grad.data

    return step


def torch_step(model, x, y, optim):
    import torch

    loss_fn = torch.nn.CrossEntropyLoss()
    xt, yt = torch.tensor(x), torch.tensor(y)
    params = list(model.parameters())
    opt = torch.optim.Adam(params, lr=LR) if optim == "adam" else None

    def step():
        for p in params:
            p.grad = None
        loss = loss_fn(model(xt), yt)
        loss.backward()
        if opt is not None:
            opt.step()
        else:
            with torch.no_grad():
                for p in params:
                    p.sub_(LR * p.grad)

    return step


# -- hand-written NumPy -------------------------------------------------------------------------


def _updater(params, optim):
    """``update(grads)``: hand SGD, or Adam with PyTorch's default hyper-parameters, in place."""
    if optim != "adam":

        def sgd(grads):
            for p, g in zip(params, grads, strict=True):
                p -= LR * g

        return sgd
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    ms = [np.zeros_like(p) for p in params]
    vs = [np.zeros_like(p) for p in params]
    t = [0]

    def adam(grads):
        t[0] += 1
        step_size = LR / (1 - beta1 ** t[0])
        bc2_sqrt = (1 - beta2 ** t[0]) ** 0.5
        for p, g, m, v in zip(params, grads, ms, vs, strict=True):
            m += (1 - beta1) * (g - m)
            v *= beta2
            v += (1 - beta2) * g * g
            p -= step_size * m / (np.sqrt(v) / bc2_sqrt + eps)

    return adam


def _softmax_xent_grad(logits, y):
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(y)), y] -= 1
    return p / len(y)


def numpy_mlp_step(weights, x, y, optim):
    params = [w.copy() for w in weights]  # w1, b1, w2, b2, w3, b3
    ws, bs = params[0::2], params[1::2]
    update = _updater(params, optim)

    def step():
        acts = [x]
        h = x
        for k, (w, b) in enumerate(zip(ws, bs, strict=True)):
            h = h @ w.T + b
            if k < len(ws) - 1:
                h = np.maximum(h, 0)
            acts.append(h)
        g = _softmax_xent_grad(h, y)
        grads = [None] * len(params)
        for k in range(len(ws) - 1, -1, -1):
            grads[2 * k], grads[2 * k + 1] = g.T @ acts[k], g.sum(axis=0)
            if k:
                g = (g @ ws[k]) * (acts[k] > 0)
        update(grads)

    return step


# The hand-written CNN works channels-last (NHWC) throughout, with the layouts and algorithms a
# careful NumPy programmer would pick (the same ones tapegrad uses), so that the tapegrad/NumPy
# ratio measures framework overhead rather than a naive NCHW implementation.


def _conv3_forward(xh, w, b):
    """3x3, padding 1 convolution of NHWC ``xh`` as im2col + GEMM; returns (NHWC out, columns)."""
    n, h, wd, c = xh.shape
    xp = np.zeros((n, h + 2, wd + 2, c), xh.dtype)
    xp[:, 1:-1, 1:-1] = xh
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(1, 2))  # (N,H,W,C,3,3)
    cols = win.transpose(0, 1, 2, 4, 5, 3).reshape(n * h * wd, 9 * c)
    wm = w.transpose(0, 2, 3, 1).reshape(len(w), -1)
    return (cols @ wm.T + b).reshape(n, h, wd, len(w)), cols


def _conv3_backward(gh, w, cols, need_x=True):
    """(gx, gw, gb) of :func:`_conv3_forward` for the NHWC output gradient ``gh``."""
    n, h, wd, o = gh.shape
    c = w.shape[1]
    gm = gh.reshape(-1, o)
    gw = (gm.T @ cols).reshape(o, 3, 3, c).transpose(0, 3, 1, 2)
    gb = np.ones(len(gm), gm.dtype) @ gm
    if not need_x:
        return None, gw, gb
    gxp = np.zeros((n, h + 2, wd + 2, c), gh.dtype)
    for i in range(3):
        for j in range(3):
            gxp[:, i : i + h, j : j + wd] += (gm @ w[:, :, i, j]).reshape(n, h, wd, c)
    return gxp[:, 1:-1, 1:-1], gw, gb


def _pool2(xh):
    """2x2 max pooling of NHWC ``xh``; returns (out, one-hot mask of each window's first max)."""
    n, h, w, c = xh.shape
    v = xh.reshape(n, h // 2, 2, w // 2, 2, c)
    taps = [v[:, :, i, :, j] for i in range(2) for j in range(2)]
    best = np.maximum(np.maximum(taps[0], taps[1]), np.maximum(taps[2], taps[3]))
    mask = v == best[:, :, None, :, None]
    first = [mask[:, :, i, :, j] for i in range(2) for j in range(2)]
    seen = first[0].copy()
    for t in first[1:]:
        np.greater(t, seen, out=t)
        seen |= t
    return best, mask


def _unpool2(gh, mask):
    n, ho, _, wo, _, c = mask.shape
    return (gh[:, :, None, :, None] * mask).reshape(n, 2 * ho, 2 * wo, c)


def numpy_cnn_step(weights, x, y, optim):
    """The demo CNN, forward and backward written out by hand."""
    params = [w.copy() for w in weights]  # w1, b1, w2, b2, w3, b3
    w1, b1, w2, b2, w3, b3 = params
    update = _updater(params, optim)
    rng = np.random.default_rng(0)
    n = x.shape[0]
    xh = np.ascontiguousarray(x.transpose(0, 2, 3, 1))

    def step():
        a1, c1 = _conv3_forward(xh, w1, b1)
        p1, m1 = _pool2(np.maximum(a1, 0))
        a2, c2 = _conv3_forward(p1, w2, b2)
        p2, m2 = _pool2(np.maximum(a2, 0))
        keep = (rng.random((n, w3.shape[1]), np.float32) >= DROPOUT) / np.float32(1 - DROPOUT)
        f = p2.transpose(0, 3, 1, 2).reshape(n, -1) * keep  # flattened in (C, H, W) order
        logits = f @ w3.T + b3
        g = _softmax_xent_grad(logits, y)
        gw3, gb3 = g.T @ f, g.sum(0)
        gp2 = ((g @ w3) * keep).reshape(n, *p2.shape[3:], *p2.shape[1:3]).transpose(0, 2, 3, 1)
        ga2 = _unpool2(gp2, m2) * (a2 > 0)
        gp1, gw2, gb2 = _conv3_backward(ga2, w2, c2)
        ga1 = _unpool2(gp1, m1) * (a1 > 0)
        _, gw1, gb1 = _conv3_backward(ga1, w1, c1, need_x=False)
        update([gw1, gb1, gw2, gb2, gw3, gb3])

    return step


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="steps per timed repeat")
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats (best is kept)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS and torch threads")
    args = parser.parse_args(argv)
    import torch
    from threadpoolctl import threadpool_limits

    import tapegrad as tg

    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, BATCH)
    x_mlp = rng.standard_normal((BATCH, 64)).astype(np.float32)
    x_cnn = rng.random((BATCH, 1, 8, 8), np.float32)
    cases = [
        ("MLP, SGD", mlp, x_mlp, numpy_mlp_step, "sgd"),
        ("demo CNN, Adam", demo_cnn, x_cnn, numpy_cnn_step, "adam"),
        ("demo CNN, SGD", demo_cnn, x_cnn, numpy_cnn_step, "sgd"),
    ]
    print(
        f"batch {BATCH}, {args.repeats} repeats x {args.steps} steps (median step, best "
        f"repeat), BLAS/torch threads {args.threads}, cpus {os.cpu_count()}, "
        f"numpy {np.__version__}, torch {torch.__version__}"
    )
    print(
        f"{'model':<16}{'tapegrad':>11}{'torch':>11}{'numpy':>11}{'tg/torch':>10}{'tg/numpy':>10}"
        f"{'tg faults':>11}"
    )
    with threadpool_limits(limits=args.threads):
        for name, build, x, numpy_step, optim in cases:
            tg.manual_seed(0)
            model = build(tg.nn)
            twin = _torch_twin(build, model, x)
            contenders = {
                "tapegrad": tapegrad_step(model, x, y, optim),
                "torch": torch_step(twin, x, y, optim),
                "numpy": numpy_step(_weights(model), x, y, optim),
            }
            r = _bench(contenders, args.steps, args.repeats)
            (t_tg, faults), (t_torch, _), (t_np, _) = r["tapegrad"], r["torch"], r["numpy"]
            print(
                f"{name:<16}{t_tg:>9.3f}ms{t_torch:>9.3f}ms{t_np:>9.3f}ms"
                f"{t_tg / t_torch:>9.2f}x{t_tg / t_np:>9.2f}x{faults:>11.1f}"
            )
    print(
        "tg faults: minor page faults per tapegrad step (Note [Convolution memory]); a few "
        "hundred means glibc is returning the step's memory to the OS after every step."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
