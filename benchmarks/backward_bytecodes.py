"""The engine's per-Node cost as a deterministic count: Python bytecodes, Python calls
and C calls executed by one ``backward()`` of a training step (Note [Array backward]).

Wall and CPU times on a shared machine scatter by 20-40%; these counts do not, so two
checkouts compare exactly. Workloads: the README table's MLP and CNN steps
(``eager_table.py``), 48 small linear+tanh layers (64 wide: Python-bound, not
GEMM-bound), and a transformer attention block composed of plain ops (linear, reshape,
split, transpose, matmul, softmax, mse_loss). Run:
``PYTHONPATH=src python benchmarks/backward_bytecodes.py``.
"""

from __future__ import annotations

import sys

import numpy as np

import tapegrad as tg
from tapegrad.autograd.graph import iter_graph

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import eager_table as et  # noqa: E402


def _calls(fn):
    """(Python calls, C calls) while ``fn()`` runs."""
    counts = [0, 0]

    def profile(frame, event, arg):
        if event == "call":
            counts[0] += 1
        elif event == "c_call":
            counts[1] += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return counts


def _bytecodes(fn):
    """Python bytecodes executed while ``fn()`` runs."""
    count = [0]

    def trace(frame, event, arg):
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        if event == "opcode":
            count[0] += 1
        return trace

    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count[0]


def deep_small(m, p, x, y):
    h = x
    for i in range(0, len(p), 2):
        h = m.tanh(m.nn.functional.linear(h, p[i], p[i + 1]))
    return ((h - y) ** 2).mean()


def attention_block(m, p, x, y):
    fn = m.nn.functional
    b, t, c, heads = 4, 8, 32, 4
    q, k, v = fn.linear(x, p[0], p[1]).reshape(b, t, 3 * c).split(c, dim=2)
    q, k, v = (z.reshape(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
    a = (q @ k.transpose(-2, -1) / 8.0).softmax(-1)
    o = (a @ v).transpose(1, 2).reshape(b * t, c)
    return fn.mse_loss(fn.linear(o, p[2], p[3]), y)


WORKLOADS = {
    "MLP 64-256-256-10": et.MLP,
    "digits CNN": et.CNN,
    "48 x Linear(64)+tanh": ([(64, 64), (64,)] * 48, deep_small, (16, 64), None),
    "attention block (plain ops)": (
        [(96, 32), (96,), (32, 32), (32,)],
        attention_block,
        (32, 32),
        None,
    ),
}


def measure(workload):
    """Nodes, Python calls, C calls and bytecodes of one backward of ``workload``."""
    shapes, forward, x_shape, classes = workload
    params = [tg.tensor(a, requires_grad=True) for a in et._init(shapes)]
    rng = np.random.default_rng(0)
    x = tg.tensor(rng.standard_normal(x_shape).astype(np.float32))
    if classes is None:
        y = tg.tensor(np.tanh(rng.standard_normal(x_shape)).astype(np.float32))
    else:
        y = tg.tensor(rng.integers(0, classes, x_shape[0]))

    def fresh_loss():
        for p in params:
            p.grad = None
        return forward(tg, params, x, y)

    for _ in range(3):  # warm caches (ones rows, zeros for relu, cached numbers)
        fresh_loss().backward()
    loss = fresh_loss()
    nodes = sum(1 for _ in iter_graph([loss]))
    py, c = _calls(loss.backward)
    ops = _bytecodes(fresh_loss().backward)
    return nodes, py, c, ops


def main():
    print("one backward(): Nodes, Python calls, C calls, bytecodes (per Node)")
    for name, workload in WORKLOADS.items():
        nodes, py, c, ops = measure(workload)
        print(f"  {name:28s} {nodes:4d} {py:6d} {c:6d} {ops:7d} ({ops / nodes:.0f})")


if __name__ == "__main__":
    main()
