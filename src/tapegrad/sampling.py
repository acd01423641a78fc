"""Sampling from distributions given as tensors: ``multinomial``, ``normal``, ``bernoulli``,
``poisson``, and the in-place fills ``uniform_``, ``normal_``, ``bernoulli_``,
``exponential_``, ``cauchy_``, ``log_normal_``, ``geometric_``, ``random_`` (Note [Random
streams] in random.py).

Samples carry no gradient (torch's derivative of a sample with respect to its
parameters is zero). NOTE: these are bound to Tensor here rather than through the op
registry, because the registry's rows describe deterministic ops (the op table and the
0-d/empty edge-shape table run every registered op twice and compare).
"""

from __future__ import annotations

import numpy as np

from . import _dtypes
from .creation import _on_device, _rng, _size
from .grad_mode import STATE
from .tensor import Tensor

__all__ = ["multinomial", "normal", "bernoulli", "poisson", "binomial"]


def _array(x):
    return x._data if isinstance(x, Tensor) else np.asarray(x)


def multinomial(input, num_samples, replacement=False, *, generator=None) -> Tensor:
    """Indices drawn from the categories of each row of ``input`` (non-negative weights,
    not necessarily summing to 1). Shape: ``(num_samples,)`` for a 1-D input,
    ``(rows, num_samples)`` for 2-D; int64.

    Raises:
        RuntimeError: for a weight that is negative, inf or NaN, a row summing to 0, an
            input that is not 1-D or 2-D, or ``num_samples`` over the number of categories
            without replacement.

    >>> import tapegrad as tg
    >>> tg.multinomial(tg.tensor([0.0, 1.0, 0.0]), 2, replacement=True).tolist()
    [1, 1]
    """
    w = _array(input)
    if w.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got shape {list(w.shape)}")
    if w.dtype.kind != "f":
        raise RuntimeError(
            f"multinomial only supports floating-point dtypes for input, got {w.dtype}"
        )
    n = w.shape[-1]
    if not isinstance(num_samples, (int, np.integer)) or num_samples <= 0:
        raise RuntimeError(f"multinomial: cannot sample n_sample <= 0 samples, got {num_samples!r}")
    if not replacement and num_samples > n:
        raise RuntimeError(
            f"multinomial: cannot sample n_sample > prob_dist.size(-1) samples without "
            f"replacement ({num_samples} > {n})"
        )
    rows = w.reshape(-1, n).astype(np.float64)
    if not np.isfinite(rows).all() or (rows < 0).any():
        raise RuntimeError(
            "multinomial: probability tensor contains either `inf`, `nan` or element < 0"
        )
    totals = rows.sum(axis=1, keepdims=True)
    if (totals <= 0).any():
        raise RuntimeError(
            "multinomial: invalid multinomial distribution (sum of probabilities <= 0)"
        )
    rng = _rng(generator)
    u = rng.random((rows.shape[0], int(num_samples)))
    if replacement:
        cdf = np.cumsum(rows / totals, axis=1)
        cdf[:, -1] = 1.0
        out = np.stack([np.searchsorted(c, r, side="right") for c, r in zip(cdf, u, strict=True)])
        # A category of weight 0 has an empty interval and is never returned.
        out = np.minimum(out, n - 1)
    else:
        # Exponential race: the k smallest of E_i / w_i are a weighted sample without
        # replacement; weight-0 categories come last (key inf).
        with np.errstate(divide="ignore"):
            keys = -np.log1p(-rng.random(rows.shape)) / rows
        out = np.argsort(keys, axis=1, kind="stable")[:, : int(num_samples)]
    out = out.astype(np.int64).reshape(w.shape[:-1] + (int(num_samples),))
    return Tensor._wrap(_on_device(out, _device(input)))


def _device(x):
    return x.device if isinstance(x, Tensor) else None


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False, layout=None) -> Tensor:  # fmt: skip
    """Normal samples with elementwise ``mean`` and ``std`` (tensors broadcast together, or
    floats with ``size``).

    >>> import tapegrad as tg
    >>> tg.normal(tg.zeros(2, 3), 1.0).shape, tg.normal(0.0, 1.0, (4,)).shape
    (tapegrad.Size([2, 3]), tapegrad.Size([4]))
    """
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    if size is None and not tensors:
        raise TypeError("normal(): with float mean and std, pass size, e.g. normal(0.0, 1.0, (3,))")
    m, s = _array(mean), _array(std)
    if (s < 0).any():
        raise RuntimeError(f"normal expects all elements of std >= 0.0, got min {s.min()}")
    if tensors:
        out_dtype = np.result_type(*(t._data.dtype for t in tensors))
        shape = np.broadcast_shapes(m.shape, s.shape) if size is None else _size((size,), "normal")
    else:
        out_dtype = _dtypes.get_default_dtype()
        shape = _size((size,), "normal")
    out_dtype = _dtypes.to_dtype(dtype) or out_dtype
    data = (m + s * _rng(generator).standard_normal(shape)).astype(out_dtype)
    t = Tensor._wrap(_on_device(data, device))
    return t.requires_grad_(True) if requires_grad else t


