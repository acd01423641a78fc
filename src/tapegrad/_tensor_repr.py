"""How a tensor prints: PyTorch's layout, digit for digit.

A port of the formatting rules of PyTorch's ``torch/_tensor_str.py`` (BSD-3-Clause,
Copyright (c) PyTorch contributors) to NumPy arrays, for real and bool/int tensors:

* one width for all elements: the widest formatted element;
* floats: integers-only tensors print ``1.`` (int mode); otherwise ``precision`` fixed
  digits (``0.1250``), or scientific when the largest |value| over the smallest
  nonzero one exceeds 1000, or the largest is above 1e8, or the smallest below 1e-4;
* rows wrap at ``linewidth`` (80): ``floor((linewidth - indent) / (width + 2))`` elements
  per line, continued under the first element;
* more than ``threshold`` elements: ``edgeitems`` at each end of every dim around
  ``...``, the widths taken from the shown elements only;
* the suffixes (``dtype=``, ``grad_fn=``, ...) go on the last line while it fits.

Complex tensors keep NumPy's layout (``Tensor.__repr__`` decides).
"""

from __future__ import annotations

import math

import numpy as np


class _Formatter:
    def __init__(self, values: np.ndarray, opts):
        self.floating = values.dtype.kind == "f" or values.dtype.name == "bfloat16"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        self.precision = opts["precision"]
        flat = values.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        flat = flat.astype(np.float64)
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        absv = np.abs(finite)
        lo, hi = float(absv.min()), float(absv.max())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        sci = opts["sci_mode"]
        self.sci_mode = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4) if sci is None else sci
        p = self.precision
        if self.sci_mode:
            widths = (len(f"{v:.{p}e}") for v in finite.tolist())
        elif self.int_mode:
            widths = (len(f"{v:.0f}") + 1 for v in finite.tolist())
        else:
            widths = (len(f"{v:.{p}f}") for v in finite.tolist())
        self.max_width = max(self.max_width, max(widths))

    def format(self, value) -> str:
        if self.floating:
            value = float(value)
            p = self.precision
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{p}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _summarized(a: np.ndarray, edge: int) -> np.ndarray:
    """The elements that will be shown (for the formatter's widths)."""
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate((a[:edge], a[-edge:])) if a.shape[0] > 2 * edge else a
    if not edge:
        return a[(slice(0, 0),) * a.ndim]
    rows = list(range(edge)) + list(range(a.shape[0] - edge, a.shape[0]))
    if a.shape[0] <= 2 * edge:
        rows = range(a.shape[0])
    return np.stack([_summarized(a[i], edge) for i in rows])


def _vector(a, indent, summarize, fmt, opts) -> str:
    element_length = fmt.max_width + 2
    per_line = max(1, math.floor((opts["linewidth"] - indent) / element_length))
    edge = opts["edgeitems"]
    if summarize and not edge:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * edge:
        data = [fmt.format(v) for v in a[:edge].tolist()] + [" ..."]
        data += [fmt.format(v) for v in a[-edge:].tolist()]
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a, indent, summarize, fmt, opts) -> str:
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector(a, indent, summarize, fmt, opts)
    edge = opts["edgeitems"]
    if summarize and a.shape[0] > 2 * edge:
        parts = [_nested(a[i], indent + 1, summarize, fmt, opts) for i in range(edge)]
        parts.append("...")
        parts += [
            _nested(a[i], indent + 1, summarize, fmt, opts)
            for i in range(a.shape[0] - edge, a.shape[0])
        ]
    else:
        parts = [_nested(a[i], indent + 1, summarize, fmt, opts) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def tensor_str(a: np.ndarray, indent: int, opts) -> str:
    """The bracketed values of ``a`` as torch prints them, continuation lines indented by
    ``indent`` (the length of the prefix, ``tensor(``)."""
    if a.size == 0:
        return "[]"
    if a.dtype.kind in "fV" and a.dtype.itemsize < 4:  # float16, bfloat16, float8
        a = a.astype(np.float32)  # (the values print exactly; NumPy formats these slowly)
    summarize = a.size > opts["threshold"]
    fmt = _Formatter(_summarized(a, opts["edgeitems"]) if summarize else a, opts)
    return _nested(a, indent, summarize, fmt, opts)


def add_suffixes(text: str, suffixes, indent: int, linewidth: int) -> str:
    """``text`` + ``, suffix`` for each, a suffix that would pass ``linewidth`` on a new line."""
    out = [text]
    last = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if last + len(s) + 2 > linewidth:
            out.append(",\n" + " " * indent + s)
            last = indent + len(s)
        else:
            out.append(", " + s)
            last += len(s) + 2
    out.append(")")
    return "".join(out)
