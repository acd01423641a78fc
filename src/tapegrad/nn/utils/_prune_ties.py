"""Which of several equal values torch's CPU ``topk`` returns, for pruning's masks.

Note [Ties in pruning]: torch's CPU ``topk`` (ATen ``topk_impl_loop``) puts
``(value, index)`` pairs in a vector and runs ``std::partial_sort`` when ``k * 64 <= n``,
else ``std::nth_element``; the first ``k`` pairs are the result. Its comparator looks at
the values only, so among equal values the subset kept is whatever libstdc++'s
introselect / heap select leave in front. No spec fixes that order, but a pruning mask
made from it is torch's mask, so :func:`topk_indices` replays both algorithms (the
partition steps vectorised with NumPy) when the cut falls inside a group of equal values;
otherwise the ordinary ``argsort`` gives the same set. Only the *set* is torch's (the
order within it is not needed by a mask). Checked against torch 2.13 on a few thousand
tie-heavy vectors (NaN included, both algorithms); 10^6 entries take about 0.3 s.
"""

from __future__ import annotations

import numpy as np

from ..._backend import device_of
from ...tensor import Tensor

__all__ = ["topk_flat_indices", "topk_indices"]


def topk_flat_indices(t, k, largest):
    """The flat indices of ``t.view(-1).topk(k, largest=largest)``, with torch's CPU choice
    among equal values for CPU tensors (another device keeps its own ``topk``, as torch's
    CUDA ``topk`` has its own order).

    Raises:
        TypeError: ``k`` is a bool (an ``amount=True`` reaches torch's ``topk`` so).
    """
    if isinstance(k, bool):
        raise TypeError("topk(): argument 'k' must be int, not bool")
    flat = t.reshape(-1)
    if device_of(flat._data) != "cpu":
        return flat.topk(k, largest=largest).indices
    return Tensor._wrap(topk_indices(flat._data, k, largest))


def topk_indices(values, k, largest):
    """The flat indices torch's CPU ``topk(values, k, largest=largest)`` returns (as a set).

    ``values`` is a 1-D NumPy array; NaN counts as the largest value, as torch's comparator.
    """
    n = values.shape[0]
    if k == 0:
        return np.zeros(0, np.int64)
    if k == n:
        return np.arange(n)
    floating = values.dtype.kind == "f"
    if not (floating and np.isnan(values).any()):
        # O(n): the k-th value; without equal values across the cut the set is plain
        # (``~`` reverses the order of integers and bools without overflow)
        v = values if not largest else (-values if floating else ~values)
        cut = v[np.argpartition(v, k - 1)[k - 1]]
        below, at = int((v < cut).sum()), int((v == cut).sum())
        if below + at == k:
            return np.flatnonzero(v <= cut)
    # integer ranks keep the order and the ties (NaN after +inf, as torch's comparator)
    _, rank = np.unique(values, return_inverse=True)
    key = (-rank if largest else rank).astype(np.int64).reshape(-1)
    order = np.argsort(key, kind="stable")
    if key[order[k - 1]] != key[order[k]]:
        return order[:k]
    if k * 64 <= n:
        return _heap_select(key, k)
    return _introselect(key, k - 1)[:k]


def _introselect(key, nth):
    """libstdc++'s ``std::nth_element`` on ``(key, index)`` pairs; the permuted indices."""
    idx = np.arange(key.shape[0])
    k = key.copy()
    first, last = 0, key.shape[0]
    depth = 2 * (int(last).bit_length() - 1)
    while last - first > 3:
        if depth == 0:
            # heap select, as libstdc++ (the order inside the kept set does not matter)
            head = _heap_select(k[first:last], nth + 1 - first)
            rest = np.setdiff1d(np.arange(last - first), head, assume_unique=True)
            idx[first:last] = idx[first:last][np.concatenate([head, rest])]
            return idx
        depth -= 1
        cut = _partition_pivot(k, idx, first, last)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(k, idx, first, last)
    return idx


def _partition_pivot(k, idx, first, last):
    """``__unguarded_partition_pivot``: median of three to ``first``, then Hoare's
    partition of ``[first + 1, last)`` around it; returns the cut."""
    mid = first + (last - first) // 2
    a, b, c = first + 1, mid, last - 1
    if k[a] < k[b]:
        m = b if k[b] < k[c] else (c if k[a] < k[c] else a)
    else:
        m = a if k[a] < k[c] else (c if k[b] < k[c] else b)
    _swap(k, idx, first, m)
    pivot = k[first]
    seg = k[first + 1 : last]
    left = np.flatnonzero(seg >= pivot) + first + 1  # where the left scan stops
    right = np.flatnonzero(seg <= pivot)[::-1] + first + 1  # the right scan, downwards
    m = min(left.shape[0], right.shape[0])
    swaps = np.flatnonzero(left[:m] >= right[:m])
    i = int(swaps[0]) if swaps.shape[0] else m
    # pairs 0..i-1 are swapped; the left scan then stops at the next original stop or at
    # the last swapped right position (which now holds a value >= pivot)
    lo, hi = left[:i], right[:i]
    k[lo], k[hi] = k[hi], k[lo].copy()
    idx[lo], idx[hi] = idx[hi], idx[lo].copy()
    nxt = int(left[i]) if i < left.shape[0] else last
    return min(nxt, int(right[i - 1])) if i > 0 else nxt


def _swap(k, idx, i, j):
    k[i], k[j] = k[j], k[i]
    idx[i], idx[j] = idx[j], idx[i]


def _insertion_sort(k, idx, first, last):
    """``std::__insertion_sort`` on ``[first, last)`` (at most 3 elements here)."""
    for i in range(first + 1, last):
        vk, vi = k[i], idx[i]
        if vk < k[first]:
            k[first + 1 : i + 1], idx[first + 1 : i + 1] = k[first:i].copy(), idx[first:i].copy()
            k[first], idx[first] = vk, vi
        else:
            j = i
            while vk < k[j - 1]:
                k[j], idx[j] = k[j - 1], idx[j - 1]
                j -= 1
            k[j], idx[j] = vk, vi


def _heap_select(key, k):
    """The indices libstdc++'s ``std::__heap_select`` leaves in ``[0, k)`` (a max-heap on
    ``key`` of the first ``k``; each later strictly smaller key replaces the top)."""
    heap = [int(v) for v in key[:k]]
    pos = list(range(k))
    for parent in range((k - 2) // 2, -1, -1):
        _adjust_heap(heap, pos, parent, k, heap[parent], pos[parent])
    n = key.shape[0]
    start, chunk = k, 4096
    while start < n:
        block = key[start : start + chunk]
        for j in np.flatnonzero(block < heap[0]):  # candidates against the top at the start
            v = int(block[j])
            if v < heap[0]:
                _adjust_heap(heap, pos, 0, k, v, start + int(j))
        start += chunk
    return np.array(pos, np.int64)


def _adjust_heap(heap, pos, hole, length, value, vpos):
    """``std::__adjust_heap`` then ``std::__push_heap`` (the comparator is ``<`` on keys)."""
    top, child = hole, hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if heap[child] < heap[child - 1]:
            child -= 1
        heap[hole], pos[hole] = heap[child], pos[child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        heap[hole], pos[hole] = heap[child - 1], pos[child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and heap[parent] < value:
        heap[hole], pos[hole] = heap[parent], pos[parent]
        hole = parent
        parent = (hole - 1) // 2
    heap[hole], pos[hole] = value, vpos
