"""Graph pictures: the recorded graph behind a tensor as Graphviz DOT text.

``to_dot`` needs nothing installed; ``render`` needs the ``graphviz`` Python
package and Graphviz's ``dot`` program.
"""

from __future__ import annotations

import os
import shutil

from .autograd import graph
from .tensor import Tensor

__all__ = ["to_dot", "render"]


def _quote(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _shape(shape) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ")"


def _saved_shapes(node) -> list:
    shapes = []
    seen = set()
    for array in graph.saved_arrays(node):
        if id(array) not in seen:
            seen.add(id(array))
            shapes.append(tuple(array.shape))
    return shapes


def to_dot(tensors, params=None, show_saved=True) -> str:
    """Graphviz DOT text of the graph behind ``tensors``.

    Args:
        tensors: a Tensor or a sequence of Tensors (the roots, drawn as output boxes).
        params: optional ``{name: tensor}`` naming leaves, e.g.
            ``dict(model.named_parameters())``.
        show_saved: list the shapes of the arrays each Node saved for backward.

    Returns:
        DOT source: one box per Node (its name and saved shapes), one per leaf that
        requires grad (its name and shape), one per root (its shape), edges in the
        direction of the forward computation.

    >>> import tapegrad as tg
    >>> x = tg.ones(3, requires_grad=True)
    >>> print(tg.viz.to_dot((x * 2.0).sum(), params={"x": x}).splitlines()[0])
    digraph tapegrad {
    """
    roots = (tensors,) if isinstance(tensors, Tensor) else tuple(tensors)
    names = {id(t): name for name, t in (params or {}).items()}
    lines = [
        "digraph tapegrad {",
        '  node [shape=box, style=filled, fillcolor=white, fontname="monospace", fontsize=10];',
    ]
    ids = {}

    def node_id(node) -> str:
        key = id(node)
        if key not in ids:
            ids[key] = f"n{len(ids)}"
        return ids[key]

    edges = []
    for node in graph.iter_graph(roots):
        nid = node_id(node)
        if type(node) is graph.AccumulateGrad:
            leaf = node.variable
            label = f"{names.get(id(leaf), 'leaf')}\n{_shape(leaf.shape)} {leaf.dtype}"
            lines.append(f"  {nid} [label={_quote(label)}, fillcolor=lightblue];")
            continue
        label = node.name()
        if show_saved:
            shapes = _saved_shapes(node)
            if shapes:
                label += "\nsaved: " + ", ".join(_shape(s) for s in shapes)
        lines.append(f"  {nid} [label={_quote(label)}];")
        for edge in node.next_functions:
            if edge is not None:
                edges.append((node_id(edge[0]), nid))
    for k, root in enumerate(roots):
        rid = f"out{k}"
        label = f"output {k}\n{_shape(root.shape)} {root.dtype}"
        lines.append(f"  {rid} [label={_quote(label)}, fillcolor=darkolivegreen1];")
        if root.grad_fn is not None:
            edges.append((node_id(root.grad_fn), rid))
        elif root.requires_grad:
            edges.append((node_id(graph.accumulator_of(root)), rid))
    lines.extend(f"  {a} -> {b};" for a, b in edges)
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(tensors, path, params=None, show_saved=True) -> str:
    """Draw the graph into ``path``; the format comes from its suffix (png, svg, pdf...).

    Returns:
        The path of the written file.

    Raises:
        RuntimeError: if the ``graphviz`` Python package or the ``dot`` program is missing.
    """
    try:
        import graphviz  # noqa: PLC0415 - optional dependency
    except ImportError:
        graphviz = None
    if graphviz is None or shutil.which("dot") is None:
        missing = []
        if graphviz is None:
            missing.append("the graphviz Python package (pip install graphviz)")
        if shutil.which("dot") is None:
            missing.append(
                "Graphviz's 'dot' program (e.g. apt install graphviz, brew install graphviz)"
            )
        raise RuntimeError(
            "tg.viz.render needs " + " and ".join(missing) + "; tg.viz.to_dot(tensor) "
            "returns the DOT text without them"
        )
    stem, ext = os.path.splitext(os.fspath(path))
    fmt = ext.lstrip(".") or "png"
    source = graphviz.Source(to_dot(tensors, params, show_saved))
    return source.render(filename=stem, format=fmt, cleanup=True)
