"""The memory layout of a result as PyTorch chooses it (tests/test_layouts.py).

Note [Torch's result layouts]
A program may take a view of a result (``out.view(-1)``, ``out.t()``) and write through
it, or read ``stride()``: the layout is part of torch's answer. NumPy's kernels keep their
input's order (``K``) where torch allocates its result C-ordered (``cat``, reductions,
scans, ``roll``, ``index_select``, ``masked_fill``, softmax), and allocate C-ordered
results where torch keeps a dense input's strides (``clone``, ``*_like``, ``flip``:
``MemoryFormat::Preserve``). The two helpers below give torch's layout; each costs a flag
test on a C-ordered input, the common case, and copies nothing there.
"""

from __future__ import annotations

__all__ = ["c_order", "preserve_order"]


def c_order(out):
    """``out`` itself when C-ordered, else a C-ordered copy (torch's ``empty(shape)``).

    ``.copy()``, not ``np.ascontiguousarray``: a graph-cache recording sees the method.
    """
    return out if out.flags.c_contiguous else out.copy()


def preserve_order(a):
    """The NumPy ``order`` of a copy laid out as torch's ``MemoryFormat::Preserve`` lays it.

    torch keeps the order of the input's strides (a dense input's strides exactly, a slice's
    in the same order: NumPy's ``"K"``); an expanded input (a stride 0) gets C order here,
    as torch gives it in the common cases (NumPy's ``"K"`` would put that dim last).
    """
    if a.flags.c_contiguous or a.size == 0:
        return "C"
    for s, n in zip(a.strides, a.shape):
        if s <= 0 and n > 1:
            return "C"
    return "K"
