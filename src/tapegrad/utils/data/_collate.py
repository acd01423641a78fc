"""``default_collate`` and ``default_convert``, as ``torch.utils.data._utils.collate``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ...tensor import Tensor

__all__ = ["default_collate", "default_convert"]


def default_collate(batch):
    """Stack a list of samples into a batch, as PyTorch's ``default_collate``.

    Tensors and NumPy arrays are stacked along a new dim 0; Python floats become a
    float64 tensor, ints an int64 tensor, bools a bool tensor; strings stay a list;
    dicts, tuples and lists are collated field by field (tuples and lists into a list,
    named tuples into the same type).

    Raises:
        TypeError: for samples of another type.
        RuntimeError: when sequence samples have different lengths.

    >>> import tapegrad as tg
    >>> tg.utils.data.default_collate([{"x": 1.5, "y": 0}, {"x": 2.5, "y": 1}])
    {'x': tensor([1.5000, 2.5000], dtype=tapegrad.float64), 'y': tensor([0, 1])}
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return Tensor._wrap(np.stack([t._data for t in batch]))
    if isinstance(elem, (np.ndarray, np.generic)):
        if isinstance(elem, np.ndarray) and elem.dtype.kind in "USO":
            raise TypeError(
                f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
                f"lists; found a numpy array of dtype {elem.dtype}"
            )
        return Tensor._wrap(np.stack([np.asarray(b) for b in batch]))
    if isinstance(elem, bool):
        return Tensor._wrap(np.array(batch, dtype=np.bool_))
    if isinstance(elem, float):
        return Tensor._wrap(np.array(batch, dtype=np.float64))
    if isinstance(elem, int):
        return Tensor._wrap(np.array(batch, dtype=np.int64))
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, Mapping):
        return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch, strict=True)))
    if isinstance(elem, Sequence):
        if any(len(s) != len(elem) for s in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(s)) for s in zip(*batch, strict=True)]
    raise TypeError(
        "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
        f"lists; found {type(elem).__name__}"
    )


def default_convert(data):
    """Unbatched samples (``batch_size=None``): NumPy arrays become tensors, containers are
    converted inside, everything else is returned as is."""
    if isinstance(data, np.ndarray) and data.dtype.kind not in "USO":
        return Tensor._wrap(data)
    if isinstance(data, Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(v) for v in data))
    if isinstance(data, tuple):
        return tuple(default_convert(v) for v in data)
    if isinstance(data, list):
        return [default_convert(v) for v in data]
    return data
