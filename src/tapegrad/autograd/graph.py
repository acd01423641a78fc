"""The recorded graph: Node, AccumulateGrad, make_result, sum_to, and hook handles.

Edges point from an op's Node to the Nodes of its inputs, so a result keeps its
graph alive while a leaf does not: a leaf holds its AccumulateGrad only through
a weak reference (Note [AccumulateGrad lifetime]).
"""

from __future__ import annotations

import threading
import weakref

import numpy as _np

from .. import tensor as _tensor_module
from ..grad_mode import STATE
from ..tensor import INIT_MARK as _INIT_MARK
from ..tensor import RETRACE as _RETRACE
from ..tensor import Tensor, VersionCounter

__all__ = [
    "Node",
    "AccumulateGrad",
    "make_result",
    "make_results",
    "keeps_arrays",
    "sum_to",
    "RemovableHandle",
    "saved_bytes",
    "BatchingError",
    "batched_shape",
    "saved_buffers",
    "saved_arrays",
    "fresh_grad",
    "fresh_array",
    "arrays_of",
    "sum_to_array",
    "saved_tensors_hooks",
    "save_on_cpu",
    "disable_saved_tensors_hooks",
    "increment_version",
]

# Set by tapegrad.autograd.anomaly while detect_anomaly() (or checkgraph's checkable())
# is active: "record" is called with each new Node to record where it was created,
# "check" with each Node, its input gradients and its incoming gradients after it ran.
ANOMALY = {"enabled": False, "record": None, "check": None}

# Set by autograd.forward_ad while a dual level is open: ``[0](outs, inputs, node)`` gives
# the outputs of a just-recorded Node their tangents, ``[1](self, others, op)`` refuses an
# in-place op on a tensor with a tangent (Note [Forward-mode tangents]).
FORWARD: list = [None, None]


# Note [Batched gradients]
# autograd.functional.jacobian(vectorize=True), autograd.grad(is_grads_batched=True) and
# tg.func.jacrev push a whole batch of B upstream gradients through the graph in ONE
# backward pass: every gradient then carries a leading "batch prefix" of shape (B,),
# held in BATCH.prefix (thread-local, () outside such a pass). The rule every backward
# closure must follow so that it works batched:
#   * elementwise/broadcasting arithmetic on g needs nothing (operands align right);
#   * sum_to/reduce_grad already honour the prefix;
#   * an explicit shape handed to reshape/expand/zeros must be ``batched_shape(shape)``;
#   * a dim handed to transpose/sum/permute/cat/... must be negative (counted from the
#     right) or shifted by ``len(BATCH.prefix)``; matmul of g with an unbatched operand
#     broadcasts correctly.
# A rule that ignores this returns a gradient without the prefix; the engine then raises
# BatchingError (see engine._check_grad) and the caller falls back to one backward per
# row, so an unconverted op costs speed, never correctness. The callers also check the
# batched result against one unbatched backward on a random combination of the rows.
class _BatchState(threading.local):
    prefix = ()


BATCH = _BatchState()


class BatchingError(RuntimeError):
    """A backward rule returned a gradient without the batch prefix (Note [Batched gradients])."""


def batched_shape(shape: tuple) -> tuple:
    """``shape`` with the batch prefix of the running batched backward in front (usually none)."""
    prefix = BATCH.prefix
    return prefix + tuple(shape) if prefix else shape


