"""Checkpointing strategies for ``checkpoint_sequential``: which layers to recompute.

A strategy turns ``n`` layers into a :class:`Plan`: consecutive :class:`Segment`\\ s,
each either *recomputed* (run under ``checkpoint``: only its input is kept, and its
activations are rebuilt during backward) or *kept* (run normally). ``NoCheckpoint``,
``Segments(k)`` (what an int means, as in PyTorch), ``SqrtN``, ``Every(k)`` and
``Selective(pred)`` decide from ``n`` alone; ``Budget(bytes)`` measures the layers
once and solves for the cheapest plan whose peak saved memory fits the budget.

Note [Checkpoint memory model]
Let x_0 .. x_n be the arrays flowing between layers (x_i enters layer i). From one
recorded run, layer i is described by: the bytes it saves besides its input and
output (``inner``), whether it saves x_i, whether it saves x_{i+1}, and its forward
time. Arrays are counted as ``saved_bytes`` counts them (Note [What saved_bytes
counts]). After the forward, a plan holds every kept layer's saved arrays plus the
input of every recomputed segment. While backward recomputes segment [s, e), it
holds what the segments before s hold plus all of [s, e)'s saved arrays; the
segments after it have already been released. The peak is the largest of these,
and the extra compute is the forward time of the recomputed layers. Arrays shared
by non-adjacent layers are counted once per layer, so the model can only
overestimate; a plan within the model's budget is within the budget when measured.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ..autograd.graph import make_result
from ..autograd.memory import base_of, saved_buffers
from ..creation import default_generator
from ..grad_mode import enable_grad
from ..tensor import Tensor

__all__ = [
    "Segment",
    "Plan",
    "Strategy",
    "NoCheckpoint",
    "Segments",
    "SqrtN",
    "Every",
    "Selective",
    "Budget",
    "as_strategy",
]


@dataclass(frozen=True)
class Segment:
    """Layers ``[start, stop)``; ``checkpoint`` True means recomputed in backward."""

    start: int
    stop: int
    checkpoint: bool


@dataclass(frozen=True)
class Profile:
    """Per-layer measurements from one recorded run (Note [Checkpoint memory model])."""

    boundary: tuple  # bytes of x_0 .. x_n
    inner: tuple  # bytes layer i saves besides x_i and x_{i+1}
    saves_input: tuple
    saves_output: tuple
    seconds: tuple  # forward time of each layer


@dataclass(frozen=True)
class Plan:
    """A strategy's decision for ``n`` layers, with predictions when a profile exists."""

    segments: tuple
    n: int
    profile: Profile | None = None

    def predict(self) -> tuple:
        """``(bytes held after forward, peak bytes, extra seconds)`` under the memory model."""
        return evaluate(self.profile, self.segments)

    def describe(self) -> str:
        lines = [f"{self.n} layers in {len(self.segments)} segments:"]
        for seg in self.segments:
            what = "recompute" if seg.checkpoint else "keep"
            lines.append(f"  layers [{seg.start}, {seg.stop})  {what}")
        if self.profile is not None:
            after, peak, extra = self.predict()
            _, base_peak, _ = evaluate(self.profile, (Segment(0, self.n, False),))
            forward = sum(self.profile.seconds)
            share = f" (+{100 * extra / forward:.0f}% of a forward)" if forward > 0 else ""
            lines.append(
                f"predicted saved activations: {_fmt(after)} after forward, peak {_fmt(peak)} "
                f"(without checkpointing: {_fmt(base_peak)})"
            )
            lines.append(f"predicted extra compute: {extra * 1e3:.2f} ms per step{share}")
        return "\n".join(lines)


class Strategy:
    """Base class: ``plan(n, functions, input)`` returns a :class:`Plan`; ``explain()``
    describes the last plan made (or the rule, before any)."""

    _last: Plan | None = None

    def plan(self, n: int, functions=None, input=None) -> Plan:
        self._last = Plan(self._segments(n), n)
        return self._last

    def _segments(self, n: int) -> tuple:
        raise NotImplementedError

    def explain(self) -> str:
        if self._last is None:
            return f"{self!r}: no plan made yet"
        return f"{self!r}: {self._last.describe()}"


