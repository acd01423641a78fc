"""Where the digits CNN step's time goes: each kernel of the step, tapegrad against PyTorch.

The step of ``eager_table.CNN`` (batch 64 of 1 x 8 x 8, conv 1->16, ReLU, 2x2 max pool,
conv 16->32, ReLU, spatial mean; NCHW inputs, the convolutions' results channels-last
as tapegrad makes them) cut into its array kernels, each timed alone on one thread in
this thread's CPU time (``time.thread_time``: meaningful on a loaded machine), best of
seven repeats of 200 calls: tapegrad's opaque kernels (Note [Opaque kernels]) against
the ATen ops PyTorch's autograd calls for the same cell. The graph, the engine, the
loss, the linear layer and SGD are not in it (``cnn_cells.py`` times whole steps).

Run: ``python benchmarks/cnn_parts.py`` (needs torch and threadpoolctl).
"""

from __future__ import annotations

import time

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from tapegrad.nn import _conv_ops as co
from tapegrad.nn import _pool_2x2 as p2
from tapegrad.ops import _spatial_mean as sm

TF = torch.nn.functional
aten = torch.ops.aten


def bench(fn, n=200, reps=7):
    for _ in range(20):
        fn()
    best = []
    for _ in range(reps):
        t0 = time.thread_time()
        for _ in range(n):
            fn()
        best.append((time.thread_time() - t0) / n * 1e6)
    return min(best)


def _nhwc(rng, shape):
    n, c, h, w = shape
    return rng.standard_normal((n, h, w, c)).astype(np.float32).transpose(0, 3, 1, 2)


def cells():
    """``[(name, tapegrad thunk, torch thunk)]`` for the step's kernels."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 1, 8, 8)).astype(np.float32)
    w1 = rng.standard_normal((16, 1, 3, 3)).astype(np.float32)
    b1 = rng.standard_normal(16).astype(np.float32)
    w2 = (rng.standard_normal((32, 16, 3, 3)) / 12).astype(np.float32)
    b2 = rng.standard_normal(32).astype(np.float32)
    geom = co.Geometry((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    y1, cols1 = co._forward_kernel(x, w1, b1, (8, 8), geom, True)
    r1 = np.maximum(y1, 0)
    pooled, gt1, gt2 = p2._forward_kernel(r1, (4, 4), None)
    pool = np.ascontiguousarray(p2.nhwc(pooled)).transpose(0, 3, 1, 2)
    y2, cols2 = co._forward_kernel(pool, w2, b2, (4, 4), geom, True)
    r2 = np.maximum(y2, 0)
    z1, z2 = np.zeros_like(y1), np.zeros_like(y2)
    g2, gp, gy1 = _nhwc(rng, y2.shape), _nhwc(rng, pooled.shape), _nhwc(rng, y1.shape)
    gm = rng.standard_normal((64, 32)).astype(np.float32)

    t = {
        k: torch.from_numpy(np.ascontiguousarray(v))
        for k, v in dict(x=x, w1=w1, b1=b1, w2=w2, b2=b2).items()
    }
    ty1 = TF.conv2d(t["x"], t["w1"], t["b1"], padding=1)
    tr1 = TF.relu(ty1)
    tp, tidx = aten.max_pool2d_with_indices(tr1, [2, 2], [2, 2])
    ty2 = TF.conv2d(tp, t["w2"], t["b2"], padding=1)
    tr2 = TF.relu(ty2)
    tg2, tgp, tgy1 = (torch.from_numpy(np.ascontiguousarray(a)) for a in (g2, gp, gy1))
    tgm = torch.from_numpy(gm)
    conv_bwd = aten.convolution_backward
    one = [1, 1]
    return [
        (
            "conv1 forward",
            lambda: co._forward_kernel(x, w1, b1, (8, 8), geom, True),
            lambda: TF.conv2d(t["x"], t["w1"], t["b1"], padding=1),
        ),
        ("relu1 forward", lambda: np.maximum(y1, z1), lambda: TF.relu(ty1)),
        (
            "pool forward",
            lambda: p2._forward_kernel(r1, (4, 4), None),
            lambda: aten.max_pool2d_with_indices(tr1, [2, 2], [2, 2]),
        ),
        (
            "conv2 forward",
            lambda: co._forward_kernel(pool, w2, b2, (4, 4), geom, True),
            lambda: TF.conv2d(tp, t["w2"], t["b2"], padding=1),
        ),
        ("relu2 forward", lambda: np.maximum(y2, z2), lambda: TF.relu(ty2)),
        ("mean forward", lambda: sm.spatial_mean_kernel(r2, False), lambda: tr2.mean(dim=(2, 3))),
        (
            "mean backward",
            lambda: sm.spatial_grad_kernel(gm, r2.shape),
            lambda: tgm[:, :, None, None].expand(64, 32, 4, 4) / 16,
        ),
        (
            "relu2 backward",
            lambda: np.multiply(g2, r2 != 0),
            lambda: aten.threshold_backward(tg2, tr2, 0),
        ),
        (
            "conv2 backward x, w, b",
            lambda: co._backward_kernel(g2, pool, w2, pool.shape, geom, True, cols2),
            lambda: conv_bwd(tg2, tp, t["w2"], [32], one, one, one, False, [0, 0], 1, [True] * 3),
        ),
        (
            "pool backward",
            lambda: p2._scatter_kernel(gp, gt1, gt2, r1.shape),
            lambda: aten.max_pool2d_with_indices_backward(
                tgp, tr1, [2, 2], [2, 2], [0, 0], one, False, tidx
            ),
        ),
        (
            "relu1 backward",
            lambda: np.multiply(gy1, r1 != 0),
            lambda: aten.threshold_backward(tgy1, tr1, 0),
        ),
        (
            "conv1 backward w, b",
            lambda: co._backward_kernel(gy1, x, w1, None, geom, True, cols1),
            lambda: conv_bwd(
                tgy1, t["x"], t["w1"], [16], one, one, one, False, [0, 0], 1, [False, True, True]
            ),
        ),
    ]


def main():
    torch.set_num_threads(1)
    with threadpool_limits(1, user_api="blas"):
        print("digits CNN kernels, one thread, thread CPU time, best of 7 x 200 calls, us")
        total = [0.0, 0.0]
        for name, ours, theirs in cells():
            a, b = bench(ours), bench(theirs)
            total[0] += a
            total[1] += b
            print(f"  {name:24s} tapegrad {a:7.1f}  torch {b:7.1f}  {a / b:5.2f}x")
        a, b = total
        print(f"  {'total':24s} tapegrad {a:7.1f}  torch {b:7.1f}  {a / b:5.2f}x")


if __name__ == "__main__":
    main()
