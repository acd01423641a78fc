"""Many vector-Jacobian products at once: one batched backward, or one backward per row.

``vjp_rows`` computes, for B stacked upstream gradients ``v_b``, all the products
``v_bᵀ J`` in ONE backward pass whose gradients carry a leading batch dimension
(Note [Batched gradients] in graph.py). If some backward rule cannot run batched
the engine raises, and we fall back to B ordinary passes. A batched result is also
checked against one ordinary pass on a random combination ``Σ c_b v_b`` (linearity:
it must equal ``Σ c_b (v_bᵀ J)``), so a rule that silently mishandles the batch
prefix triggers the fallback instead of returning a wrong Jacobian.
"""

from __future__ import annotations

import numpy as np

from ..grad_mode import STATE
from ..tensor import Tensor
from . import engine, graph

__all__ = ["vjp_rows", "batched_grad", "stack_rows"]


def vjp_rows(outputs, inputs, rows, *, create_graph=False, vectorize=True):
    """``[Σ_o rows[o][b] · d outputs[o] / d inputs[i] for b in range(B)]`` per input.

    Args:
        outputs: tuple of Tensors (those that do not require grad contribute nothing).
        inputs: tuple of Tensors that require grad.
        rows: per output, a Tensor of shape ``(B,) + output.shape``.
        create_graph: record the computation (for higher derivatives).
        vectorize: try one batched pass first.

    Returns:
        A list with, per input, a Tensor of shape ``(B,) + input.shape``, or None if
        no output depends on that input. The graph is retained.
    """
    live = [(o, r) for o, r in zip(outputs, rows) if o._rg]
    if not live:
        return [None] * len(inputs)
    outs = tuple(o for o, _ in live)
    grads = [r if create_graph or not r._rg else r.detach() for _, r in live]
    B = grads[0]._data.shape[0]
    if vectorize and B > 1:
        result = _try_batched(outs, inputs, grads, B, create_graph)
        if result is not None:
            return result
    return _row_loop(outs, inputs, grads, B, create_graph)


def _try_batched(outs, inputs, grads, B, create_graph):
    targets = [engine._target_of(t, i) for i, t in enumerate(inputs)]
    saved = graph.BATCH.prefix
    graph.BATCH.prefix = (B,)
    try:
        captured = engine.run_backward(outs, grads, True, create_graph, targets, False)
    except Exception:  # noqa: BLE001 - any failure means "this graph cannot run batched"
        return None
    finally:
        graph.BATCH.prefix = saved
    if not _probe_agrees(outs, inputs, grads, B, captured):
        return None
    return captured


def _probe_agrees(outs, inputs, grads, B, captured) -> bool:
    """One ordinary backward on ``Σ c_b v_b`` must equal ``Σ c_b`` (batched row b)."""
    coef = np.random.default_rng(1234).standard_normal(B)
    with np.errstate(invalid="ignore", over="ignore"):  # inf in grad_outputs: no warning
        mixed = [
            Tensor._wrap(np.tensordot(coef, g._data, axes=1).astype(g._data.dtype)) for g in grads
        ]
    targets = [engine._target_of(t, i) for i, t in enumerate(inputs)]
    probe = engine.run_backward(outs, mixed, True, False, targets, False)
    # Rounding differs between the rows and their combination wherever the graph computes
    # in a narrower float than its ends (x.float().double()): judge at that precision.
    narrow = any(
        dtype.kind == "f" and dtype.itemsize <= 4
        for node in graph.iter_graph(outs)
        for _, dtype in node._out_meta
    )
    for got, ref in zip(captured, probe):
        if (got is None) != (ref is None):
            return False
        if got is None:
            continue
        if got._data.shape != (B,) + ref._data.shape:
            # A rule returned a gradient without the batch prefix that happened to have its
            # input's shape (B equal to one of its sizes), so the engine's check passed it.
            return False
        with np.errstate(invalid="ignore", over="ignore"):  # inf in the rows: no warning
            combined = np.tensordot(coef, got._data, axes=1)
        scale = max(
            float(np.max(np.abs(combined), initial=0.0)),
            float(np.max(np.abs(ref._data), initial=0.0)),
            1e-30,
        )
        rtol = 1e-3 if narrow or ref._data.dtype.itemsize <= 4 else 1e-8
        with np.errstate(invalid="ignore"):
            err = float(np.max(np.abs(combined - ref._data), initial=0.0))
        if not err <= rtol * scale and not (np.isnan(err) and _same_nans(combined, ref._data)):
            return False
    return True