class RemovableHandle:
    """Returned by every hook registration; ``remove()`` unregisters the hook."""

    __slots__ = ("_hooks", "_hook")

    def __init__(self, hooks: list, hook):
        self._hooks = hooks
        self._hook = hook

    def remove(self) -> None:
        try:
            self._hooks.remove(self._hook)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class Node:
    """One recorded op: a backward closure plus edges to the Nodes of its inputs.

    ``next_functions`` holds one entry per input: ``(node, output_nr)`` or ``None``
    for an input that needs no gradient. The backward closure receives one
    gradient per output (and the reconstructed output when the op saved it) and
    returns a tuple with one gradient (a Tensor or None) per input.
    """

    __slots__ = (
        "_backward",
        "_array_backward",
        "next_functions",
        "_name",
        "_saved_versions",
        "_saved_output",
        "_out_meta",
        "_pre_hooks",
        "_hooks",
        "_tensor_hooks",
        "_retain_refs",
        "_released",
        "_view_version",
        "metadata",
        "__weakref__",
    )

    def __init__(self, backward, next_functions, name, out_meta):
        self._backward = backward
        self._array_backward = None
        self.next_functions = next_functions
        self._name = name
        self._out_meta = out_meta
        self._saved_versions = None
        self._saved_output = None
        self._pre_hooks = None
        self._hooks = None
        self._tensor_hooks = None
        self._retain_refs = None
        self._released = False
        self._view_version = None
        self.metadata = None

    def name(self) -> str:
        """The op's name, e.g. ``'MulBackward'``."""
        return self._name

    def __repr__(self) -> str:
        return f"<{self._name} object at {id(self):#x}>"

    @property
    def num_outputs(self) -> int:
        return len(self._out_meta)

    def register_hook(self, hook) -> RemovableHandle:
        """``hook(grad_inputs, grad_outputs)`` after this Node ran; may return new grad_inputs."""
        if self._hooks is None:
            self._hooks = []
        self._array_backward = None  # hooks see Tensors (Note [Array backward])
        self._hooks.append(hook)
        return RemovableHandle(self._hooks, hook)

    def register_prehook(self, hook) -> RemovableHandle:
        """``hook(grad_outputs)`` before this Node runs; may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = []
        self._array_backward = None  # hooks see Tensors (Note [Array backward])
        self._pre_hooks.append(hook)
        return RemovableHandle(self._pre_hooks, hook)

    # -- used by the engine ---------------------------------------------------------------

    def check_saved_versions(self) -> None:
        """Raise if a tensor this Node saved was modified in place since (names the line)."""
        for counter, version, shape in self._saved_versions:
            if counter.value != version:
                where = ""
                if counter.where is not None:
                    file, line, op = counter.where
                    where = f"; it was last modified in place by {op} at {file}:{line}"
                raise RuntimeError(
                    f"one of the tensors needed for gradient computation has been modified by "
                    f"an in-place operation: {self._name} saved a tensor of shape "
                    f"{list(shape)} at version {version}, and it is now at version "
                    f"{counter.value}{where}. Use an out-of-place op (or .clone()) there."
                )

    def apply(self, grads: list, create_graph: bool):
        """Run the backward closure on ``grads`` (one per output); return the input grads."""
        fn = self._backward
        if fn is None:
            raise RuntimeError(
                f"Trying to backward through the graph a second time ({self._name} has "
                "already freed its saved arrays). Pass retain_graph=True to the first "
                "backward() or autograd.grad() call if you need to backward through "
                "the graph again."
            )
        if self._saved_versions is not None:
            self.check_saved_versions()
        if len(grads) != 1:
            grads = [_zeros_for(m) if g is None else g for g, m in zip(grads, self._out_meta)]
        if self._saved_output is not None:
            out = Tensor._wrap(self._saved_output)
            if create_graph:
                out.grad_fn = self
                out._rg = True
            return fn(*grads, out)
        return fn(*grads)

    def release(self) -> None:
        """Free the closure and everything it captured (called after backward).

        Note [Backward twice]
        As in PyTorch, only what a Node saved is freed: a Node that saved no tensor
        (``saved``/``save_output`` in make_result: an add, a cast, a view, a product
        with a Python number) keeps its closure, which holds only shapes and scalars,
        so a second backward through it works without ``retain_graph``. A Node that
        saved something raises in ``apply`` when a second pass reaches it.
        """
        if self._saved_versions is None and self._saved_output is None:
            return
        self._backward = self._array_backward = None
        self._saved_output = None
        self._saved_versions = None
        self._released = True

    def run_tensor_hooks(self, grads: list) -> list:
        """Apply hooks registered on this Node's output tensors, then retain_grad."""
        hooks = self._tensor_hooks
        if hooks:
            for nr, fns in hooks.items():
                for fn in list(fns):
                    new = fn(grads[nr])
                    if new is None:
                        continue
                    if grads[nr] is None:  # an output that got no gradient: torch passes None
                        raise RuntimeError("can't replace a None gradient with a non-None value")
                    grads[nr] = _hook_result(new, grads[nr], fn, f"output {nr} of {self._name}")
        refs = self._retain_refs
        if refs:
            for nr, ref in refs.items():
                t = ref()
                if t is not None and grads[nr] is not None:
                    g = grads[nr]
                    if t.grad is None:
                        t.grad = g if STATE.enabled else Tensor._wrap(g._data.copy())
                    else:
                        t.grad = t.grad + g
        return grads


