"""One recording: swap tracing arrays in, run the function eagerly, put plain arrays back.

The call runs for real (its results are the eager results), while every array op
is logged (tracer.py). Afterwards the state is settled: each location holds a
plain array again, and what the call changed becomes part of the program: an
array location now holding a traced result is assigned at the end of each replay;
a ``grad`` now holding a Tensor made by the call gets that Tensor, with fresh data,
at each replay. A change that the program cannot reproduce (a Python number
changed, a dict grew, an array appeared from nowhere) is a *problem*: this
recording is not used, and the next call records again.
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from .. import _trace
from ..autograd import engine
from ..autograd.graph import iter_graph
from ..tensor import READ_LISTENERS, RETRACE, Tensor
from . import tracer
from .program import Program
from .recorder import Recorder, user_line
from .rng import recording_generators
from .signature import substitute
from .state import Location, guard_holds, walk
from .tracer import TracedArray

__all__ = ["record", "Recording", "OutTensor", "OutArray"]


class OutTensor:
    """Output template leaf: a Tensor made from program output ``k``."""

    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k


class OutArray(OutTensor):
    """Output template leaf: program output ``k`` as a plain array."""

    __slots__ = ()


class Recording:
    """What a recorded call produced: the result, and a Program or the reasons why not."""

    __slots__ = ("result", "program", "refusals", "problems", "out_template", "arg_grads")

    def __init__(self):
        self.result = None
        self.program = None
        self.refusals = []
        self.problems = []
        self.out_template = None
        self.arg_grads = []  # (leaf index, program output index): Note [Gradients of arguments]


# Note [Recording and threads]
# A recording installs process-wide hooks (the tracer's active recorder, _trace.HOOK,
# RETRACE, engine.run_backward, READ_LISTENERS, Generator.numpy). Recordings are
# serialised by one lock, so those hooks have one owner at a time and are restored
# in that owner's ``finally`` (also after an exception); each hook acts only for the
# recording thread, so other threads (eager code, replays, reads such as ``item()``)
# pass straight through and are never logged into, or blamed on, that recording.
_RECORD_LOCK = threading.RLock()

# Note [Gradients of arguments]
# The replay knows its argument tensors at every call, so a call that sets the .grad of
# an argument that had none (``x.grad = None; loss(x).backward()``) replays too: the
# gradient's array becomes one more program output, and the replay binds a fresh
# Tensor of it to that argument's ``.grad`` (Recording.arg_grads: leaf index -> output
# index). Whether an argument that requires grad has a .grad is part of the signature
# (signature.py), so a call that would accumulate into an existing .grad records apart,
# and runs eagerly with a warning if it does accumulate.


def record(fn, args, kwargs, leaves, extra_roots, name) -> Recording:
    """Run ``fn(*args, **kwargs)`` once while recording its array program."""
    with _RECORD_LOCK:
        return _record(fn, args, kwargs, leaves, extra_roots, name)


def _record(fn, args, kwargs, leaves, extra_roots, name) -> Recording:
    rec = Recorder()
    out = Recording()
    swaps, arg_slots, traced_args = [], [], {}
    for j, leaf in enumerate(leaves):
        arr = leaf._data if isinstance(leaf, Tensor) else leaf
        tr = rec.new_slot(arr, ("arg", j))
        arg_slots.append(tr._tg_slot)
        if isinstance(leaf, Tensor):
            swaps.append((Location(leaf, "_data", "attr", f"argument {j}._data"), arr, tr))
            leaf._data = tr
        else:
            traced_args[id(leaf)] = tr
    arg_grads = [(j, leaf, leaf.grad) for j, leaf in enumerate(leaves) if isinstance(leaf, Tensor)]
    roots = [(getattr(fn, "__name__", "fn"), fn)] + list(extra_roots)
    roots += [(f"argument {i}", a) for i, a in enumerate(args) if _walkable(a)]
    arrays, guards, containers = walk(roots, skip_ids={id(x) for x in leaves})
    by_array = {}
    for loc in arrays:
        arr = _plain(loc.get())  # a traced array left by an earlier recording is plain now
        tr = by_array.get(id(arr))
        if tr is None:
            tr = rec.new_slot(arr, ("state", loc))
            by_array[id(arr)] = tr
        swaps.append((loc, arr, tr))
        loc.set(tr)
    originals = {id(loc): loc.get() for loc, _ in guards}
    if traced_args:
        args, kwargs = substitute(args, traced_args), substitute(kwargs, traced_args)
    try:
        with _recording(rec):
            out.result = fn(*args, **kwargs)
    finally:
        assignments, new = _settle(rec, swaps, guards, originals, containers)
        if rec.problems:  # new state (an optimizer's first step): leave no traced array in it
            for loc in walk(roots, skip_ids={id(x) for x in leaves})[0]:
                loc.set(_plain(loc.get()))
        out.out_template, outputs = _outputs(rec, out.result)
        out.result = _plain_result(out.result)
    graph = _live_graph_output(out.result, getattr(rec, "backward_roots", ()))
    if graph:
        rec.refusals.append(
            f"returns {graph}: a replay returns plain arrays, so a backward outside the "
            "cached function would find no graph; call backward inside it, or return "
            "a detached tensor"
        )
    for j, leaf, before in arg_grads:
        after = leaf.grad
        if after is before and (after is None or not leaf._rg):
            continue
        slot = None if after is None else _slot_of_traced(rec, after._data)
        if before is None and slot is not None and after.grad_fn is None and after.grad is None:
            outputs.append(slot)  # Note [Gradients of arguments]
            out.arg_grads.append((j, len(outputs) - 1))
            after._data = _plain(after._data)
            continue
        rec.problems.append("the function changes the .grad of an argument tensor")
        rec.refusals.append(
            "accumulates gradients into the existing .grad of an argument tensor "
            "(a replay binds a .grad only to an argument that has none: set "
            ".grad = None before the call, or keep such tensors in the state)"
        )
        break
    out.refusals, out.problems = rec.refusals, rec.problems
    if not rec.refusals and not rec.problems:
        lengths = [
            (Location(c, None, "len", f"len(<{type(c).__name__}>)"), n) for c, n in containers
        ]
        program = Program(rec, arg_slots, list(guards) + lengths, assignments, outputs, new, name)
        program.read_locs = [
            rec.slots[i][1]
            for i in range(len(rec.slots))
            if rec.slots[i][0] == "state" and f"s{i} = " in program.source
        ]
        program.assign_locs = [loc for loc, _ in assignments]
        program.generators = rec.rng_used
        out.program = program
    return out


def _live_graph_output(x, consumed=()):
    """A description of the first returned tensor that requires grad and whose graph has
    not been consumed by a backward inside the call (a train step's loss has: its Node was
    a root of that backward, or was released by it), or None."""
    t = type(x)
    if isinstance(x, Tensor):
        node = x.grad_fn
        if x._rg and (node is None or not (node._released or node in consumed)):
            return "a tensor that requires grad" + ("" if node else " (a leaf)")
        return None
    if t is tuple or t is list:
        return next(filter(None, (_live_graph_output(v, consumed) for v in x)), None)
    if t is dict:
        return next(filter(None, (_live_graph_output(v, consumed) for v in x.values())), None)
    return None


def _walkable(a):
    return not isinstance(a, (Tensor, np.ndarray, int, float, str, bool, type(None)))


@contextlib.contextmanager
def _recording(rec):
    original_backward = engine.run_backward
    thread = threading.get_ident()

    def checked(roots, grads, retain_graph, create_graph, targets, accumulate):
        if threading.get_ident() != thread:
            return original_backward(roots, grads, retain_graph, create_graph, targets, accumulate)
        if retain_graph:
            rec.refusals.append(f"calls backward with retain_graph=True (at {user_line()})")
        hooked = _hooked_node(roots)
        if hooked:
            rec.refusals.append(
                f"runs backward through {hooked}, which has hooks (at "
                f"{user_line()}); hooks are Python code the replay skips"
            )
        # Nodes that saved nothing survive backward (Note [Backward twice]): remember every
        # Node this backward went through, whose graph the call consumed, for
        # _live_graph_output (recording only; replays never get here).
        if not hasattr(rec, "backward_roots"):
            rec.backward_roots = set()
        rec.backward_roots.update(iter_graph(roots))
        return original_backward(roots, grads, retain_graph, create_graph, targets, accumulate)

    def on_read(t, how):
        if threading.get_ident() == thread:
            rec.on_read(how if how.startswith("_") else f"{how}()")

    def check(fn, args):
        if threading.get_ident() != thread:
            return fn(*args)
        return rec.check(fn, args)

    def retrace(x):
        return rec.retrace(x) if threading.get_ident() == thread else x

    tracer.ACTIVE["thread"] = thread
    tracer.ACTIVE["recorder"] = rec
    _trace.HOOK[0] = check
    RETRACE[0] = retrace
    engine.run_backward = checked
    READ_LISTENERS.append(on_read)
    try:
        with recording_generators(rec):
            yield
    finally:
        tracer.ACTIVE["recorder"] = None
        tracer.ACTIVE["thread"] = None
        _trace.HOOK[0] = None
        RETRACE[0] = None
        engine.run_backward = original_backward
        READ_LISTENERS.remove(on_read)


def _hooked_node(roots):
    stack = [r.grad_fn for r in roots if r.grad_fn is not None]
    stack += [r for r in roots if r.grad_fn is None]
    seen = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Tensor):
            if node._hooks or node._post_hooks:
                return "a leaf tensor"
            continue
        if node._pre_hooks or node._hooks or node._tensor_hooks or node._retain_refs:
            return node.name()
        variable = getattr(node, "variable", None)
        if variable is not None and (variable._hooks or variable._post_hooks):
            return "a leaf tensor"
        stack.extend(e[0] for e in node.next_functions if e is not None)
    return None


def _slot_of_traced(rec, x):
    if type(x) is TracedArray and x._tg_slot is not None and rec.objects[x._tg_slot] is x:
        return x._tg_slot
    return None


def _plain(x):
    return np.ndarray.view(x, np.ndarray) if type(x) is TracedArray else x


def _settle(rec, swaps, guards, originals, containers):
    """Put plain arrays back everywhere; return the end-of-replay assignments."""
    assignments, new = [], set()
    for loc, original, tr in swaps:
        cur = loc.get()
        if cur is tr:
            loc.set(original)
            continue
        slot = _slot_of_traced(rec, cur)
        if slot is not None:
            assignments.append((loc, ("slot", slot)))
        else:
            rec.problems.append(f"{loc} was replaced by an array the trace did not compute")
        loc.set(_plain(cur))
    for loc, expected in guards:
        cur = loc.get()
        before = originals[id(loc)]
        if cur is before or guard_holds(loc, expected) and not isinstance(cur, Tensor):
            continue
        if loc.key == "grad" and (cur is None or isinstance(cur, Tensor)):
            assignments.append((loc, ("object", cur)))
            if cur is not None:
                new.add(id(cur))
                _settle_new_tensor(rec, cur, loc, assignments)
            continue
        rec.problems.append(
            f"the call changed the Python value {loc} from {before!r} to {cur!r}; the "
            "replay cannot: keep such state in an array"
        )
    for container, length in containers:
        if len(container) != length:
            rec.problems.append(
                "the call added entries to a dict or list it reaches "
                "(state created on the first call?)"
            )
            break
    return assignments, new


def _settle_new_tensor(rec, t, loc, assignments):
    slot = _slot_of_traced(rec, t._data)
    if slot is None:
        rec.problems.append(f"{loc} got a tensor whose data the trace did not compute")
        return
    assignments.append((Location(t, "_data", "attr", f"{loc}._data"), ("slot", slot)))
    t._data = _plain(t._data)
    if t.grad is not None:
        rec.problems.append(f"{loc} got a tensor that has a .grad of its own")


def _plain_result(x):
    t = type(x)
    if t is TracedArray:
        return _plain(x)
    if t is tuple or t is list:
        return t(_plain_result(v) for v in x)
    if t is dict:
        return {k: _plain_result(v) for k, v in x.items()}
    return x


def _outputs(rec, result):
    """The output template of ``result`` and the slots it returns; plain arrays restored."""
    outputs = []

    def visit(x):
        if isinstance(x, Tensor):
            slot = rec._slot_of(x._data)
            x._data = _plain(x._data)
            outputs.append(slot)
            return OutTensor(len(outputs) - 1)
        if isinstance(x, np.ndarray):
            outputs.append(rec._slot_of(x))
            return OutArray(len(outputs) - 1)
        t = type(x)
        if t is tuple or t is list:
            return t(visit(v) for v in x)
        if t is dict:
            return {k: visit(v) for k, v in x.items()}
        return x

    template = visit(result)
    return template, outputs