def _same_nans(a, b) -> bool:
    return bool(np.array_equal(np.isfinite(a), np.isfinite(b)))


def _row_loop(outs, inputs, grads, B, create_graph):
    targets = [engine._target_of(t, i) for i, t in enumerate(inputs)]
    per_input = [[] for _ in inputs]
    for b in range(B):
        row = [_row(g, b, create_graph) for g in grads]
        captured = engine.run_backward(outs, row, True, create_graph, targets, False)
        for acc, g in zip(per_input, captured):
            acc.append(g)
    result = []
    for t, acc in zip(inputs, per_input):
        if all(g is None for g in acc):
            result.append(None)
            continue
        zeros = np.zeros(t._data.shape, t._data.dtype)
        result.append(stack_rows([Tensor._wrap(zeros) if g is None else g for g in acc]))
    return result


def _row(g: Tensor, b: int, create_graph: bool) -> Tensor:
    if create_graph and g._rg:
        pick = np.zeros(g._data.shape[0], g._data.dtype)
        pick[b] = 1.0
        flat = g.reshape(graph.batched_shape((g._data.shape[0], -1)))
        return (Tensor._wrap(pick) @ flat).reshape(graph.batched_shape(g._data.shape[1:]))
    return Tensor._wrap(g._data[b])


def stack_rows(rows) -> Tensor:
    """Stack equally shaped Tensors along a new first dimension, differentiably."""
    data = np.stack([r._data for r in rows])
    shape = rows[0]._data.shape
    n = len(rows)

    def backward(g):
        # g[b] for each row, written with matmul by one-hot rows (no indexing op needed).
        flat = g.reshape(graph.batched_shape((n, -1)))
        out = []
        for b in range(n):
            pick = np.zeros(n, g._data.dtype)
            pick[b] = 1.0
            out.append((Tensor._wrap(pick) @ flat).reshape(graph.batched_shape(shape)))
        return tuple(out)

    if not STATE.enabled or not any(r._rg for r in rows):
        return Tensor._wrap(data)
    return graph.make_result(data, tuple(rows), backward, "StackBackward")


def batched_grad(
    outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads
):
    """``autograd.grad(..., is_grads_batched=True)``: see :func:`vjp_rows`."""
    if grad_outputs is None:
        raise RuntimeError("grad: is_grads_batched=True needs grad_outputs")
    if isinstance(grad_outputs, Tensor):
        grad_outputs = (grad_outputs,)
    grad_outputs = tuple(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(
            f"got {len(grad_outputs)} gradients for {len(outputs)} tensors; give one per tensor"
        )
    rows = []
    for i, (o, g) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(o, Tensor) or not o._rg:
            raise RuntimeError(f"element {i} of tensors does not require grad")
        if isinstance(g, Tensor) and g._data.ndim == 0:  # torch's type (its grad[0] fails)
            raise IndexError(
                f"is_grads_batched: grad_outputs[{i}] is 0-d; it should be [B] + "
                f"{list(o.shape)}, its first dim the batch"
            )
        if not isinstance(g, Tensor) or g._data.shape[1:] != o._data.shape:
            shape = list(getattr(g, "shape", ()))
            raise RuntimeError(
                f"is_grads_batched: grad_outputs[{i}] of shape {shape} should be "
                f"[B] + {list(o.shape)}"
            )
        rows.append(g if g._data.dtype == o._data.dtype else g._cast(o._data.dtype))
    # vjp_rows checks the inputs (engine._target_of) before any backward; with no outputs
    # it checks none and rows[0] below fails with IndexError, as torch's batched grad does.
    result = vjp_rows(outputs, inputs, rows, create_graph=create_graph)
    B = rows[0]._data.shape[0]
    out = engine.fill_unused(inputs, result, allow_unused, materialize_grads, batch=(B,))
    if not (create_graph if retain_graph is None else retain_graph):
        for node in graph.iter_graph(outputs):
            node.release()
    return out
