"""The orthogonal polynomials of ``torch.special`` (``chebyshev_polynomial_t(x, n)`` ...).

Each is a three-term recurrence ``p[k+1] = a(k, x)·p[k] − b(k, x)·p[k−1]`` evaluated for
every element up to its own degree ``n`` (``n`` a number or a broadcast tensor, truncated
to an integer; a negative degree gives 0, as in PyTorch). Values only: PyTorch records
no gradient for these either.
"""

from __future__ import annotations

import numpy as np

from .. import _dtypes
from ..tensor import Tensor
from ._registry import register
from ._util import as_tensor_or_scalar, broadcast_error

__all__ = ["POLYNOMIALS"]

# name: (p0(x), p1(x), step(k, x, p_k, p_km1) -> p_{k+1}, argument transform)
_FAMILIES = {
    "chebyshev_polynomial_t": (lambda x: x, lambda k, x, p, q: 2 * x * p - q, None),
    "chebyshev_polynomial_u": (lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - q, None),
    "chebyshev_polynomial_v": (lambda x: 2 * x - 1, lambda k, x, p, q: 2 * x * p - q, None),
    "chebyshev_polynomial_w": (lambda x: 2 * x + 1, lambda k, x, p, q: 2 * x * p - q, None),
    "hermite_polynomial_h": (lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - 2 * k * q, None),
    "hermite_polynomial_he": (lambda x: x, lambda k, x, p, q: x * p - k * q, None),
    "laguerre_polynomial_l": (
        lambda x: 1 - x,
        lambda k, x, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1),
        None,
    ),
    "legendre_polynomial_p": (
        lambda x: x,
        lambda k, x, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1),
        None,
    ),
}
for _kind in "tuvw":
    _p1, _step, _ = _FAMILIES[f"chebyshev_polynomial_{_kind}"]
    _FAMILIES[f"shifted_chebyshev_polynomial_{_kind}"] = (_p1, _step, lambda x: 2 * x - 1)


def _evaluate(name, p1, step, transform):
    def polynomial(input, n):
        tx, x = as_tensor_or_scalar(input, name)
        tn, nd = as_tensor_or_scalar(n, name)
        dt = np.result_type(x, nd)
        if dt.kind in "iub":
            dt = _dtypes.get_default_dtype()
        try:
            x, nd = np.broadcast_arrays(np.asarray(x, dt), np.asarray(nd))
        except ValueError:
            raise broadcast_error(name, np.shape(x), np.shape(nd)) from None
        deg = np.trunc(nd).astype(np.int64) if nd.dtype.kind == "f" else nd.astype(np.int64)
        if transform is not None:
            x = transform(x)
        with np.errstate(all="ignore"):
            prev, cur = np.ones_like(x), p1(x)
            out = np.where(deg == 0, prev, 0).astype(dt)
            out = np.where(deg == 1, cur, out)
            top = int(deg.max()) if deg.size else 0
            for k in range(1, top):
                prev, cur = cur, step(k, x, cur, prev)
                out = np.where(deg == k + 1, cur, out)
        return Tensor._wrap(np.asarray(out, dt))

    polynomial.__name__ = name
    polynomial.__doc__ = f"``torch.special.{name}(input, n)``: values only (no gradient)."
    return polynomial


POLYNOMIALS = {}
for _name, (_p1, _step, _transform) in _FAMILIES.items():
    POLYNOMIALS[_name] = register(
        f"special_{_name}", method=False, function=False, differentiable=False
    )(_evaluate(_name, _p1, _step, _transform))