class NoCheckpoint(Strategy):
    """Keep every activation (no recomputation)."""

    def _segments(self, n):
        return (Segment(0, n, False),) if n else ()

    def __repr__(self):
        return "NoCheckpoint()"


class Segments(Strategy):
    """``k`` equal segments, as PyTorch's ``checkpoint_sequential(functions, k, input)``:
    all but the last are recomputed (recomputing the last would save nothing, since
    backward rebuilds it at once); the last also takes the remainder layers."""

    def __init__(self, k: int):
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"checkpoint_sequential: segments must be a positive int, got {k!r}")
        self.k = k

    def _segments(self, n):
        return _even(n, self.k)

    def __repr__(self):
        return f"Segments({self.k})"


class SqrtN(Strategy):
    """About √n segments of √n layers: memory O(√n) layers' activations for one extra forward."""

    def _segments(self, n):
        return _even(n, max(1, round(math.sqrt(n))))

    def __repr__(self):
        return "SqrtN()"


class Every(Strategy):
    """Segments of ``k`` layers each, all recomputed but the last."""

    def __init__(self, k: int):
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"Every: k must be a positive int, got {k!r}")
        self.k = k

    def _segments(self, n):
        segs = [Segment(s, min(s + self.k, n), True) for s in range(0, n, self.k)]
        if segs:
            segs[-1] = Segment(segs[-1].start, n, False)
        return tuple(segs)

    def __repr__(self):
        return f"Every({self.k})"


class Selective(Strategy):
    """Recompute each layer for which ``predicate(index, layer)`` is true, on its own."""

    def __init__(self, predicate):
        if not callable(predicate):
            raise TypeError("Selective: predicate must be callable as predicate(index, layer)")
        self.predicate = predicate

    def plan(self, n, functions=None, input=None):
        if functions is None:
            raise ValueError("Selective needs the layers to call its predicate on")
        chosen = [bool(self.predicate(i, f)) for i, f in enumerate(functions)]
        segs, start = [], 0
        for i, c in enumerate(chosen):
            if c:
                if start < i:
                    segs.append(Segment(start, i, False))
                segs.append(Segment(i, i + 1, True))
                start = i + 1
        if start < n:
            segs.append(Segment(start, n, False))
        self._last = Plan(tuple(segs), n)
        return self._last

    def __repr__(self):
        return f"Selective({getattr(self.predicate, '__name__', 'predicate')})"


class Budget(Strategy):
    """The least recomputation whose peak saved-activation memory stays within ``max_bytes``.

    The first ``plan`` for a given model and input signature runs the layers once
    with grad enabled, one layer's graph at a time (the random state is restored
    afterwards), to measure each layer's saved bytes and forward time; then a
    dynamic program over segment boundaries picks which segments to recompute
    (Note [Checkpoint memory model]). Layers with side effects (running statistics)
    see that extra forward.

    Args:
        max_bytes: the budget for saved activations, in bytes.
        cost: ``"time"`` (measured forward seconds, the default) or ``"layers"``
            (each recomputed layer counts 1) as the recomputation to minimise.

    Raises:
        ValueError: from ``plan`` when no plan fits; the message states the smallest
            feasible budget.
    """

    def __init__(self, max_bytes, cost: str = "time"):
        if not isinstance(max_bytes, (int, float)) or max_bytes < 0:
            raise ValueError(f"Budget: max_bytes must be a non-negative number, got {max_bytes!r}")
        if cost not in ("time", "layers"):
            raise ValueError(f"Budget: cost must be 'time' or 'layers', got {cost!r}")
        self.max_bytes = max_bytes
        self.cost = cost
        self._cache = {}

    def plan(self, n, functions=None, input=None):
        if functions is None or not isinstance(input, Tensor):
            raise ValueError("Budget needs the layers and the input Tensor to measure them")
        key = (tuple(id(f) for f in functions), input.shape, input.dtype, input.requires_grad)
        plan = self._cache.get(key)
        if plan is None:
            profile = measure(functions, input)
            costs = profile.seconds if self.cost == "time" else (1.0,) * n
            segments = solve(profile, costs, self.max_bytes)
            if segments is None:
                least = smallest_budget(profile)
                raise ValueError(
                    f"Budget({_fmt(self.max_bytes)}): no checkpointing plan keeps the saved "
                    f"activations of these {n} layers within budget; the smallest feasible "
                    f"budget is {least} bytes ({_fmt(least)})"
                )
            plan = self._cache[key] = Plan(segments, n, profile)
        self._last = plan
        return plan

    def __repr__(self):
        return f"Budget({_fmt(self.max_bytes)})"


