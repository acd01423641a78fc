"""Anomaly mode: remember where each Node was created; stop at the first NaN/inf gradient.

While ``detect_anomaly()`` is active, every new Node records the few user frames
that created it as ``(file, line, function)`` tuples (no frame objects, no source
text: cheap), and every backward result is checked for NaN/inf. The error names
the Node and shows those lines.

Note [Masked-branch NaN]
``where(x > 0, sqrt(x), 0)`` computes sqrt on every element; backward sends the
untaken positions a gradient of exactly 0, and sqrt's backward turns 0 / 0 into
NaN. When the NaN a Node returns sits exactly where its incoming gradient was 0,
the value was masked downstream, so we say so and name the consumer Node that
masks: any Node whose name is in ``MASKING_OPS`` or whose ``metadata`` has a
``"masking"`` entry (an op may set ``node.metadata = {"masking": "masked_fill"}``).
Consumers are recorded per Node while anomaly mode is on.
"""

from __future__ import annotations

import functools
import itertools
import linecache
import sys
import weakref

import numpy as np

from ..tensor import _is_internal
from . import graph

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "MASKING_OPS"]

MASKING_OPS = {
    "WhereBackward",
    "MaskedFillBackward",
    "ClampBackward",
    "ClampMinBackward",
    "ClampMaxBackward",
    "MaximumBackward",
    "MinimumBackward",
    "MaskedScatterBackward",
}

_STACK_DEPTH = 3  # user frames kept per Node
_STATE = {"anomaly": False, "check_nan": True}
_RECORDERS = []  # extra per-Node recorders (checkgraph's replay recorder)
_SEQ = itertools.count()


def is_anomaly_enabled() -> bool:
    """Whether anomaly mode is on."""
    return _STATE["anomaly"]


def _apply() -> None:
    graph.ANOMALY["record"] = _record
    graph.ANOMALY["check"] = _check
    graph.ANOMALY["enabled"] = _STATE["anomaly"] or bool(_RECORDERS)


def _set(mode: bool, check_nan: bool):
    previous = (_STATE["anomaly"], _STATE["check_nan"])
    _STATE["anomaly"] = bool(mode)
    _STATE["check_nan"] = bool(check_nan)
    _apply()
    return previous


class set_detect_anomaly:
    """Turn anomaly mode on or off; takes effect at once, and restores on ``with`` exit."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._previous = _set(mode, check_nan)

    def __enter__(self) -> None:  # torch's binds nothing to ``as``
        pass

    def __exit__(self, *exc):
        _set(*self._previous)


class detect_anomaly:
    """Context manager and decorator: record Node origins, raise on NaN/inf gradients.

    Args:
        check_nan: check each backward result for NaN/inf (only record origins if False).

    >>> import tapegrad as tg
    >>> x = tg.tensor([0.0, 1.0], requires_grad=True)
    >>> with tg.autograd.detect_anomaly():
    ...     y = x.log().sum()
    ...     y.backward()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    RuntimeError: Function 'LogBackward' returned inf values in its 0th output...
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan
        self._saved = []

    def __enter__(self):
        self._saved.append(_set(True, self.check_nan))  # ``as`` gets None, as torch

    def __exit__(self, *exc):
        _set(*self._saved.pop())

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper


def add_recorder(fn) -> None:
    """Call ``fn(node, frame)`` for each new Node (``frame``: make_result's frame)."""
    _RECORDERS.append(fn)
    _apply()


def remove_recorder(fn) -> None:
    _RECORDERS.remove(fn)
    _apply()


# -- recording ----------------------------------------------------------------------------


def user_stack(frame) -> tuple:
    """Up to _STACK_DEPTH ``(file, line, function)`` of the innermost frames outside tapegrad."""
    stack = []
    while frame is not None and len(stack) < _STACK_DEPTH:
        code = frame.f_code
        if not _is_internal(code.co_filename):
            stack.append((code.co_filename, frame.f_lineno, code.co_name))
        frame = frame.f_back
    return tuple(stack)


def _record(node) -> None:
    frame = sys._getframe(1)  # make_result / make_results
    meta = node.metadata
    if meta is None:
        meta = node.metadata = {}
    meta["seq"] = next(_SEQ)
    meta["where"] = user_stack(frame)
    if _STATE["anomaly"]:
        ref = weakref.ref(node)
        for edge in node.next_functions:
            if edge is not None and type(edge[0]) is not graph.AccumulateGrad:
                child = edge[0]
                if child.metadata is None:
                    child.metadata = {}
                child.metadata.setdefault("consumers", []).append(ref)
    for recorder in _RECORDERS:
        recorder(node, frame)


def format_where(node, indent: str = "    ") -> str:
    """The recorded creation lines of ``node`` (innermost first), or a hint when absent."""
    where = (node.metadata or {}).get("where")
    if not where:
        return f"{indent}(no creation record: build the graph inside detect_anomaly())"
    lines = []
    for file, line, func in where:
        lines.append(f'{indent}File "{file}", line {line}, in {func}')
        text = linecache.getline(file, line).strip()
        if text:
            lines.append(f"{indent}  {text}")
    return "\n".join(lines)


def short_where(node) -> str:
    where = (node.metadata or {}).get("where")
    if not where:
        return "<unknown location>"
    file, line, func = where[0]
    return f"{file}:{line} in {func}"


# -- checking -----------------------------------------------------------------------------


def _check(node, in_grads, incoming) -> None:
    if not (_STATE["anomaly"] and _STATE["check_nan"]):
        return
    for i, g in enumerate(in_grads):
        if g is None or g._data.dtype.kind not in "fc":
            continue
        data = g._data
        finite = np.isfinite(data)
        if finite.all():
            continue
        what = "nan" if np.isnan(data).any() else "inf"
        msg = (
            f"Function '{node.name()}' returned {what} values in its {i}th output.\n"
            f"  {node.name()} was created at (most recent call first):\n{format_where(node)}"
        )
        raise RuntimeError(msg + _masked_branch_hint(node, ~finite, incoming))


def _masked_branch_hint(node, bad, incoming) -> str:
    """Note [Masked-branch NaN]: explain a NaN that sits where the incoming gradient was 0."""
    if len(incoming) != 1 or incoming[0] is None:
        return ""
    inc = incoming[0]._data
    if inc.shape != bad.shape or not np.all(inc[bad] == 0):
        return ""
    consumers = [r() for r in (node.metadata or {}).get("consumers", ())]
    maskers = [
        c
        for c in consumers
        if c is not None and (c.name() in MASKING_OPS or "masking" in (c.metadata or {}))
    ]
    head = (
        f"\n  The non-finite values appear exactly where the gradient flowing into "
        f"{node.name()} is 0: they are 0 * inf (or 0 / 0) from a value that was masked "
        "downstream, not a real infinite gradient."
    )
    if not maskers:
        return head + (
            " Compute the masked branch on safe inputs (e.g. where(x > 0, sqrt(where(x > 0, x, "
            "1.0)), 0.0))."
        )
    m = maskers[0]
    op = (m.metadata or {}).get("masking") or m.name().removesuffix("Backward").lower()
    return head + (
        f"\n  This is the masked-branch trap: '{op}' ({m.name()}, created at {short_where(m)}) "
        f"selected other values at those positions, but {node.name()} was still evaluated "
        "there and its derivative is not finite. Its zero gradient times that infinite "
        "derivative gives NaN. Fix: feed the untaken branch safe inputs, e.g. "
        "where(x > 0, sqrt(where(x > 0, x, 1.0)), 0.0) (the 'double where' trick), or clamp "
        "the input before the unsafe op."
    )
