"""The backward engine: dependency counting, a ready stack, accumulation, release.

``backward`` and ``grad`` share :func:`run_backward`:

1. From the roots, count the edges into every reachable Node.
2. Pop a Node whose count reached zero, run its hooks and backward closure on
   the gradient summed from every path, check what it returned, hand each
   input gradient to the Node behind that input, and release the Node unless
   ``retain_graph``. A Node that no gradient reached is skipped, but still
   releases its children's counts.

``backward`` runs AccumulateGrad Nodes (into ``.grad``); ``grad`` instead
captures the gradient arriving at each requested input and never touches ``.grad``.
"""

from __future__ import annotations

import threading

import numpy as np

from .. import _fpquiet
from ..grad_mode import STATE
from ..tensor import RETRACE, Tensor
from . import graph
from .graph import _ACCUMULATE_LOCKS as _LOCKS
from .graph import AccumulateGrad, Node, accumulate_into

__all__ = ["backward", "grad", "run_backward", "queue_callback"]


class _Callbacks(threading.local):
    pending = None  # a list while a backward() call runs, else None


_CALLBACKS = _Callbacks()

# Note [Array backward]
# Backward rules are written in tapegrad ops so that create_graph=True records them. In a
# first-order pass nothing records, and on small tensors the Tensors the rules take and
# make cost more than their ufuncs: a wrap for the saved output, one per gradient, the op
# dispatch of each product. So a Node may carry, besides its rule, an ``array_backward``
# (make_result's argument): the same rule on raw arrays, taking ``(g)`` or ``(g, out)``
# as arrays and returning one array (or None) per input, computed with the same ufuncs
# in the same order as the Tensor rule, so the gradients are bit-identical (the op table's
# rows check it for every op that has one, float32 and float64: test_array_backward.py).
# The engine runs it when the pass records nothing and needs no Tensor at that Node:
#   * not create_graph, not anomaly mode (its checks take Tensors), no batch prefix
#     (Note [Batched gradients]: the Tensor rules keep it), not while the graph cache
#     records (it traces the Tensor path, as before), and ARRAY_RULES[0] (tests);
#   * the Node has no hooks and no retain_grad: registering one clears its
#     ``_array_backward`` for good (hooks see Tensors), and a Node whose output
#     grad() captures runs its Tensor rule (the captured gradient is a Tensor);
#   * a complex Node whose rule the complex guard wraps drops it (graph.make_result).
# Gradients then travel between Nodes as arrays: buffers hold arrays or Tensors, sums of
# several arrivals are Tensors as before (Note [Gradient ownership]), and every place that
# hands a gradient to Tensor code (Tensor rules, hooks, capture, ``.grad``) wraps it
# first, so users only ever see Tensors. Release after the pass frees both rules.
# Ops with one: the arithmetic and elementwise functions a training step uses (add, sub,
# mul, div, neg, pow by a number, exp, log, sqrt, rsqrt, tanh, sigmoid, the op-table rows
# marked ``arrays``: Note [Rules in operators] in ops/elementwise.py), matmul and so mm,
# bmm, addmm, mv, nn's linear, the views (reshape and view, squeeze, unsqueeze, flatten,
# transpose and t, permute, expand, basic indexing), sum, mean, softmax, log_softmax,
# where, masked_fill, advanced indexing and embedding, cat, stack and split (a Node of
# several outputs: its array rule takes one array per output, zeros where none arrived,
# as Node.apply passes the Tensor rule). Losses and dropout are compositions of these.
# An array rule may hand an uncommon case (a cast, a promoted vector, a broadcast
# operand) to its Tensor rule (``graph.arrays_of``), and a new array it made to the
# engine with ``graph.fresh_array`` (Note [Fresh gradients]).
ARRAY_RULES = [True]  # False: every pass runs the Tensor rules (tests compare both)


