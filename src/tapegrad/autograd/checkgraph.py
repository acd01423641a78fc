"""check_graph: find the Node whose backward is wrong, by checking each Node on its own.

gradcheck says *that* a composed function's gradient is wrong; check_graph says
*where*. Inside ``checkable()`` every new Node remembers how to re-run its forward:
the registered op (found by walking out of make_result to the first frame that is a
function in ``tapegrad.ops.OPS``) with the arguments that frame holds, or the
``Function.apply`` that created it. check_graph then re-runs each Node's forward in
float64 on its own recorded inputs and compares the directional derivative from the
freshly recorded backward, ``<∂(w·f)/∂x, u>``, with central differences along random
directions ``u`` (random projections: two forward evaluations per direction, whatever
the size). The first Node in creation order that disagrees is reported with its
name, shapes and the user line that created it.

Before trusting a replay, it is run once at the recorded inputs and must reproduce
the recorded output; a Node whose replay does not (an op that rebinds its
parameters to something not re-callable) is skipped, never blamed.
"""

from __future__ import annotations

import numpy as np

from ..grad_mode import enable_grad, no_grad
from ..tensor import Tensor
from . import anomaly, engine, graph

__all__ = ["check_graph", "checkable", "NodeReport", "attach_replay"]

_OP_CODES = {"size": -1, "map": {}}


def _op_codes() -> dict:
    # checkgraph is debug tooling above the op layer; it reads the registry lazily.
    from ..ops._registry import OPS  # noqa: PLC0415

    if _OP_CODES["size"] != len(OPS):
        # Ops made by one factory (activation_rows._make, ...) share a code object: keep
        # them all, and tell them apart by their closures (_op_of_frame).
        codes = {}
        for info in OPS.values():
            codes.setdefault(info.fn.__code__, []).append(info.fn)
        _OP_CODES["map"] = codes
        _OP_CODES["size"] = len(OPS)
    return _OP_CODES["map"]


def _op_of_frame(fns, frame):
    """The op among ``fns`` (one code object) that ``frame`` runs: the one whose closure
    cells hold the frame's free variables."""
    if fns is None:
        return None
    if len(fns) == 1:
        return fns[0]
    loc = frame.f_locals
    names = frame.f_code.co_freevars
    for fn in fns:
        cells = fn.__closure__ or ()
        if all(n in loc and loc[n] is c.cell_contents for n, c in zip(names, cells)):
            return fn
    return None


def attach_replay(node, fn, args, kwargs, output=None) -> None:
    """Record that ``fn(*args, **kwargs)`` re-creates ``node``'s forward."""
    if node.metadata is None:
        node.metadata = {}
    node.metadata["replay"] = (fn, tuple(args), dict(kwargs), output)


def _replay_from_frames(node, frame) -> None:
    make_frame = frame
    codes = _op_codes()
    frame = frame.f_back
    while frame is not None and anomaly._is_internal(frame.f_code.co_filename):
        fn = _op_of_frame(codes.get(frame.f_code), frame)
        if fn is not None:
            args, kwargs = _frame_arguments(frame)
            loc = make_frame.f_locals
            out = loc.get("out", None)
            outs = (out,) if isinstance(out, Tensor) else loc.get("outs")
            output = tuple(o._data for o in outs) if outs else None
            attach_replay(node, fn, args, kwargs, output)
            return
        frame = frame.f_back


def _frame_arguments(frame):
    code = frame.f_code
    loc = frame.f_locals
    names = code.co_varnames
    n, kw = code.co_argcount, code.co_kwonlyargcount
    args = [loc[name] for name in names[:n]]
    kwargs = {name: loc[name] for name in names[n : n + kw]}
    i = n + kw
    if code.co_flags & 0x04:  # *args
        args.extend(loc[names[i]])
        i += 1
    if code.co_flags & 0x08:  # **kwargs
        kwargs.update(loc[names[i]])
    return args, kwargs


class checkable:
    """Context manager: Nodes created inside can be checked one by one by check_graph."""

    def __enter__(self):
        anomaly.add_recorder(_replay_from_frames)
        return self

    def __exit__(self, *exc):
        anomaly.remove_recorder(_replay_from_frames)
        return False


class NodeReport:
    """A Node whose backward disagrees with central differences."""

    def __init__(self, node, input_shapes, output_shapes, analytic, numeric):
        self.name = node.name()
        self.node = node
        self.input_shapes = input_shapes
        self.output_shapes = output_shapes
        self.analytic = analytic
        self.numeric = numeric
        self.where = anomaly.short_where(node)

    def __str__(self) -> str:
        ins = ", ".join(str(list(s)) for s in self.input_shapes)
        outs = ", ".join(str(list(s)) for s in self.output_shapes)
        return (
            f"check_graph: the backward of {self.name} (inputs {ins} -> outputs {outs}), "
            f"created at {self.where}, disagrees with central differences: directional "
            f"derivative analytic {self.analytic:.6g}, numeric {self.numeric:.6g} "
            "(float64, random projection)\n" + anomaly.format_where(self.node)
        )

    __repr__ = __str__