class AccumulateGrad(Node):
    """The Node of a leaf that requires grad: sums arriving gradients into ``leaf.grad``.

    Note [AccumulateGrad lifetime]
    The leaf holds this Node only through a weak reference (``leaf._accumulator``);
    the graph holds it strongly through edges. So it lives exactly as long as some
    graph uses the leaf, and every graph built meanwhile shares the same one.
    """

    __slots__ = ("variable",)

    def __init__(self, *args, **kwargs):
        # As torch: only the engine makes one (accumulator_of); the engine also runs it
        # itself (engine._run_backward's leaf branch), so it has no apply of its own.
        raise RuntimeError("Cannot construct")

    def release(self) -> None:
        pass  # nothing saved; the same Node serves later graphs

    def run_tensor_hooks(self, grads: list) -> list:
        hooks = self.variable._hooks
        if hooks:
            for fn in list(hooks):
                new = fn(grads[0])
                if new is not None:
                    grads[0] = _hook_result(new, grads[0], fn, "a leaf tensor")
        return grads


def _accumulate_marker(*_):  # pragma: no cover - the engine accumulates a leaf's gradient
    raise AssertionError("AccumulateGrad is run by the engine (engine._run_backward)")


# Note [Concurrent accumulation]
# Threads may run backward at once into a shared leaf (as in PyTorch, where each
# AccumulateGrad takes a lock). The read-add-store of ``.grad`` is made atomic by
# one of 64 striped locks chosen by the leaf's id: per-leaf locking without a lock
# object per tensor or a race to create one lazily; an uncontended acquire costs
# about 0.1 us per leaf per backward. Post-accumulate hooks run outside the lock.
_ACCUMULATE_LOCKS = [threading.Lock() for _ in range(64)]


def accumulate_into(leaf: Tensor, g: Tensor, create_graph: bool) -> None:
    """Add ``g`` into ``leaf.grad``, then run the leaf's post-accumulate hooks.

    Note [Gradient ownership]
    The first gradient stored into ``.grad`` must not alias an array that another
    branch or the user may still hold (``a + b`` hands the same ``g`` to both), so
    it is copied unless the engine made it (``owned``). Later gradients are added
    in place into the array we now own; under create_graph they are added out of
    place so the sum is recorded.
    """
    with _ACCUMULATE_LOCKS[(id(leaf) >> 4) & 63]:  # Note [Concurrent accumulation]
        current = leaf._grad
        if create_graph:
            leaf._grad = g if current is None else current + g
        elif current is None:
            leaf._grad = Tensor._wrap(g._data.copy())
        elif current.grad_fn is None and current._data.flags.writeable:
            current._data += g._data
            current._vc.value += 1
        else:
            leaf._grad = Tensor._wrap(current._data + g._data)
    hooks = leaf._post_hooks
    if hooks:
        for fn in list(hooks):
            fn(leaf)


# Note [Fresh gradients]
# A backward rule that computes a gradient into a new array that nothing else references
# (a GEMM's result, a reduction's) may hand it over with ``fresh_grad``: the running
# backward then owns it as it owns the sums it makes itself (Note [Gradient ownership]),
# so a leaf's empty ``.grad`` takes it without a copy and later gradients arriving by
# other paths are added into it in place (PyTorch's AccumulateGrad steals such a
# gradient too). Outside a backward (a rule called directly) it is a plain Tensor. An
# array rule (Note [Array backward] in engine.py) hands over such an array with
# ``fresh_array``: the engine keeps arrays and Tensors alike in ``owned``, by id.
class _Owned(threading.local):
    current = None  # the running backward's ``owned`` dict (engine.run_backward)


OWNED = _Owned()


def fresh_grad(array) -> Tensor:
    """``array`` (new, referenced by nothing else) as a gradient the engine may keep
    without copying (Note [Fresh gradients])."""
    t = Tensor._wrap(array)
    owned = OWNED.current
    if owned is not None:
        owned[id(t)] = t
    return t


def fresh_array(array):
    """``array`` (new, writable, referenced by nothing else) as an array rule's gradient
    the engine may keep without copying (Note [Fresh gradients], Note [Array backward])."""
    owned = OWNED.current
    if owned is not None and array.__class__ is _ndarray:  # not a NumPy scalar (0-d ufunc result)
        owned[id(array)] = array
    return array