def bernoulli(input, p=None, *, generator=None) -> Tensor:
    """0/1 samples (``input``'s dtype) that are 1 with probability ``input`` (or ``p``)."""
    x = _array(input)
    prob = x if p is None else np.broadcast_to(_array(p), x.shape)
    if prob.size and ((prob < 0) | (prob > 1) | np.isnan(prob)).any():
        raise RuntimeError("bernoulli: expected all probabilities p to satisfy 0 <= p <= 1")
    data = (_rng(generator).random(x.shape) < prob).astype(x.dtype)
    return Tensor._wrap(data)


def poisson(input, generator=None) -> Tensor:
    """Poisson samples with rates ``input`` (same shape and dtype)."""
    x = _array(input)
    if (x < 0).any():
        raise RuntimeError("poisson: expected all rates to be >= 0")
    return Tensor._wrap(_rng(generator).poisson(x).astype(x.dtype))


def binomial(count, prob, generator=None) -> Tensor:
    """Binomial samples: successes in ``count`` trials of probability ``prob`` (float tensors
    of one dtype, broadcast together); the result has their dtype.

    Raises:
        ValueError: ``count`` is not floating point, or a count below 0 or a probability
            outside [0, 1] (torch samples garbage there).
        RuntimeError: ``count`` and ``prob`` differ in dtype.
    """
    n, p = _array(count), _array(prob)
    if n.dtype.kind != "f":
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {n.dtype}")
    if p.dtype != n.dtype:
        raise RuntimeError(f"binomial: Found dtype {p.dtype} but expected {n.dtype}")
    if (n < 0).any() or (p < 0).any() or (p > 1).any() or np.isnan(p).any():
        raise ValueError("binomial: expected count >= 0 and 0 <= prob <= 1")
    shape = np.broadcast_shapes(n.shape, p.shape)
    draws = _rng(generator).binomial(np.broadcast_to(n, shape).astype(np.int64), p)
    return Tensor._wrap(np.asarray(draws).astype(n.dtype))


# -- in-place fills ----------------------------------------------------------------------


def _fill(self, op, values):
    if self._rg and self.grad_fn is None and STATE.enabled:
        raise RuntimeError(
            f"{op}: a leaf Variable that requires grad is being used in an in-place "
            "operation. Wrap it in tg.no_grad() (as nn.init does) or modify a .clone()."
        )
    return self.copy_(Tensor._wrap(np.asarray(values).astype(self._data.dtype, copy=False)))


def uniform_(self, a=0.0, b=1.0, *, generator=None, **kw):
    """Fill with uniform samples in [a, b) (torch's ``from``/``to`` keywords work too)."""
    a, b = kw.pop("from", a), kw.pop("to", b)
    if a > b:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}"
        )
    return _fill(self, "uniform_", _rng(generator).uniform(a, b, size=self.shape))


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with normal samples."""
    return _fill(self, "normal_", _rng(generator).normal(mean, std, size=self.shape))


def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 0/1 samples that are 1 with probability ``p`` (a float or a tensor)."""
    prob = np.broadcast_to(_array(p), self.shape)
    return _fill(self, "bernoulli_", _rng(generator).random(self.shape) < prob)


def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with exponential samples of rate ``lambd``."""
    _positive("exponential_", "lambda", lambd)
    return _fill(self, "exponential_", _rng(generator).exponential(1.0 / lambd, size=self.shape))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with Cauchy samples ``median + sigma * tan(pi * (U - 1/2))``."""
    _positive("cauchy_", "sigma", sigma)
    return _fill(self, "cauchy_", median + sigma * _rng(generator).standard_cauchy(self.shape))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with ``exp(N(mean, std**2))`` samples (torch's defaults: mean 1, std 2)."""
    _positive("log_normal_", "std", std)
    return _fill(self, "log_normal_", _rng(generator).lognormal(mean, std, size=self.shape))


def geometric_(self, p, *, generator=None):
    """Fill with the number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return _fill(self, "geometric_", _rng(generator).geometric(p, size=self.shape))


def _positive(op, what, value):
    if not value > 0:
        raise RuntimeError(f"{op} expects {what} > 0.0, but found {what}={value}")


def random_(self, from_=0, to=None, *, generator=None, **kw):
    """Fill with integers in [from, to) (``random_(to)`` is [0, to))."""
    from_ = kw.pop("from", from_)
    if to is None:
        if from_ == 0:
            raise RuntimeError("random_: pass an upper bound, e.g. random_(10) or random_(0, 10)")
        from_, to = 0, from_
    return _fill(self, "random_", _rng(generator).integers(from_, to, size=self.shape))


for _fn in (uniform_, normal_, bernoulli_, exponential_, cauchy_, log_normal_, geometric_, random_):
    setattr(Tensor, _fn.__name__, _fn)
Tensor.multinomial = multinomial
Tensor.bernoulli = bernoulli
del _fn
