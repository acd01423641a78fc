"""Where a GPT training step's time goes: the cached tapegrad replay against PyTorch, by op kind.

The step is ``gpt_step.py``'s (the demo GPT: 2 layers, 2 heads, 64 wide, block 64, batch 16,
AdamW, ``clip_grad_norm_``). Both sides are split into the same categories (linear GEMMs
forward and backward, attention, GELU, LayerNorm, cross entropy, embedding, AdamW,
clipping, the rest):

* tapegrad: the step is recorded by ``tg.jit.cache`` with each array op labelled by the
  innermost library function that made it (``ops/gelu_kernels.py:normal_cdf_and_slope``...),
  and the replay program is run with a clock around every line (the median cost of an
  empty clock pair is taken off each line). The replay has no autograd overhead: what it
  shows is kernels (NumPy, BLAS) and copies, plus the program's own bookkeeping (state
  reads, guards, ``del``). The clock calls still slow each line (more so the many small
  ones), so the table shows the timed lines and the same scaled to the untimed replay.
* PyTorch: ``torch.profiler`` (``record_shapes=True``) over the same steps, each event's
  self time charged to the category of its outermost enclosing op, and the shares scaled
  to the step's measured time (the profiler's own overhead and, on a loaded machine, time
  spent waiting for a core would otherwise be counted).

``--threads 1`` (the default) pins BLAS and torch to one thread and measures this thread's
CPU time, robust to other jobs on the machine; ``--threads 0`` leaves the libraries' default
threads and measures wall time (only meaningful on an idle machine).

Run: ``python benchmarks/gpt_profile.py [--steps N] [--threads T] [--top K]``.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time

import numpy as np

import tapegrad as tg
from tapegrad import _parallel, demo_gpt
from tapegrad.jit import program as jit_program
from tapegrad.jit import recorder as jit_recorder
from tapegrad.nn import _linear_split

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_step  # noqa: E402

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

# (category, pattern on the tapegrad label, pattern on torch's outermost op name)
CATEGORIES = [
    (
        "linear GEMMs forward",
        r"nn/_fused.py:linear|matmul_array < nn/_fused.py:linear|_linear_split.py:forward",
        r"^aten::linear$|^aten::matmul$|^aten::mm$|^aten::addmm$",
    ),
    (
        "linear GEMMs backward (dX, dW, db)",
        r"_linear_backward|_linear_grads|_linear_split.py:grad",
        r"AddmmBackward|MmBackward|TBackward",
    ),
    (
        "attention forward",
        r"_attention_ops.py:(attention|_probabilities|_t <[^<]*attention"
        r"|_row_sums <[^<]*_probabilities)|_attention_split.py:forward",
        r"scaled_dot_product",
    ),
    (
        "attention backward",
        r"_attention_ops.py:(_backward|_t <[^<]*_backward|_row_sums <[^<]*"
        r"_backward)|_attention_split.py:backward",
        r"ScaledDotProduct.*Backward",
    ),
    ("GELU forward", r"gelu_kernels.py:normal_cdf|activation.py:gelu", r"^aten::gelu$"),
    ("GELU backward", r"gelu_kernels.py:gelu_backward", r"GeluBackward"),
    (
        "LayerNorm forward",
        r"_norm_ops.py:(_?normalize|<lambda>|_split_forward)|_norm_split.py:forward",
        r"layer_norm$",
    ),
    (
        "LayerNorm backward",
        r"_norm_ops.py:(_backward_arrays|_leading_sum|_trailing_mean < "
        r"nn/_norm_ops.py:_backward)|_norm_split.py:grad_input",
        r"LayerNormBackward",
    ),
    (
        "cross entropy forward + backward",
        r"_loss_ops|_losses",
        r"cross_entropy|LogSoftmax|NllLoss|log_softmax|nll_loss",
    ),
    ("embedding forward + backward", r"embedding|indexing", r"mbedding"),
    ("AdamW step", r"optim/", r"Optimizer.step"),
    ("clip_grad_norm_", r"clip_grad", r"_foreach_norm|_foreach_mul|^aten::stack$|vector_norm"),
    ("residual adds, views, concatenations, zero_grad", r".", r"."),
]
BOOKKEEPING = "replay bookkeeping (state reads, guards, del, .grad)"
SPLITTABLE = "of which through the pool's kernels"


def _label_ops():
    """Label each recorded op with the innermost tapegrad function outside tapegrad.jit."""
    package = os.path.dirname(tg.__file__)
    skip = ("/jit/", "/_trace.py", "/_parallel.py")

    def where():
        frame, chain = sys._getframe(2), []
        while frame is not None and len(chain) < 3:
            name = frame.f_code.co_filename
            if name.startswith(package) and not any(s in name for s in skip):
                chain.append(f"{os.path.relpath(name, package)}:{frame.f_code.co_name}")
            frame = frame.f_back
        return " < ".join(chain) or "<user>"

    op_lines = jit_program.Program._op_lines

    def labelled(self, op, out=None):
        lines = op_lines(self, op, out)
        return [lines[0] + "  #@ " + op.line] + lines[1:]

    jit_recorder.user_line = where
    jit_program.Program._op_lines = labelled


def _category(label, column):
    for name, tg_rx, torch_rx in CATEGORIES:
        if re.search((tg_rx, torch_rx)[column], label):
            return name
    return CATEGORIES[-1][0]


def profile_tapegrad(steps, clock):
    _label_ops()
    xs, ys = gpt_step.make_batches(steps + 8)
    tg.manual_seed(0)
    model = demo_gpt.build(tg, gpt_step.VOCAB, **gpt_step.CONFIG)
    step = tg.jit.cache(gpt_step.tapegrad_step(model, demo_gpt.optimizer_for(tg, model, 1e-3)))
    batches = [(tg.from_numpy(x), tg.from_numpy(y)) for x, y in zip(xs, ys, strict=True)]
    for x, y in batches[:6]:
        step(x, y)
    start = clock()
    for x, y in batches[6:]:
        step(x, y)
    plain = (clock() - start) / steps
    (entry,) = step._entries.values()
    program = entry.program
    src = program.source.splitlines()
    namespace = {
        "MISS": jit_program.MISS,
        "_asarray": np.asarray,
        "_Tensor": tg.Tensor,
        "_pool": [],
        "_alloc": program._alloc,
        "_clk": time.thread_time_ns if clock is time.thread_time else time.perf_counter_ns,
    }
    namespace.update(zip(program._names, program.consts, strict=True))
    acc = [0] * len(src)
    namespace["_acc"] = acc
    body = [src[0]]
    for k, line in enumerate(src[1:], 1):
        body += ["    _t = _clk()", line, f"    _acc[{k}] += _clk() - _t"]
    exec(compile("\n".join(body) + "\n", "<gpt_profile>", "exec"), namespace)  # noqa: S102
    program.run = namespace["replay"]
    for x, y in batches[6:]:
        step(x, y)
    # what one clock pair adds to a line's time, taken off every line (never below 0)
    clk, n = namespace["_clk"], 20_000
    empty = []
    for _ in range(n):
        t = clk()
        empty.append(clk() - t)
    bias = float(np.median(empty))
    by_cat, by_label = collections.Counter(), collections.Counter()
    # lines that call tapegrad._parallel._map_rows (or linear's dX/dW pair): the work that
    # may split over the pool
    pooled = (_parallel._map_rows, _linear_split._grads_kernel)
    splitters = [n for n, v in zip(program._names, program.consts) if any(v is f for f in pooled)]
    for k, line in enumerate(src):
        if not acc[k]:
            continue
        ms = max(acc[k] / steps - bias, 0.0) / 1e6
        if any(f"{n}(" in line for n in splitters):
            by_cat[SPLITTABLE] += ms
            by_cat[SPLITTABLE + " (calls)"] += 1
        found = re.search(r"#@ (.*)$", line)
        if found:
            by_cat[_category(found.group(1), 0)] += ms
            by_label[found.group(1)] += ms
        else:
            by_cat[BOOKKEEPING] += ms
    return plain * 1e3, by_cat, by_label


def profile_torch(steps, clock):
    from torch.profiler import ProfilerActivity, profile  # noqa: PLC0415 - optional

    xs, ys = gpt_step.make_batches(2 * steps + 5)
    torch.manual_seed(0)
    model = demo_gpt.build(torch, gpt_step.VOCAB, **gpt_step.CONFIG)
    step = gpt_step.torch_step(model, demo_gpt.optimizer_for(torch, model, 1e-3))
    batches = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in zip(xs, ys, strict=True)]
    for x, y in batches[:5]:
        step(x, y)
    start = clock()
    for x, y in batches[5 : 5 + steps]:
        step(x, y)
    per_step = (clock() - start) / steps * 1e3
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for x, y in batches[5 + steps :]:
            step(x, y)
    by_cat = collections.Counter()
    for event in prof.events():
        root = event
        while root.cpu_parent is not None:
            root = root.cpu_parent
        by_cat[_category(root.name, 1)] += event.self_cpu_time_total
    total = sum(by_cat.values())
    return per_step, {c: v / total * per_step for c, v in by_cat.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1, help="0: library defaults")
    parser.add_argument("--top", type=int, default=0, help="also list the K costliest labels")
    args = parser.parse_args(argv)
    clock = time.perf_counter
    if args.threads:
        from threadpoolctl import threadpool_limits  # noqa: PLC0415 - optional

        threadpool_limits(args.threads, "blas")
        if torch is not None:
            torch.set_num_threads(args.threads)
        if args.threads == 1:
            clock = time.thread_time
    tg_ms, tg_cat, tg_labels = profile_tapegrad(args.steps, clock)
    t_ms, t_cat = profile_torch(args.steps, clock) if torch is not None else (None, {})
    what = "CPU" if clock is time.thread_time else "wall"
    threads = args.threads or "default"
    print(f"GPT step by op kind, {what} ms per step, threads: {threads}\n")
    split_ms = tg_cat.pop(SPLITTABLE, 0.0)
    split_calls = tg_cat.pop(SPLITTABLE + " (calls)", 0)
    total = sum(tg_cat.values())
    scale = tg_ms / total
    print("| op kind | tapegrad replay (timed lines) | same, scaled to the step | torch eager |")
    print("|---|---|---|---|")
    for name in [c for c, _, _ in CATEGORIES] + [BOOKKEEPING]:
        t = f"{t_cat.get(name, 0.0):.2f}" if t_ms is not None else "-"
        ms = tg_cat.get(name, 0.0)
        print(f"| {name} | {ms:.2f} | {ms * scale:.2f} | {t} |")
    t_total = f"{t_ms:.2f}" if t_ms is not None else "-"
    print(f"| **whole step** | {total:.2f} | {tg_ms:.2f} | {t_total} |")
    print(
        f"\nThrough the pool's kernels (map_rows, linear's dX/dW pair: TAPEGRAD_INTRA_OP=step "
        f"puts linear, layer norm, GELU and attention there): {int(split_calls)} calls, "
        f"{split_ms:.2f} ms timed = {split_ms * scale:.2f} ms of the {tg_ms:.2f} ms step "
        f"({split_ms / total:.0%})"
    )
    for label, ms in tg_labels.most_common(args.top):
        print(f"  {ms:7.3f} ms  {label}")


if __name__ == "__main__":
    main()