def arrays_of(grads) -> tuple:
    """A Tensor rule's gradients as arrays: an array rule hands the cases it does not
    cover (a cast, a broadcast operand, a promoted vector) to its Tensor rule, which then
    computes them without recording (Note [Array backward] in autograd/engine.py)."""
    if grads.__class__ is not tuple:
        grads = (grads,) if grads is None or isinstance(grads, Tensor) else tuple(grads)
    owned = OWNED.current
    out = []
    for g in grads:
        if g is None:
            out.append(None)
            continue
        data = g._data
        if (
            owned
            and owned.pop(id(g), None) is not None
            and [h is g for h in grads].count(True) == 1
        ):
            fresh_array(data)  # a fresh Tensor's array is fresh once the Tensor is dropped
        out.append(data)
    return tuple(out)


def _hook_result(new, g: Tensor, fn, where: str) -> Tensor:
    """The gradient a tensor hook returned, checked as PyTorch does: same size and dtype."""
    name = getattr(fn, "__name__", None) or repr(fn)
    if not isinstance(new, Tensor):
        raise TypeError(
            f"hook '{name}' on {where} returned {type(new).__name__}; expected a Tensor or None"
        )
    if new._data.shape != g._data.shape:
        raise RuntimeError(
            f"hook '{name}' on {where} has changed the size of value (was "
            f"{tuple(g._data.shape)} got {tuple(new._data.shape)})"
        )
    if new._data.dtype != g._data.dtype:
        raise RuntimeError(
            f"hook '{name}' on {where} has changed the type of value (was {g._data.dtype} "
            f"got {new._data.dtype})"
        )
    return new


def _zeros_for(meta) -> Tensor:
    import numpy as np  # noqa: PLC0415

    shape, dtype = meta
    return Tensor._wrap(np.zeros(batched_shape(shape), dtype))


def accumulator_of(leaf: Tensor) -> AccumulateGrad:
    """The AccumulateGrad Node of a leaf, made on first use (Note [AccumulateGrad lifetime])."""
    ref = leaf._accumulator
    node = ref() if ref is not None else None
    if node is None:
        # Node.__init__ inlined (keep in step with it): a leaf's Node dies with each freed
        # graph, so every training step makes one per parameter.
        node = _new_node(AccumulateGrad)
        node._backward = _accumulate_marker
        node._array_backward = None
        node.next_functions = ()
        node._name = "AccumulateGrad"
        node._out_meta = ((leaf.shape, leaf.dtype),)
        node._saved_versions = None
        node._saved_output = None
        node._pre_hooks = None
        node._hooks = None
        node._tensor_hooks = None
        node._retain_refs = None
        node._released = False
        node._view_version = None
        node.metadata = None
        node.variable = leaf
        leaf._accumulator = _weakref(node)
    return node


def edge_of(t: Tensor):
    """The edge through which gradient flows into ``t``: ``(node, output_nr)``."""
    fn = t.grad_fn
    if fn is None:
        return (accumulator_of(t), 0)
    view = fn._view_version
    if view is not None and view[0].value != view[1]:
        fn = _refresh_view(t, fn, view)
    return (fn, t._output_nr)


def edges_to(inputs):
    """One edge per input (``(node, output_nr)``, or None for an input that needs no
    gradient); None when no input requires grad, so nothing needs recording."""
    edges = []
    needed = False
    for t in inputs:
        if t is not None and t._rg:
            needed = True
            fn = t.grad_fn
            if fn is None:
                edges.append((accumulator_of(t), 0))
            else:
                view = fn._view_version
                if view is not None and view[0].value != view[1]:
                    fn = _refresh_view(t, fn, view)
                edges.append((fn, t._output_nr))
        else:
            edges.append(None)
    return tuple(edges) if needed else None


def mark_view(node, base: Tensor) -> None:
    """Record that ``node``'s outputs are views of ``base`` (Note [Views and in-place ops]):
    once ``base`` changes in place, they are recorded again when next used."""
    counter = base._vc
    node._view_version = (counter, counter.value)


# Set by ops/inplace.py: ``(view, root) -> node`` records ``view`` afresh as the elements
# of ``root`` it shares memory with, or returns None when it can't (autograd can't
# import ops, which sit above it).
VIEW_REFRESH: list = [None]


