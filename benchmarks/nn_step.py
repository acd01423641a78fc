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


def _bench(contenders, steps, repeats):
    """Best-of-``repeats`` median step time (ms) per contender, interleaving contenders."""
    for step in contenders.values():
        for _ in range(10):
            step()
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(repeats):
        for name, step in contenders.items():
            best[name] = min(best[name], _median_step_ms(step, steps))
    return best


# -- models: tapegrad's and torch's share the definition through their nn module ----------------


def mlp(nn):
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def demo_cnn(nn):
    """The demo's model for tapegrad (its own ``make_model``), mirrored layer by layer in torch."""
    import tapegrad.demo

    if nn.__name__.startswith("tapegrad"):
        return tapegrad.demo.make_model()
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(DROPOUT), nn.Linear(64 * 2 * 2, 10),
    )


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


def _conv3_forward(x, w, b):
    """3x3, padding 1 convolution as im2col + GEMM; returns (NCHW output, columns)."""
    n, _, h, wd = x.shape
    cols = _im2col3(x)
    out = (cols @ w.reshape(len(w), -1).T + b).reshape(n, h, wd, len(w)).transpose(0, 3, 1, 2)
    return out, cols


def _conv3_backward(g, w, cols, x_shape, need_x=True):
    """Gradients (gx, gw, gb) of :func:`_conv3_forward` for the output gradient ``g``."""
    gm = g.transpose(0, 2, 3, 1).reshape(-1, len(w))
    gw = (gm.T @ cols).reshape(w.shape)
    gx = _col2im3(gm @ w.reshape(len(w), -1), x_shape) if need_x else None
    return gx, gw, gm.sum(0)


def numpy_cnn_step(weights, x, y, optim):
    """The demo CNN, forward and backward written out by hand."""
    params = [w.copy() for w in weights]  # w1, b1, w2, b2, w3, b3
    w1, b1, w2, b2, w3, b3 = params
    update = _updater(params, optim)
    rng = np.random.default_rng(0)
    n = x.shape[0]

    def step():
        a1, c1 = _conv3_forward(x, w1, b1)
        r1 = np.maximum(a1, 0)
        p1, i1 = _pool2(r1)
        a2, c2 = _conv3_forward(p1, w2, b2)
        r2 = np.maximum(a2, 0)
        p2, i2 = _pool2(r2)
        keep = (rng.random((n, w3.shape[1]), np.float32) >= DROPOUT) / np.float32(1 - DROPOUT)
        f = p2.reshape(n, -1) * keep
        logits = f @ w3.T + b3
        g = _softmax_xent_grad(logits, y)
        gw3, gb3 = g.T @ f, g.sum(0)
        gf = ((g @ w3) * keep).reshape(p2.shape)
        ga2 = _unpool2(gf, i2, r2.shape) * (a2 > 0)
        gp1, gw2, gb2 = _conv3_backward(ga2, w2, c2, p1.shape)
        ga1 = _unpool2(gp1, i1, r1.shape) * (a1 > 0)
        _, gw1, gb1 = _conv3_backward(ga1, w1, c1, x.shape, need_x=False)
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
    print(f"batch {BATCH}, {args.repeats} repeats x {args.steps} steps (median step, best "
          f"repeat), BLAS/torch threads {args.threads}, cpus {os.cpu_count()}, "
          f"numpy {np.__version__}, torch {torch.__version__}")
    print(f"{'model':<16}{'tapegrad':>11}{'torch':>11}{'numpy':>11}{'tg/torch':>10}{'tg/numpy':>10}")
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
            t = _bench(contenders, args.steps, args.repeats)
            print(f"{name:<16}{t['tapegrad']:>9.3f}ms{t['torch']:>9.3f}ms{t['numpy']:>9.3f}ms"
                  f"{t['tapegrad'] / t['torch']:>9.2f}x{t['tapegrad'] / t['numpy']:>9.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