def queue_callback(fn) -> None:
    """Run ``fn()`` once the running ``backward()`` has finished (torch's
    ``Variable._execution_engine.queue_callback``); DistributedDataParallel waits for its
    last gradient all-reduce there. Only valid from hooks run by ``backward()``."""
    pending = _CALLBACKS.pending
    if pending is None:
        raise RuntimeError("queue_callback: no backward() is running on this thread")
    pending.append(fn)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves they depend on.

    Args:
        tensors: a Tensor or a sequence of Tensors (the roots).
        grad_tensors: d(loss)/d(root) for each root; None for one-element roots.
        retain_graph: keep the graph for another backward (default: ``create_graph``).
        create_graph: record the backward pass so its results can be differentiated.
        inputs: if given, accumulate only into these tensors (leaves or not).
    """
    roots = _as_tuple(tensors)
    grads = _root_grads(roots, grad_tensors, create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    targets = None
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("backward: 'inputs' was given but is empty")
        targets = [_target_of(t, i) for i, t in enumerate(inputs)]
    outer = _CALLBACKS.pending
    pending = _CALLBACKS.pending = []
    try:
        run_backward(roots, grads, retain_graph, create_graph, targets, accumulate=True)
    finally:
        _CALLBACKS.pending = outer
    for fn in pending:
        fn()


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    allow_unused=None,
    is_grads_batched=False,
    materialize_grads=False,
):
    """Return d(outputs)/d(inputs) without touching any ``.grad``.

    Args:
        outputs: Tensor or sequence of Tensors to differentiate.
        inputs: Tensor or sequence of Tensors to differentiate with respect to.
        grad_outputs: d(loss)/d(output) per output (None entries for one-element outputs).
        retain_graph: keep the graph (default: ``create_graph``).
        create_graph: record the backward pass, for higher derivatives.
        allow_unused: return None (or zeros with ``materialize_grads``) for an input
            the outputs do not depend on, instead of raising.
        is_grads_batched: the first dimension of every ``grad_outputs`` entry is a
            batch of B gradients; returns B vector-Jacobian products stacked along a
            new first dimension, computed in one batched pass where every op allows
            it (Note [Batched gradients] in graph.py), else one pass per row.
        materialize_grads: zeros instead of None for unused inputs.

    Returns:
        A tuple with one gradient (or None) per input.
    """
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("grad: 'inputs' must contain at least one tensor")
    if materialize_grads:
        if allow_unused is False:
            raise ValueError(
                "grad: expected allow_unused to be True or not passed when materialize_grads=True"
            )
        allow_unused = True
    if is_grads_batched:
        from .batched import batched_grad  # noqa: PLC0415 - batched sits above the engine

        return batched_grad(
            outputs,
            inputs,
            grad_outputs,
            retain_graph,
            create_graph,
            allow_unused,
            materialize_grads,
        )
    grads = _root_grads(outputs, grad_outputs, create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    targets = [_target_of(t, i) for i, t in enumerate(inputs)]
    captured = run_backward(outputs, grads, retain_graph, create_graph, targets, accumulate=False)
    return fill_unused(inputs, captured, allow_unused, materialize_grads)


def fill_unused(inputs, grads, allow_unused, materialize_grads, batch=()):
    """Check the gradients ``grad`` returns: an input that got none is an error unless
    ``allow_unused`` (then None, or zeros of ``batch + shape`` with ``materialize_grads``)."""
    result = []
    for i, (t, g) in enumerate(zip(inputs, grads)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"grad: input {i} (shape {list(t.shape)}) was not used to compute the "
                    "outputs; pass allow_unused=True if this is expected"
                )
            if materialize_grads:
                g = Tensor._wrap(np.zeros(batch + t._data.shape, t._data.dtype))
        result.append(g)
    return tuple(result)


def _as_tuple(x) -> tuple:
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _root_grads(roots, grad_tensors, create_graph):
    if grad_tensors is None:
        grad_tensors = (None,) * len(roots)
    elif isinstance(grad_tensors, Tensor):
        grad_tensors = (grad_tensors,)
    else:
        grad_tensors = tuple(grad_tensors)
    if len(grad_tensors) != len(roots):
        raise RuntimeError(
            f"got {len(grad_tensors)} gradients for {len(roots)} tensors; give one per tensor"
        )
    grads = []
    for i, (root, g) in enumerate(zip(roots, grad_tensors)):
        if not isinstance(root, Tensor):
            raise TypeError(f"backward: expected Tensors, got {type(root).__name__}")
        if not root._rg:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn: "
                "nothing was recorded for it (was it computed under no_grad, or from tensors "
                "without requires_grad=True?)"
            )
        if g is None:
            if root._data.size != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs; this output has "
                    f"shape {list(root.shape)}: pass gradient= (a tensor of that shape)"
                )
            if root._data.dtype.kind == "c":  # as PyTorch: a complex loss has no gradient
                raise RuntimeError(
                    "grad can be implicitly created only for real scalar outputs; this output "
                    f"is {root._data.dtype}: take .real, .abs() or pass gradient="
                )
            g = Tensor._wrap(np.ones(root._data.shape, root._data.dtype))
        else:
            if not isinstance(g, Tensor):
                g = Tensor._wrap(np.asarray(g, dtype=root._data.dtype))
            if g._data.shape != root._data.shape:
                raise RuntimeError(
                    f"mismatch in shape: gradient has shape {list(g.shape)} but output "
                    f"{i} has shape {list(root.shape)}"
                )
            if not create_graph and g._rg:
                g = g.detach()
            if g._data.dtype != root._data.dtype:
                # g.to records the cast when g requires grad, so that with create_graph the
                # double backward reaches a grad_output of another dtype (as in PyTorch).
                g = g.to(root.dtype)
        grads.append(g)
    return grads


def _target_of(t: Tensor, i: int):
    if not isinstance(t, Tensor):
        raise RuntimeError(f"inputs[{i}] is a {type(t).__name__}, expected a Tensor")
    if not t._rg:
        raise RuntimeError(f"inputs[{i}] (shape {list(t.shape)}) does not require grad")
    return (graph.edge_of(t), t)


def run_backward(roots, grads, retain_graph, create_graph, targets, accumulate):
    """The engine. ``targets``: None (every leaf) or ``[((node, nr), tensor), ...]``.

    Returns, when ``targets`` is given and ``accumulate`` is False, the gradient
    captured for each target (None where none arrived). Backward rules run with
    NumPy's floating-point warnings off (Note [No floating-point warnings]).
    """
    token = _fpquiet.enter()
    try:
        return _run_backward(roots, grads, retain_graph, create_graph, targets, accumulate)
    finally:
        _fpquiet.leave(token)


def _run_backward(roots, grads, retain_graph, create_graph, targets, accumulate):
    # Pass 1: count edges into every reachable Node.
    root_edges = [graph.edge_of(r) for r in roots]
    deps = {}
    order = []
    for node, _ in root_edges:
        if node not in deps:
            deps[node] = 0
            order.append(node)
    stack = list(order)
    while stack:
        node = stack.pop()
        for edge in node.next_functions:
            if edge is not None:
                child = edge[0]
                if child in deps:
                    deps[child] += 1
                else:
                    deps[child] = 1
                    stack.append(child)

    # Which Nodes must run. Without targets: all. With targets: only those on a
    # path to a target, and AccumulateGrad only for targets when accumulating.
    capture = None
    skip = None
    if targets is not None:
        capture = {}
        for i, (edge, _) in enumerate(targets):
            capture.setdefault(edge[0], []).append((edge[1], i))
        skip = _nodes_off_paths(deps, capture, accumulate)
    captured = [None] * len(targets) if targets is not None else None

    buffers = {}
    owned = {}  # id -> Tensor: sums the engine made (holding them keeps ids unique)
    for (node, nr), g in zip(root_edges, grads):
        _add_to_buffer(buffers, owned, node, nr, g, create_graph)

    ready = [n for n in order if deps[n] == 0]
    prev_enabled = STATE.enabled
    STATE.enabled = create_graph
    outer_owned = graph.OWNED.current
    graph.OWNED.current = owned  # rules add the fresh gradients they make (Note [Fresh gradients])
    check_nan = graph.ANOMALY["enabled"]
    prefix = graph.BATCH.prefix
    # Note [Array backward]: which passes may run Nodes' array rules.
    arrays = ARRAY_RULES[0] and not (create_graph or check_nan or prefix or RETRACE[0])
    try:
        while ready:
            node = ready.pop()
            buf = buffers.pop(node, None)
            if buf is None or (skip is not None and node in skip and node not in capture):
                _release_children(node, deps, ready)
                continue
            # A sum stays "owned" only while it sits in its buffer slot: once the
            # Node runs it may pass the same Tensor on to several inputs.
            sole_owner = bool(owned) and owned.pop(id(buf[0]), None) is not None
            if owned:
                for g in buf[1:]:
                    owned.pop(id(g), None)
            afn = node._array_backward if arrays else None
            if afn is not None and (capture is None or node not in capture):
                # The array path (Note [Array backward]): a Node of one output with no
                # hooks (registering one clears _array_backward), no recording.
                versions = node._saved_versions
                if versions is not None:
                    for counter, version, _ in versions:
                        if counter.value != version:
                            node.check_saved_versions()  # raises, naming the op
                saved = node._saved_output
                if len(buf) == 1:
                    g = buf[0]
                    if isinstance(g, Tensor):
                        g = g._data
                    in_grads = afn(g) if saved is None else afn(g, saved)
                else:  # several outputs (make_results): zeros for those that got none
                    g = _output_arrays(buf, node._out_meta)
                    in_grads = afn(*g)
                if not retain_graph and (versions is not None or saved is not None):
                    # Node.release inlined (Note [Backward twice])
                    node._backward = node._array_backward = None
                    node._saved_output = node._saved_versions = None
                    node._released = True
                edges = node.next_functions
                if len(in_grads) != len(edges):
                    raise RuntimeError(
                        f"{node.name()} returned {len(in_grads)} gradients but its op has "
                        f"{len(edges)} inputs; return one gradient (or None) per input"
                    )
                i = -1
                for edge, gi in zip(edges, in_grads):
                    i += 1
                    if edge is not None:
                        child, nr = edge
                        if gi is not None:
                            try:
                                shape, dtype = child._out_meta[nr]
                                bad = gi.shape != shape or gi.dtype != dtype
                            except AttributeError:
                                bad = True
                            if bad:
                                gi = _check_grad(node, child, nr, _as_tensor(gi), i, prefix)._data
                            cbuf = buffers.get(child)
                            if cbuf is None and nr == 0 and len(child._out_meta) == 1:
                                buffers[child] = [gi]
                            else:
                                _add_to_buffer(buffers, owned, child, nr, gi, False)
                        count = deps[child] - 1
                        deps[child] = count
                        if count == 0:
                            ready.append(child)
                del buf, in_grads, g
                continue
            if arrays:  # Tensor rules, hooks and .grad take Tensors: wrap the arrays
                for k, g in enumerate(buf):
                    if g is not None and not isinstance(g, Tensor):
                        buf[k] = Tensor._wrap(g)
            first = buf[0]
            # As PyTorch: hooks on the output tensors (then retain_grad) first, then
            # capture for grad(), then the Node's own pre-hooks.
            is_leaf = type(node) is AccumulateGrad
            if is_leaf:
                if node.variable._hooks:  # AccumulateGrad.run_tensor_hooks' own test
                    buf = node.run_tensor_hooks(buf)
            elif node._tensor_hooks is not None or node._retain_refs is not None:
                buf = node.run_tensor_hooks(buf)
            if capture is not None and node in capture:
                for nr, i in capture[node]:
                    g = buf[nr]
                    captured[i] = g
                    if accumulate and g is not None and not is_leaf:
                        accumulate_into(targets[i][1], g, create_graph)
                if node in skip:
                    _release_children(node, deps, ready)
                    continue
            if node._pre_hooks:
                for hook in list(node._pre_hooks):
                    new = hook(tuple(buf))
                    if new is not None:
                        buf = list(new)
            if is_leaf:
                g = buf[0]
                # A leaf hook may have kept the gradient it was shown: then copy it.
                if sole_owner and not create_graph and g is first and node.variable._hooks is None:
                    _store_owned(node.variable, g)
                else:
                    accumulate_into(node.variable, g, create_graph)
                continue
            # Node.apply inlined for plain Nodes with one output: the hot path.
            fn = node._backward
            if type(node) is Node and fn is not None and len(buf) == 1:
                versions = node._saved_versions
                if versions is not None:
                    for counter, version, _ in versions:
                        if counter.value != version:
                            node.check_saved_versions()  # raises, naming the op
                saved = node._saved_output
                if saved is None:
                    in_grads = fn(buf[0])
                else:
                    out = Tensor._wrap(saved)
                    if create_graph:
                        out.grad_fn = node
                        out._rg = True
                    in_grads = fn(buf[0], out)
            else:
                in_grads = node.apply(buf, create_graph)
            if type(in_grads) is not tuple:
                in_grads = _as_grad_tuple(node, in_grads)
            if node._hooks:
                for hook in list(node._hooks):
                    new = hook(in_grads, tuple(buf))
                    if new is not None:
                        in_grads = tuple(new)
            if check_nan:
                graph.ANOMALY["check"](node, in_grads, buf)
            if not retain_graph:
                if type(node) is Node:  # Node.release inlined (Note [Backward twice])
                    if node._saved_versions is not None or node._saved_output is not None:
                        node._backward = node._array_backward = None
                        node._saved_output = node._saved_versions = None
                        node._released = True
                else:
                    node.release()
            edges = node.next_functions
            if len(in_grads) != len(edges):
                raise RuntimeError(
                    f"{node.name()} returned {len(in_grads)} gradients but its op has "
                    f"{len(edges)} inputs; return one gradient (or None) per input"
                )
            i = -1
            for edge, gi in zip(edges, in_grads):
                i += 1
                if edge is not None:
                    child, nr = edge
                    if gi is not None:
                        # Inline shape/dtype check and first-arrival store: the hot path.
                        try:
                            data = gi._data
                            shape, dtype = child._out_meta[nr]
                            bad = data.shape != shape or data.dtype != dtype
                        except AttributeError:
                            bad = True
                        if bad:
                            gi = _check_grad(node, child, nr, gi, i, prefix)
                        cbuf = buffers.get(child)
                        if cbuf is None and nr == 0 and len(child._out_meta) == 1:
                            buffers[child] = [gi]
                        else:
                            _add_to_buffer(buffers, owned, child, nr, gi, create_graph)
                    count = deps[child] - 1
                    deps[child] = count
                    if count == 0:
                        ready.append(child)
            del buf, in_grads
    finally:
        STATE.enabled = prev_enabled
        graph.OWNED.current = outer_owned
    return captured


def _output_arrays(buf, metas) -> list:
    """The arrays an array rule of several outputs takes: one per output, zeros for an
    output no gradient reached (as Node.apply passes the Tensor rule)."""
    return [
        np.zeros(m[0], m[1]) if g is None else g._data if isinstance(g, Tensor) else g
        for g, m in zip(buf, metas)
    ]


def _as_tensor(g):
    """``g`` as a Tensor (an array rule's result; anything else is left for the error)."""
    return g if isinstance(g, Tensor) or not hasattr(g, "dtype") else Tensor._wrap(g)


def _release_children(node, deps, ready):
    """Count down the children of a Node that did not run (no gradient reached it)."""
    for edge in node.next_functions:
        if edge is not None:
            child = edge[0]
            count = deps[child] - 1
            deps[child] = count
            if count == 0:
                ready.append(child)


def _nodes_off_paths(deps, capture, accumulate):
    """Nodes that need not run: no target lies beyond them. A target's own Node runs
    only if another target lies beyond it (its gradient is captured before it would
    run); a leaf target's AccumulateGrad runs only when accumulating into ``.grad``."""
    # The common case (grad with respect to every leaf the outputs reach, as the
    # transforms ask): every path from a Node ends at an AccumulateGrad, so when each of
    # them is a target, a target lies beyond every other Node and only the
    # AccumulateGrads need not run.
    for node in deps:
        if type(node) is AccumulateGrad:
            if node not in capture:
                break
        elif not any(node.next_functions):  # a Node with no inputs (never recorded)
            break
    else:
        return {n for n in deps if type(n) is AccumulateGrad} if not accumulate else set()
    # beyond: the proper ancestors of the targets (a target lies strictly beyond them),
    # found by walking parent links up from the targets.
    parents = {}
    for node in deps:
        for edge in node.next_functions:
            if edge is not None:
                up = parents.get(edge[0])
                if up is None:
                    parents[edge[0]] = [node]
                else:
                    up.append(node)
    beyond = set()
    stack = list(capture)
    while stack:
        for parent in parents.get(stack.pop(), ()):
            if parent not in beyond:
                beyond.add(parent)
                stack.append(parent)
    skip = set()
    for n in deps:
        if type(n) is AccumulateGrad:
            if not accumulate or n not in capture:
                skip.add(n)
        elif n not in beyond:
            skip.add(n)
    return skip


def _add_to_buffer(buffers, owned, node, nr, g, create_graph):
    """Sum gradients arriving by different paths (Note [Gradient ownership])."""
    buf = buffers.get(node)
    if buf is None:
        n = len(node._out_meta)
        buf = [None] * n if n != 1 else [None]
        buffers[node] = buf
    old = buf[nr]
    if old is None:
        buf[nr] = g
    elif create_graph:
        buf[nr] = old + g
    else:  # Tensors, or arrays from array rules (Note [Array backward])
        gd = g._data if isinstance(g, Tensor) else g
        if id(old) in owned:  # an engine-made sum, or a fresh gradient (Tensor or array)
            od = old._data if isinstance(old, Tensor) else old
            np.add(od, gd, out=od)
        else:
            new = Tensor._wrap((old._data if isinstance(old, Tensor) else old) + gd)
            owned[id(new)] = new
            buf[nr] = new


def _store_owned(leaf, g):
    """Store an engine-made sum into ``leaf.grad`` without copying when the slot is empty."""
    with _LOCKS[(id(leaf) >> 4) & 63]:  # the leaf's striped lock (Note [Concurrent accumulation])
        stored = leaf._grad is None
        if stored:
            leaf._grad = g
    if stored:
        hooks = leaf._post_hooks
        if hooks:
            for fn in list(hooks):
                fn(leaf)
    else:
        accumulate_into(leaf, g, False)


def _check_grad(node, child, nr, g, i, prefix):
    """Raise the error that describes how gradient ``g`` does not fit input ``i``; else
    return the gradient to pass on: ``g`` (it fits once the batch prefix of a batched pass
    is counted), or ``g`` rounded to bfloat16 (Note [bfloat16 gradients])."""
    if not isinstance(g, Tensor):
        raise TypeError(
            f"{node.name()} returned a {type(g).__name__} as the gradient of input {i}; "
            "expected a Tensor or None"
        )
    shape, dtype = child._out_meta[nr]
    if prefix:  # Note [Batched gradients]
        if g._data.shape != prefix + shape:
            raise graph.BatchingError(
                f"{node.name()} returned a gradient of shape {list(g._data.shape)} for input "
                f"{i} in a batched backward; expected batch prefix {list(prefix)} + "
                f"{list(shape)}"
            )
        shape = g._data.shape
    if g._data.shape != shape:
        raise RuntimeError(
            f"{node.name()} returned a gradient of shape {list(g._data.shape)} for input {i}, "
            f"which has shape {list(shape)}"
        )
    if g._data.dtype != dtype:
        if dtype.name == "bfloat16" and g._data.dtype.kind == "f":
            # Note [bfloat16 gradients]
            # NumPy has no bfloat16 arithmetic: tapegrad's bfloat16 ops compute in float32
            # and round their results, and many backward rules return that float32
            # gradient. torch computes bfloat16 backward in float32 opmath too and rounds
            # each op's gradient to bfloat16: the engine rounds it here, once per edge.
            return g.to(dtype)
        raise RuntimeError(
            f"{node.name()} returned a gradient of dtype {g._data.dtype} for input {i}, "
            f"which has dtype {dtype}"
        )
    return g


def _as_grad_tuple(node, value):
    if isinstance(value, list):
        return tuple(value)
    if value is None or isinstance(value, Tensor):
        return (value,)
    raise TypeError(
        f"{node.name()}'s backward returned {type(value).__name__}; expected a tuple of "
        "Tensors (or None), one per input"
    )