def _refresh_view(t: Tensor, node, view):
    """A view whose base changed in place since it was taken: record it again from the
    root base it shares memory with (``t._base``; PyTorch regenerates the view's grad_fn
    the same way), or raise when that is impossible (Note [Views and in-place ops])."""
    root = t._base
    refresh = VIEW_REFRESH[0]
    fresh = None if root is None or refresh is None else refresh(t, root)
    if fresh is None:
        raise _stale_view_error(node, view)
    t.grad_fn, t._output_nr = fresh, 0
    return fresh


def _stale_view_error(node, view) -> RuntimeError:
    counter, version = view
    where = ""
    if counter.where is not None:
        file, line, op = counter.where
        where = f" by {op} at {file}:{line}"
    return RuntimeError(
        f"this tensor is a view ({node.name()}) taken when its base was at version "
        f"{version}; the base has since been modified in place{where} (now at version "
        f"{counter.value}), so the view's recorded graph no longer describes its values. "
        "Take the view again after the in-place change (or modify a .clone())."
    )


# Note [Complex autograd guard]
# Backward rules are written for real numbers; for complex tensors most would give a silent
# wrong gradient (PyTorch's convention, for a real loss L of z = x + iy, is z.grad = dL/dx +
# i dL/dy, so a holomorphic f needs grad_in = grad_out * conj(f'(z))). So a Node recorded
# with a complex output, or (once a complex tensor has required grad: ``_complex_live``) a
# complex input that requires grad, is handed to COMPLEX_GUARD[0](name, inputs, backward,
# dtype), set by ops/complex_guard.py. It returns the backward to record: the rule itself
# for the Nodes whose rule holds for complex tensors, conj ∘ rule ∘ conj for holomorphic
# ones, and raises NotImplementedError naming the op for every other Node. Real-only
# programs pay one dtype-kind test per recorded Node.
_complex_live = False
COMPLEX_GUARD: list = [None]
_F32, _F64 = _np.dtype("float32"), _np.dtype("float64")  # builtin dtypes are singletons


def _set_complex_live() -> None:
    global _complex_live
    _complex_live = True


_tensor_module.COMPLEX_GRAD_HOOK[0] = _set_complex_live