def as_strategy(segments) -> Strategy:
    """An int means ``Segments(k)``, as in PyTorch; a Strategy is used as is."""
    if isinstance(segments, Strategy):
        return segments
    if isinstance(segments, int) and not isinstance(segments, bool):
        return Segments(segments)
    raise TypeError(
        "checkpoint_sequential: segments must be an int or a strategy (NoCheckpoint(), SqrtN(), "
        f"Every(k), Selective(pred), Budget(bytes)), got {type(segments).__name__}"
    )


def _even(n, k):
    """PyTorch's split: k-1 recomputed segments of n // k layers, the rest kept."""
    k = min(k, n)
    if k == 0:
        return ()
    size = n // k
    segs = [Segment(i * size, (i + 1) * size, True) for i in range(k - 1)]
    segs.append(Segment((k - 1) * size, n, False))
    return tuple(segs)


# -- measuring --------------------------------------------------------------------------


def measure(functions, input: Tensor) -> Profile:
    """Run the layers once with grad enabled and describe each (Note [Checkpoint memory model]).

    Each layer runs on a stand-in for its input that shares the data and requires
    grad exactly when the real input would, so only one layer's graph is alive at a time.
    """
    state = default_generator._raw_state()
    x = input
    param_input = input.grad_fn is None and input.requires_grad
    boundary = [0 if param_input else base_of(input._data).nbytes]
    inner, s_in, s_out, seconds = [], [], [], []
    try:
        with enable_grad():
            for i, f in enumerate(functions):
                stop = {x.grad_fn} if x.grad_fn is not None else set()
                start = time.perf_counter()
                out = f(x)
                seconds.append(time.perf_counter() - start)
                if not isinstance(out, Tensor):
                    raise TypeError(
                        f"checkpoint_sequential: layer {i} returned {type(out).__name__}; "
                        "each layer must map one Tensor to one Tensor"
                    )
                held = saved_buffers(_nodes_behind(out, stop))
                b_in, b_out = id(base_of(x._data)), id(base_of(out._data))
                inner.append(sum(b.nbytes for k, b in held.items() if k not in (b_in, b_out)))
                s_in.append(b_in in held)
                s_out.append(b_out in held)
                boundary.append(base_of(out._data).nbytes)
                x = _stand_in(out)
    finally:
        default_generator.set_state(state)
    return Profile(tuple(boundary), tuple(inner), tuple(s_in), tuple(s_out), tuple(seconds))


def _stand_in(out: Tensor) -> Tensor:
    """A non-leaf sharing ``out``'s data, with no graph behind it beyond one empty Node."""
    if not out.requires_grad:
        return Tensor._wrap(out._data)
    leaf = Tensor._wrap(out._data)
    leaf._rg = True
    return make_result(out._data, (leaf,), _identity_backward, "ProfileInputBackward")


def _identity_backward(g):  # pragma: no cover - the measuring graph is never run backward
    return (g,)


def _nodes_behind(t: Tensor, stop: set) -> list:
    nodes, seen = [], set(stop)
    stack = [t.grad_fn] if t.grad_fn is not None else []
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        nodes.append(node)
        stack.extend(e[0] for e in node.next_functions if e is not None and e[0] not in seen)
    return nodes


# -- planning ---------------------------------------------------------------------------


def _layer_terms(p: Profile, i: int, h: bool) -> int:
    """Bytes a kept layer i adds, given whether x_i is already held."""
    x = p.boundary
    return (
        p.inner[i]
        + (x[i] if p.saves_input[i] and not h else 0)
        + (x[i + 1] if p.saves_output[i] else 0)
    )


def _segment_fulls(p: Profile, j: int):
    """Yield ``(e, bytes of [j, e)'s saved arrays besides x_j)`` for e = j+1 .. n."""
    x, n = p.boundary, len(p.inner)
    internal = 0
    for e in range(j + 1, n + 1):
        if e > j + 1:  # x_{e-1} is now internal to the segment
            b = e - 1
            internal += x[b] if (p.saves_output[b - 1] or p.saves_input[b]) else 0
        internal += p.inner[e - 1]
        yield e, internal + (x[e] if p.saves_output[e - 1] else 0)


