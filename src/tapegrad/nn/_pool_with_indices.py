"""``F.max_pool{1,2,3}d_with_indices`` and ``F.adaptive_max_pool{1,2,3}d_with_indices``.

torch's names for the pooling calls that always return ``(output, indices)``: the
``return_indices`` argument is accepted and ignored, as torch does. One row per name,
each bound to the pooling function of the same name without the suffix.
"""

from __future__ import annotations

from . import functional as _F

_MAX = ("max_pool1d", "max_pool2d", "max_pool3d")
_ADAPTIVE = ("adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d")

__all__ = [f"{name}_with_indices" for name in _MAX + _ADAPTIVE]


def _max_with_indices(name):
    def pool(
        input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
        return_indices=False,
    ):  # fmt: skip
        fn = getattr(_F, name)
        return fn(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)

    return pool


def _adaptive_with_indices(name):
    def pool(input, output_size, return_indices=False):
        return getattr(_F, name)(input, output_size, return_indices=True)

    return pool


for _name, _make in [(n, _max_with_indices) for n in _MAX] + [
    (n, _adaptive_with_indices) for n in _ADAPTIVE
]:
    _fn = _make(_name)
    _fn.__name__ = _fn.__qualname__ = f"{_name}_with_indices"
    _fn.__doc__ = f"``{_name}(..., return_indices=True)``: the pair ``(output, indices)``."
    globals()[_fn.__name__] = _fn
del _name, _make, _fn