def check_graph(output, *, eps=1e-6, rtol=1e-4, atol=1e-6, seed=0, raise_exception=True):
    """Check every Node behind ``output`` on its own inputs; report the first faulty one.

    The graph must have been built inside ``tg.autograd.checkable()`` (gradcheck with
    ``localize=True`` does this for you).

    Args:
        output: a Tensor with a grad_fn.
        eps: finite-difference step (inputs are converted to float64).
        rtol, atol: tolerances on the directional derivative.
        seed: seed of the random weights and directions.
        raise_exception: raise GradcheckError naming the Node (else return the report).

    Returns:
        None when every checkable Node passes; otherwise the :class:`NodeReport`
        (when ``raise_exception`` is False).

    Raises:
        GradcheckError: naming the first Node (in creation order) that disagrees.
        RuntimeError: when no Node of the graph carries a replay record.
    """
    from .gradcheck import GradcheckError  # noqa: PLC0415 - gradcheck imports us lazily

    nodes = [n for n in graph.iter_graph([output]) if type(n) is not graph.AccumulateGrad]
    replayable = [n for n in nodes if "replay" in (n.metadata or {})]
    if nodes and not replayable:
        raise RuntimeError(
            "check_graph: the graph carries no replay records; build it inside "
            "tg.autograd.checkable() (or use gradcheck(..., localize=True))"
        )
    replayable.sort(key=lambda n: n.metadata.get("seq", 0))
    rng = np.random.default_rng(seed)
    for node in replayable:
        report = _check_node(node, rng, eps, rtol, atol)
        if report is not None:
            if raise_exception:
                raise GradcheckError(str(report))
            return report
    return None


def _float64(t: Tensor, requires_grad: bool) -> Tensor:
    data = t._data.astype(np.float64) if t._data.dtype.kind == "f" else t._data
    leaf = Tensor._wrap(np.array(data, copy=True))
    return leaf.requires_grad_(True) if requires_grad else leaf


def _map_args(args, fn):
    out = []
    for a in args:
        if isinstance(a, Tensor):
            out.append(fn(a))
        elif isinstance(a, (list, tuple)) and any(isinstance(b, Tensor) for b in a):
            out.append(type(a)(fn(b) if isinstance(b, Tensor) else b for b in a))
        else:
            out.append(a)
    return out


def _check_node(node, rng, eps, rtol, atol):
    fn, args, kwargs, recorded = node.metadata["replay"]
    leaves = []

    def to64(t):
        need = t.requires_grad and t._data.dtype.kind == "f"
        leaf = _float64(t, need)
        if need:
            leaves.append(leaf)
        return leaf

    args64 = _map_args(args, to64)
    kwargs64 = dict(zip(kwargs, _map_args(list(kwargs.values()), to64)))
    if not leaves:
        return None

    def run():
        with enable_grad():
            res = fn(*args64, **kwargs64)
        res = res if isinstance(res, tuple) else (res,)
        return [r for r in res if isinstance(r, Tensor) and r._data.dtype.kind == "f"]

    try:
        outs = run()
    except Exception:  # noqa: BLE001 - a replay that cannot run is skipped, not blamed
        return None
    if recorded is not None and not _reproduces(outs, recorded):
        return None
    weights = [rng.uniform(-1, 1, o._data.shape) for o in outs]
    directions = [rng.standard_normal(t._data.shape) for t in leaves]

    def loss(rs):
        total = None
        for r, w in zip(rs, weights):
            term = (r * Tensor._wrap(w)).sum()
            total = term if total is None else total + term
        return total

    # The Tensor rule, then the array rule where the op has one (Note [Array backward]):
    # each must agree with the numbers; the first that does not is reported.
    analytics = []
    for array_rules in (False, True):
        total = loss(run()) if analytics else loss(outs)
        engine.ARRAY_RULES[0] = array_rules
        try:
            grads = engine.grad(total, leaves, allow_unused=True) if total.requires_grad else ()
        finally:
            engine.ARRAY_RULES[0] = True
        analytics.append(
            sum(float(np.sum(g._data * u)) for g, u in zip(grads, directions) if g is not None)
        )
    originals = [t._data.copy() for t in leaves]

    def value(sign):
        for t, x0, u in zip(leaves, originals, directions):
            t._data[...] = x0 + sign * eps * u
        with no_grad():
            return float(loss(run())._data)

    try:
        numeric = (value(1.0) - value(-1.0)) / (2 * eps)
    finally:
        for t, x0 in zip(leaves, originals):
            t._data[...] = x0
    for analytic in analytics:
        if abs(analytic - numeric) > atol + rtol * max(abs(numeric), abs(analytic)):
            break
    else:
        return None
    in_shapes = [t._data.shape for t in leaves]
    out_shapes = [m[0] for m in node._out_meta]
    return NodeReport(node, in_shapes, out_shapes, analytic, numeric)


def _reproduces(outs, recorded) -> bool:
    if len(outs) < len([r for r in recorded if r.dtype.kind == "f"]):
        return False
    for o, r in zip(outs, (r for r in recorded if r.dtype.kind == "f")):
        if o._data.shape != r.shape:
            return False
        tol = 1e-4 if r.dtype.itemsize <= 4 else 1e-9
        if not np.allclose(o._data, r, rtol=tol, atol=tol, equal_nan=True):
            return False
    return True
