"""tg.func transforms: per-sample gradients and jacfwd vs jacrev, with ratios.

* Per-sample gradients of the benchmarks' MLP (64-256-256-10, ReLU, MSE; as in
  ``ddp_step``) for a batch of 64: ``vmap(grad(loss))`` against a Python loop of
  ``grad(loss)`` per sample and against ``torch.func`` (when installed).
* ``jacfwd`` vs ``jacrev`` for f: R^8 -> R^512 and f: R^512 -> R^8 (a two-layer tanh
  map, float64): forward mode should win on the first, reverse mode on the second.

Run: PYTHONPATH=src python benchmarks/func_transforms.py [--repeat 61] [--cpu-time]
Every figure is the median (and, in brackets, the minimum) of ``--repeat`` rounds in
which the rows compared run one after the other (interleaved, so that a change in the
machine's load hits them alike), in the same process; ratios are of the medians. The
per-sample rows also print the median of the per-round ratios loop/vmap with its
interquartile range: each round's ratio compares two runs a few milliseconds apart, so
a slow stretch of the machine cancels out of it.
``--cpu-time`` times with the calling thread's CPU time instead of wall time (for a
loaded machine: another process's turn on the core is not counted, nor are the other
threads of this one: torch's intra-op threads, whose spinning would otherwise be
charged to the rows that follow, and the work they do for torch's own row). The NumPy
row is the floor: the same per-sample gradients written by hand, so loop / floor is the
most loop / vmap can be (printed as "the bound").
Results are checked against each other (and torch) before timings are printed.

The "vmap, products serial" row is the same call with the deferred outer products
written on one core (Note [Deferred outer products on two cores] in _vmap_linear.py),
interleaved with the default row, the two trading places every other round (so neither
always follows torch.func's row, whose threads may still spin): the A/B of that split
in one process. ``--split
force`` splits them even on a busy machine (where the default keeps them serial; wall
times under load mean little: check with ``uptime``), ``--split 0`` never; the default
is the library's own rule (``TAPEGRAD_VMAP_SPLIT``, default ``0``: the split did not pay
on the idle machine). The A/B on an idle machine:
``python benchmarks/func_transforms.py --repeat 201 --split auto``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import tapegrad as tg
from tapegrad import _vmap_linear
from tapegrad._blas_threads import one_thread

F = tg.func
SIZES = (64, 256, 256, 10)


CLOCK = [time.perf_counter]  # or time.thread_time (--cpu-time)


def interleaved(fns: dict, repeat: int, times: dict | None = None, swap=()):
    """``{name: (median, min, result)}``: each function once per round, round after round.
    ``times``, when given, receives every round's time per function. ``swap``: two names
    whose places trade every other round (an A/B pair: neither always follows the same row)."""
    clock = CLOCK[0]
    results = {k: fn() for k, fn in fns.items()}  # warm-up
    if times is None:
        times = {}
    times.update({k: [] for k in fns})
    orders = [list(fns.items())]
    if swap:
        i, j = (list(fns).index(k) for k in swap)
        other = list(orders[0])
        other[i], other[j] = other[j], other[i]
        orders.append(other)
    for r in range(repeat):
        for k, fn in orders[r % len(orders)]:
            t0 = clock()
            fn()
            times[k].append(clock() - t0)
    return {k: (float(np.median(v)), min(v), results[k]) for k, v in times.items()}


def _ms(row) -> str:
    return f"{row[0] * 1e3:8.2f} ms ({row[1] * 1e3:.2f})"


def _mlp(m):
    m.manual_seed(0)
    nn = m.nn
    return nn.Sequential(
        nn.Linear(SIZES[0], SIZES[1]),
        nn.ReLU(),
        nn.Linear(SIZES[1], SIZES[2]),
        nn.ReLU(),
        nn.Linear(SIZES[2], SIZES[3]),
    )


def numpy_per_sample(params, x, y):
    """The MLP's per-sample gradients written by hand in NumPy: the reference row.

    Forward: three GEMMs over the whole batch; backward: the rows of each layer's
    output gradient are the per-sample bias gradients, and each weight gradient is a
    batch of outer products, ``einsum('bo,bi->boi')``. Returns the gradients in the
    order of ``named_parameters()`` (weight, bias per layer). The GEMMs run on one
    OpenBLAS thread, as tapegrad's (Note [Small GEMMs on one thread]).
    """
    with one_thread(0):
        return _numpy_per_sample(params, x, y)


def _numpy_per_sample(params, x, y):
    w1, b1, w2, b2, w3, b3 = params
    h1 = x @ w1.T + b1
    a1 = np.maximum(h1, 0)
    h2 = a1 @ w2.T + b2
    a2 = np.maximum(h2, 0)
    out = a2 @ w3.T + b3
    d3 = (out - y) * np.float32(2 / out.shape[1])  # d mean((out - y)^2) per sample
    d2 = (d3 @ w3) * (h2 > 0)
    d1 = (d2 @ w2) * (h1 > 0)
    outer = "bo,bi->boi"
    return [np.einsum(outer, d1, x), d1, np.einsum(outer, d2, a1), d2, np.einsum(outer, d3, a2), d3]


def per_sample(repeat, batch):
    rng = np.random.default_rng(0)
    xa = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    ya = rng.standard_normal((batch, SIZES[-1])).astype(np.float32)
    net = _mlp(tg)
    params = {k: v.detach() for k, v in net.named_parameters()}
    x, y = tg.tensor(xa), tg.tensor(ya)

    def loss(p, xb, yb):
        out = F.functional_call(net, p, (xb.unsqueeze(0),))
        return ((out - yb.unsqueeze(0)) ** 2).mean()

    arrays = [params[k].numpy() for k in params]
    # The opt-in replay (tg.jit.cache): the same call recorded once, then replayed as a
    # flat array program (docs/per_sample_gradients.md); two recordings must agree first.
    cached = tg.jit.cache(lambda p, xb, yb: F.vmap(F.grad(loss), in_dims=(None, 0, 0))(p, xb, yb))
    for _ in range(3):
        cached(params, x, y)
    per = F.vmap(F.grad(loss), in_dims=(None, 0, 0))

    def serial():
        mode = _vmap_linear.SPLIT[0]
        _vmap_linear.SPLIT[0] = "0"
        try:
            return per(params, x, y)
        finally:
            _vmap_linear.SPLIT[0] = mode

    fns = {
        "vmap": lambda: per(params, x, y),
        "serial": serial,
        "loop": lambda: [F.grad(loss)(params, x[b], y[b]) for b in range(batch)],
        "numpy": lambda: numpy_per_sample(arrays, xa, ya),
        "cached": lambda: cached(params, x, y),
    }
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        tnet = _mlp(torch)
        tnet.load_state_dict({k: torch.tensor(v.numpy()) for k, v in net.state_dict().items()})
        tparams = {k: v.detach() for k, v in tnet.named_parameters()}

        def tloss(p, xb, yb):
            out = torch.func.functional_call(tnet, p, (xb.unsqueeze(0),))
            return ((out - yb.unsqueeze(0)) ** 2).mean()

        tx, ty = torch.tensor(xa), torch.tensor(ya)
        tper = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))
        fns["torch"] = lambda: tper(tparams, tx, ty)
    times = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        rows = interleaved(fns, repeat, times, swap=("vmap", "serial"))
    g_vmap, g_loop, g_np = rows["vmap"][2], rows["loop"][2], rows["numpy"][2]
    assert cached.cache_info().hits > repeat, "tg.jit.cache did not replay vmap(grad)"
    for k, g in zip(params, g_np):
        want = np.stack([gl[k].numpy() for gl in g_loop])
        np.testing.assert_allclose(g_vmap[k].numpy(), want, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(g_vmap[k].numpy(), g, rtol=1e-4, atol=1e-6)
        np.testing.assert_array_equal(rows["cached"][2][k].numpy(), g_vmap[k].numpy())
        np.testing.assert_array_equal(rows["serial"][2][k].numpy(), g_vmap[k].numpy())
        if torch is not None:
            got = rows["torch"][2][k].numpy()
            np.testing.assert_allclose(g_vmap[k].numpy(), got, rtol=1e-3, atol=1e-5)
    t_vmap, t_loop, t_np = rows["vmap"][0], rows["loop"][0], rows["numpy"][0]
    per_round = np.asarray(times["loop"]) / np.asarray(times["vmap"])
    q1, q2, q3 = np.percentile(per_round, [25, 50, 75])
    clock = "thread CPU" if CLOCK[0] is time.thread_time else "wall"
    print(f"per-sample gradients, MLP {'-'.join(map(str, SIZES))}, batch {batch}, float32")
    print(f"  (median of {repeat} interleaved rounds, minimum in brackets; {clock} time)")
    print(f"  tapegrad vmap(grad(loss)):      {_ms(rows['vmap'])}")
    t_s = rows["serial"][0]
    split = np.asarray(times["serial"]) / np.asarray(times["vmap"])
    s1, s2, s3 = np.percentile(split, [25, 50, 75])
    mode = _vmap_linear.SPLIT[0]
    print(f"  vmap, products serial:          {_ms(rows['serial'])} (vmap row: split {mode})")
    print(f"  serial / vmap:                  {t_s / t_vmap:8.2f}x")
    print(f"  per-round serial / vmap:        {s2:8.2f}x (interquartile {s1:.2f}-{s3:.2f})")
    print(f"  tapegrad loop of grad(loss):    {_ms(rows['loop'])}")
    print(f"  loop / vmap:                    {t_loop / t_vmap:8.2f}x")
    print(f"  per-round loop / vmap:          {q2:8.2f}x (interquartile {q1:.2f}-{q3:.2f})")
    print(f"  NumPy by hand (the floor):      {_ms(rows['numpy'])}")
    print(f"  tapegrad vmap / NumPy:          {t_vmap / t_np:8.2f}x")
    print(f"  loop / NumPy (the bound):       {t_loop / t_np:8.2f}x")
    t_c = rows["cached"][0]
    print(f"  tg.jit.cache(vmap(grad)):       {_ms(rows['cached'])} (opt-in replay)")
    print(f"  loop / cached:                  {t_loop / t_c:8.2f}x")
    print(f"  cached / NumPy:                 {t_c / t_np:8.2f}x")
    if torch is None:
        print("  torch not installed: no torch.func timing")
        return
    print(f"  torch.func vmap(grad(loss)):    {_ms(rows['torch'])}")
    print(f"  tapegrad vmap / torch.func:     {t_vmap / rows['torch'][0]:8.2f}x")


def jac_modes(repeat):
    rng = np.random.default_rng(1)
    print("jacfwd vs jacrev, f(x) = tanh(W2 tanh(W1 x)), hidden 64, float64")
    for n_in, n_out in ((8, 512), (512, 8)):
        W1 = tg.tensor(rng.standard_normal((64, n_in)) / np.sqrt(n_in))
        W2 = tg.tensor(rng.standard_normal((n_out, 64)) / 8.0)
        x = tg.tensor(rng.standard_normal(n_in))

        def f(x, W1=W1, W2=W2):
            return (W2 @ (W1 @ x).tanh()).tanh()

        rows = interleaved(
            {"fwd": lambda f=f, x=x: F.jacfwd(f)(x), "rev": lambda f=f, x=x: F.jacrev(f)(x)},
            repeat,
        )
        (t_fwd, _, j_fwd), (t_rev, _, j_rev) = rows["fwd"], rows["rev"]
        np.testing.assert_allclose(j_fwd.numpy(), j_rev.numpy(), rtol=1e-10, atol=1e-12)
        winner = "jacfwd" if t_fwd < t_rev else "jacrev"
        print(
            f"  R^{n_in} -> R^{n_out}: jacfwd {t_fwd * 1e3:8.2f} ms, jacrev {t_rev * 1e3:8.2f} "
            f"ms, jacrev/jacfwd {t_rev / t_fwd:6.2f}x ({winner} wins)"
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=61, help="rounds of the per-sample rows")
    parser.add_argument("--jac-repeat", type=int, default=21, help="rounds of the jacobian rows")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="time with this thread's CPU time instead of wall time (for a loaded machine)",
    )
    parser.add_argument(
        "--split",
        choices=("0", "auto", "force"),
        help="the deferred outer products on two cores: never, by the library's rule, or "
        "always (even on a busy machine); default: TAPEGRAD_VMAP_SPLIT or 0",
    )
    args = parser.parse_args(argv)
    if args.split is not None:
        _vmap_linear.SPLIT[0] = args.split
    if args.cpu_time:
        CLOCK[0] = time.thread_time
    per_sample(args.repeat, args.batch)
    jac_modes(args.jac_repeat)


if __name__ == "__main__":
    main()