def evaluate(p: Profile, segments) -> tuple:
    """``(bytes held after forward, peak bytes, extra seconds)`` of a plan."""
    mem, peak, extra, h = 0, 0, 0.0, False
    for seg in segments:
        if seg.checkpoint:
            mem += 0 if h else p.boundary[seg.start]
            full = dict(_segment_fulls(p, seg.start))[seg.stop]
            peak = max(peak, mem + full)
            extra += sum(p.seconds[seg.start : seg.stop])
            h = False
        else:
            for i in range(seg.start, seg.stop):
                mem += _layer_terms(p, i, h)
                h = p.saves_output[i]
    return mem, max(peak, mem), extra


def solve(p: Profile, costs, budget):
    """The cheapest plan with peak <= budget, or None (a DP over segment boundaries).

    State: boundary j and whether x_j is already held; each state keeps the Pareto
    front of (bytes held so far, cost so far). Held bytes only grow along a plan, so
    entries over budget are dropped at once.
    """
    n = len(p.inner)
    if n == 0:
        return ()
    fronts = [[[], []] for _ in range(n + 1)]
    fronts[0][0].append((0, 0.0, None))
    for j in range(n):
        for h in (0, 1):
            entries = fronts[j][h] = _pareto(fronts[j][h])
            for k, (mem, cost, _) in enumerate(entries):
                kept = mem + _layer_terms(p, j, bool(h))
                if kept <= budget:
                    fronts[j + 1][int(p.saves_output[j])].append((kept, cost, (j, h, k, False)))
                base = mem + (0 if h else p.boundary[j])
                seg_cost = cost
                for e, full in _segment_fulls(p, j):
                    if base + full > budget:
                        break  # longer segments only hold more
                    seg_cost += costs[e - 1]
                    fronts[e][0].append((base, seg_cost, (j, h, k, True)))
    fronts[n] = [_pareto(f) for f in fronts[n]]
    finals = [
        (cost, mem, h, k)
        for h in (0, 1)
        for k, (mem, cost, _) in enumerate(fronts[n][h])
        if mem <= budget
    ]
    if not finals:
        return None
    _, _, h, k = min(finals)
    segments, e = [], n
    while e > 0:
        j, h0, k0, recompute = fronts[e][h][k][2]
        segments.append(Segment(j, e, recompute))
        e, h, k = j, h0, k0
    return _merge_kept(segments[::-1])


def _pareto(entries):
    """Entries not dominated in (held bytes, cost), sorted by bytes."""
    entries.sort(key=lambda t: (t[0], t[1]))
    front, best = [], math.inf
    for entry in entries:
        if entry[1] < best:
            front.append(entry)
            best = entry[1]
    return front


def _merge_kept(segments):
    """Join consecutive kept layers into one segment."""
    merged = []
    for seg in segments:
        if merged and not seg.checkpoint and not merged[-1].checkpoint:
            merged[-1] = Segment(merged[-1].start, seg.stop, False)
        else:
            merged.append(seg)
    return tuple(merged)


def smallest_budget(p: Profile) -> int:
    """The least peak any plan reaches (binary search on a feasibility DP)."""
    lo, hi = 0, evaluate(p, (Segment(0, len(p.inner), False),))[1]
    while lo < hi:
        mid = (lo + hi) // 2
        if _feasible(p, mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _feasible(p: Profile, budget) -> bool:
    """Whether some plan fits: the least held bytes per state is all that matters."""
    n = len(p.inner)
    best = [[math.inf, math.inf] for _ in range(n + 1)]
    best[0][0] = 0
    for j in range(n):
        for h in (0, 1):
            mem = best[j][h]
            if mem > budget:
                continue
            kept = mem + _layer_terms(p, j, bool(h))
            s = int(p.saves_output[j])
            best[j + 1][s] = min(best[j + 1][s], kept)
            base = mem + (0 if h else p.boundary[j])
            for e, full in _segment_fulls(p, j):
                if base + full > budget:
                    break
                best[e][0] = min(best[e][0], base)
    return min(best[n]) <= budget


def _fmt(nbytes) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{int(nbytes)} B"
