"""What a recorded graph holds in memory: ``saved_bytes`` and the helpers behind it.

Used by the checkpoint planner (utils/checkpoint_plan.py), graph pictures (viz.py)
and tests; also reachable as ``tapegrad.autograd.graph.saved_bytes``.
"""

from __future__ import annotations

from ..tensor import Tensor
from .graph import AccumulateGrad, iter_graph

__all__ = ["saved_bytes", "saved_buffers", "saved_arrays", "base_of"]


def saved_bytes(tensors) -> int:
    """Bytes of the distinct arrays that the graph behind ``tensors`` holds for backward.

    Note [What saved_bytes counts]
    Every array a Node keeps alive is counted: its saved output and whatever its
    backward closure captured (Tensors, raw arrays, and those inside tuples, lists
    and dicts), each base buffer once however many views or Nodes share it.
    Parameters are not counted: the data of a leaf that requires grad (and of views
    sharing its version counter, such as ``w.T``) is owned by the model and
    outlives the graph, so freeing the graph would not free it. Leaves that do not
    require grad (an input batch, a dropout mask) are counted: the graph keeps
    them alive. A buffer that a parameter shares with an activation (a non-leaf
    Tensor or a saved output) counts. Nodes already released by a backward hold
    nothing, so calling this during backward measures what is still held.

    Args:
        tensors: a Tensor or a sequence of Tensors; the graphs behind them are
            measured together (a buffer they share counts once).

    Returns:
        The number of bytes, an int.

    >>> import tapegrad as tg
    >>> w = tg.ones(3, 3, requires_grad=True)
    >>> x = tg.ones(2, 3)
    >>> h = (x @ w).tanh()            # matmul keeps x (24 bytes), tanh its output (24)
    >>> tg.autograd.graph.saved_bytes(h)
    48
    """
    roots = (tensors,) if isinstance(tensors, Tensor) else tuple(tensors)
    return sum(b.nbytes for b in saved_buffers(iter_graph(roots)).values())


def saved_buffers(nodes) -> dict:
    """``{id(base): base}`` of the arrays ``nodes`` hold (Note [What saved_bytes counts])."""
    nodes = list(nodes)
    tensors, arrays = [], []
    for node in nodes:
        _collect_node(node, tensors, arrays)
    param_vcs = {id(n.variable._vc) for n in nodes if type(n) is AccumulateGrad}
    param_vcs.update(id(t._vc) for t in tensors if t.grad_fn is None and t._rg)
    for t in tensors:
        arrays.append((t._data, id(t._vc) not in param_vcs))
    param_bases = {id(base_of(a)) for a, activation in arrays if activation is False}
    counted = {}
    for array, activation in arrays:
        base = base_of(array)
        if activation or (activation is None and id(base) not in param_bases):
            counted[id(base)] = base
    return counted


def saved_arrays(node):
    """The arrays one Node holds for its backward: its saved output, and the data of
    the Tensors and the raw arrays its closure captured (for pictures and reports)."""
    tensors, arrays = [], []
    _collect_node(node, tensors, arrays)
    return [a for a, _ in arrays] + [t._data for t in tensors]


def _collect_node(node, tensors, arrays):
    if node._saved_output is not None:
        arrays.append((node._saved_output, True))
    for cell in getattr(node._backward, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # a cell not yet bound
            continue
        _collect(value, tensors, arrays, 0)


def _collect(value, tensors, arrays, depth):
    """Gather the Tensors and raw arrays in a captured value (raw arrays: kind None, a
    parameter's only if a parameter Tensor has the same base)."""
    if isinstance(value, Tensor):
        tensors.append(value)
    elif hasattr(value, "nbytes") and hasattr(value, "shape"):
        if not _shared_constant(value):
            arrays.append((value, None))
    elif depth < 3 and isinstance(value, (tuple, list)):
        for v in value:
            _collect(v, tensors, arrays, depth + 1)
    elif depth < 3 and isinstance(value, dict):
        for v in value.values():
            _collect(v, tensors, arrays, depth + 1)


def _shared_constant(array) -> bool:
    """A read-only 0-d array: a cached operand constant (``tensor * 0.5`` keeps 0.5 as one,
    Note [Scalar operands as 0-d arrays] in ops/arithmetic.py) that every graph shares, so
    freeing a graph would not free it; like a parameter's data, it is not counted."""
    flags = getattr(array, "flags", None)
    return array.shape == () and flags is not None and not flags.writeable


def base_of(array):
    """The array that owns ``array``'s memory (views chain through ``.base``)."""
    while hasattr(getattr(array, "base", None), "nbytes"):
        array = array.base
    return array