def make_result(
    data, inputs, backward, name, saved=None, save_output=False, view_of=None, array_backward=None
):
    """The funnel every differentiable op goes through.

    Wraps ``data`` in a Tensor. If grad mode is on and some input requires grad,
    records a Node named ``name`` whose closure ``backward(g)`` (or ``backward(g,
    out)`` with ``save_output``) returns one gradient per entry of ``inputs``.

    Args:
        data: the op's result array.
        inputs: the op's inputs, Tensors or None (for Python scalars/constants).
        backward: the gradient rule, written in tapegrad ops.
        name: the Node's name, ``'<Op>Backward'``.
        saved: input Tensors the closure reads; their versions are checked before it runs.
        save_output: the closure reads the result; it receives it as a second argument
            (rebuilt from the array, so the Node holds no reference to the result Tensor).
        view_of: an input whose memory the result may share; they share a version counter.
        array_backward: optionally, the same rule on arrays, for first-order backward
            passes (Note [Array backward] in autograd/engine.py).
    """
    if data.__class__ is _ndarray and _RETRACE[0] is None and _INIT_MARK[0] is None:
        # Tensor._wrap inlined (keep in step with it): the result of every op. Not while
        # some thread is in inference_mode: Tensor._wrap then marks inference tensors.
        out = _new_node(Tensor)
        out._data = data
        out._grad = None
        out.grad_fn = None
        out._rg = False
        out._output_nr = 0
        out._vc_ = None
        out._accumulator = None
        out._hooks = None
        out._post_hooks = None
        out._retains_grad = False
        out._base = None
        out._size = None
    else:
        out = Tensor._wrap(data)
    if view_of is not None:
        out._vc = view_of._vc
        out._base = view_of if view_of._base is None else view_of._base
    if not STATE.enabled:
        return out
    # Edges inlined for one and two inputs (edges_to for more): the hot path of every op.
    n = len(inputs)
    if n == 1:
        t = inputs[0]
        if t is None or not t._rg:
            return out
        fn = t.grad_fn
        if fn is None:
            edges = ((accumulator_of(t), 0),)
        else:
            view = fn._view_version
            if view is not None and view[0].value != view[1]:
                fn = _refresh_view(t, fn, view)
            edges = ((fn, t._output_nr),)
    elif n == 2:
        a, b = inputs
        ea = eb = None
        if a is not None and a._rg:
            fn = a.grad_fn
            if fn is None:
                ea = (accumulator_of(a), 0)
            else:
                view = fn._view_version
                if view is not None and view[0].value != view[1]:
                    fn = _refresh_view(a, fn, view)
                ea = (fn, a._output_nr)
        if b is not None and b._rg:
            fn = b.grad_fn
            if fn is None:
                eb = (accumulator_of(b), 0)
            else:
                view = fn._view_version
                if view is not None and view[0].value != view[1]:
                    fn = _refresh_view(b, fn, view)
                eb = (fn, b._output_nr)
        elif ea is None:
            return out
        edges = (ea, eb)
    else:
        edges = edges_to(inputs)
        if edges is None:
            return out
    data = out._data
    dtype = data.dtype
    # Note [Complex autograd guard]; float32/64 identity tests first: dtype.kind costs more
    if _complex_live or (dtype is not _F32 and dtype is not _F64 and dtype.kind == "c"):
        guarded = COMPLEX_GUARD[0](name, inputs, backward, dtype)
        if guarded is not backward:  # conj ∘ rule ∘ conj: the array rule no longer holds
            backward, array_backward = guarded, None
    # Node.__init__ inlined (keep in step with it): one fewer call per recorded op.
    node = _new_node(Node)
    node._backward = backward
    node._array_backward = array_backward
    node.next_functions = edges
    node._name = name
    node._out_meta = ((data.shape, dtype),)
    node._saved_output = None
    node._pre_hooks = None
    node._hooks = None
    node._tensor_hooks = None
    node._retain_refs = None
    node._released = False
    node._view_version = None
    node.metadata = None
    versions = None
    if saved:
        versions = tuple([_version_record(t) for t in saved])
    if save_output:
        node._saved_output = data
        counter = out._vc_  # set when the result is a view; else made here
        if counter is None:  # VersionCounter() inlined (keep in step with its __init__)
            counter = out._vc_ = _new_node(VersionCounter)
            counter.value = 0
            counter.where = None
        record = (counter, counter.value, data.shape)
        versions = (record,) if versions is None else versions + (record,)
    node._saved_versions = versions
    if ANOMALY["enabled"]:
        ANOMALY["record"](node)
    out.grad_fn = node
    out._rg = True
    if FORWARD[0] is not None:
        FORWARD[0]((out,), inputs, node)
    return out


_new_node = object.__new__
_weakref = weakref.ref
_ndarray = _np.ndarray


def keeps_arrays(out: Tensor) -> Tensor:
    """Mark the Node that made ``out`` as holding arrays its backward needs (index arrays,
    masks) though it saved no Tensor, so backward frees them and a second pass raises,
    as PyTorch does for the index tensors it saves (Note [Backward twice])."""
    node = out.grad_fn
    if node is not None and node._saved_versions is None:
        node._saved_versions = ()
    return out


def _version_record(t: Tensor):
    """What a Node keeps to detect later in-place changes of a tensor it saved."""
    counter = t._vc_
    if counter is None:  # Tensor._vc inlined: made on first use
        counter = t._vc_ = VersionCounter()
    return (counter, counter.value, t._data.shape)


def make_results(datas, inputs, backward, name, saved=None, node_type=None, array_backward=None):
    """Like :func:`make_result` for an op with several outputs.

    ``backward(*grads)`` receives one gradient per output; outputs that got no
    gradient are passed as zeros. Returns a tuple of Tensors. ``node_type``: a
    subclass of Node to record (autograd.Function's FunctionNode). ``array_backward``:
    the same rule on arrays, taking one array per output (Note [Array backward]).
    """
    outs = tuple(Tensor._wrap(d) for d in datas)
    if not STATE.enabled:
        return outs
    edges = edges_to(inputs)
    if edges is None:
        return outs
    meta = tuple((o._data.shape, o._data.dtype) for o in outs)
    if node_type is None:  # Note [Complex autograd guard]
        cx = None
        for m in meta:
            if m[1].kind == "c":
                cx = m[1]
                break
        if cx is not None or (_complex_live and meta):
            guarded = COMPLEX_GUARD[0](name, inputs, backward, cx or meta[0][1])
            if guarded is not backward:  # conj ∘ rule ∘ conj: the array rule no longer holds
                backward, array_backward = guarded, None
    node = (node_type or Node)(backward, edges, name, meta)
    if node_type is None:
        node._array_backward = array_backward
    if saved:
        node._saved_versions = tuple(_version_record(t) for t in saved)
    if ANOMALY["enabled"]:
        ANOMALY["record"](node)
    for nr, o in enumerate(outs):
        if o._data.dtype.kind in "fcV":  # V: bfloat16 (the one void dtype a Tensor holds)
            o.grad_fn = node
            o._rg = True
            o._output_nr = nr
    if FORWARD[0] is not None:
        FORWARD[0](outs, inputs, node)
    return outs


def sum_to(g: Tensor, shape: tuple) -> Tensor:
    """Undo broadcasting: sum ``g`` over the axes along which ``shape`` was broadcast.

    The one helper every op uses for a broadcast operand's gradient. Inside a batched
    backward the batch prefix is kept (Note [Batched gradients]).
    """
    prefix = BATCH.prefix
    full = prefix + tuple(shape) if prefix else shape
    gshape = g._data.shape
    if gshape == full:
        return g
    p = len(prefix)
    lead = len(gshape) - len(full)  # broadcast axes added in front, after the batch prefix
    axes = tuple(range(p, p + lead)) + tuple(
        p + lead + i for i, n in enumerate(shape) if n == 1 and gshape[p + lead + i] != 1
    )
    if axes:
        g = g.sum(dim=axes, keepdim=True)
    if g._data.shape != full:
        g = g.reshape(full)
    return g


def sum_to_array(g, shape: tuple):
    """:func:`sum_to` on an array rule's gradient array: the same sums (``np.sum`` over
    the same axes, as ``Tensor.sum`` calls it), never with a batch prefix (array rules
    do not run in batched passes: Note [Array backward] in autograd/engine.py)."""
    gshape = g.shape
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1
    )
    if axes:
        g = _np.sum(g, axis=axes, keepdims=True)
    if g.shape != shape:
        g = g.reshape(shape)
    return g


# -- hooks on tensors ---------------------------------------------------------------------


def register_tensor_hook(t: Tensor, hook) -> RemovableHandle:
    if not t._rg:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t.grad_fn is None:
        if t._hooks is None:
            t._hooks = []
        t._hooks.append(hook)
        return RemovableHandle(t._hooks, hook)
    node = t.grad_fn
    node._array_backward = None  # hooks see Tensors (Note [Array backward])
    if node._tensor_hooks is None:
        node._tensor_hooks = {}
    fns = node._tensor_hooks.setdefault(t._output_nr, [])
    fns.append(hook)
    return RemovableHandle(fns, hook)


def register_post_accumulate_hook(t: Tensor, hook) -> RemovableHandle:
    if t.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks can only be registered on leaf tensors")
    if not t._rg:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t._post_hooks is None:
        t._post_hooks = []
    t._post_hooks.append(hook)
    return RemovableHandle(t._post_hooks, hook)


def retain_grad(t: Tensor) -> None:
    if not t._rg:
        raise RuntimeError("can't retain_grad on a tensor that has requires_grad=False")
    if t.grad_fn is None or t._retains_grad:
        return  # leaves always keep their gradient
    node = t.grad_fn
    node._array_backward = None  # retain_grad stores a Tensor (Note [Array backward])
    if node._retain_refs is None:
        node._retain_refs = {}
    node._retain_refs[t._output_nr] = weakref.ref(t)
    t._retains_grad = True


def iter_graph(roots):
    """Yield each Node reachable from ``roots`` (Tensors or Nodes) once, iteratively."""
    stack = []
    for r in roots:
        node = r.grad_fn if isinstance(r, Tensor) else r
        if node is not None:
            stack.append(node)
    seen = set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        yield node
        for edge in node.next_functions:
            if edge is not None and edge[0] not in seen:
                stack.append(edge[0])


# Measuring what a graph holds lives in memory.py; re-exported here, where users look.
from .memory import saved_arrays, saved_buffers, saved_bytes  # noqa: E402

# torch.autograd.graph's saved-tensor hooks (Note [Saved-tensor hooks]).
from .saved_hooks import (  # noqa: E402
    disable_saved_tensors_hooks,
    increment_version,
    save_on_cpu,
    saved_tensors_hooks,
)
