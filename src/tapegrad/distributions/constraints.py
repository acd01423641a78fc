"""Constraints: what values a parameter or a sample may take (``torch.distributions.constraints``).

``constraint.check(value)`` returns a bool Tensor over the batch (event dims reduced);
distributions use it to validate their arguments and the values given to ``log_prob``.
"""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor

__all__ = [
    "Constraint",
    "MixtureSameFamilyConstraint",
    "boolean",
    "cat",
    "corr_cholesky",
    "dependent",
    "dependent_property",
    "greater_than",
    "greater_than_eq",
    "half_open_interval",
    "independent",
    "integer_interval",
    "interval",
    "is_dependent",
    "less_than",
    "lower_cholesky",
    "lower_triangular",
    "multinomial",
    "nonnegative",
    "nonnegative_integer",
    "one_hot",
    "positive",
    "positive_definite",
    "positive_integer",
    "positive_semidefinite",
    "real",
    "real_vector",
    "simplex",
    "square",
    "stack",
    "symmetric",
    "unit_interval",
]


def _array(value):
    return value._data if isinstance(value, Tensor) else np.asarray(value)


class Constraint:
    """A region of values. ``is_discrete``: integer-valued; ``event_dim``: the number of
    rightmost dims that make one event."""

    is_discrete = False
    event_dim = 0

    def check(self, value) -> Tensor:
        return Tensor._wrap(np.asarray(self._check(_array(value))))

    def _check(self, x):  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__.lstrip("_") + "()"


class _Dependent(Constraint):
    """Placeholder for a support that depends on other variables; cannot be checked."""

    def __init__(self, *, is_discrete=False, event_dim=0):
        self.is_discrete = is_discrete
        self.event_dim = event_dim

    def __call__(self, *, is_discrete=False, event_dim=0):
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def _check(self, x):
        raise ValueError("cannot determine validity of a dependent constraint")


def is_dependent(constraint) -> bool:
    return isinstance(constraint, _Dependent)


class dependent_property(property):
    """A property that marks the distribution's support as depending on its parameters."""

    def __init__(self, fn=None, *, is_discrete=False, event_dim=0):
        super().__init__(fn)
        self.is_discrete = is_discrete
        self.event_dim = event_dim

    def __call__(self, fn):
        return dependent_property(fn, is_discrete=self.is_discrete, event_dim=self.event_dim)


class _IndependentConstraint(Constraint):
    def __init__(self, base, reinterpreted_batch_ndims):
        self.base_constraint = base
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        self.is_discrete = base.is_discrete
        self.event_dim = base.event_dim + reinterpreted_batch_ndims

    def _check(self, x):
        ok = self.base_constraint._check(x)
        n = self.reinterpreted_batch_ndims
        if n:
            ok = np.all(ok, axis=tuple(range(-n, 0)))
        return ok

    def __repr__(self):
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


independent = _IndependentConstraint


class _Boolean(Constraint):
    is_discrete = True

    def _check(self, x):
        return (x == 0) | (x == 1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def _check(self, x):
        return np.all((x == 0) | (x == 1), axis=-1) & (x.sum(-1) == 1)


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def _check(self, x):
        return (x % 1 == 0) & (x >= _array(self.lower_bound)) & (x <= _array(self.upper_bound))

    def __repr__(self):
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def _check(self, x):
        return (x % 1 == 0) & (x >= self.lower_bound)

    def __repr__(self):
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _Real(Constraint):
    def _check(self, x):
        return x == x  # False only for NaN


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def _check(self, x):
        with np.errstate(invalid="ignore"):
            return _array(self.lower_bound) < x

    def __repr__(self):
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _GreaterThanEq(_GreaterThan):
    def _check(self, x):
        with np.errstate(invalid="ignore"):
            return _array(self.lower_bound) <= x

    def __repr__(self):
        return f"GreaterThanEq(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def _check(self, x):
        with np.errstate(invalid="ignore"):
            return x < _array(self.upper_bound)

    def __repr__(self):
        return f"LessThan(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def _check(self, x):
        with np.errstate(invalid="ignore"):
            return (_array(self.lower_bound) <= x) & (x <= _array(self.upper_bound))

    def __repr__(self):
        return f"Interval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(_Interval):
    def _check(self, x):
        with np.errstate(invalid="ignore"):
            return (_array(self.lower_bound) <= x) & (x < _array(self.upper_bound))

    def __repr__(self):
        return f"HalfOpenInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Simplex(Constraint):
    event_dim = 1

    def _check(self, x):
        return np.all(x >= 0, axis=-1) & (np.abs(x.sum(-1) - 1) < 1e-6)


class _LowerTriangular(Constraint):
    event_dim = 2

    def _check(self, x):
        return np.all(np.tril(x) == x, axis=(-2, -1))


class _LowerCholesky(Constraint):
    event_dim = 2

    def _check(self, x):
        lower = np.all(np.tril(x) == x, axis=(-2, -1))
        return lower & np.all(np.diagonal(x, axis1=-2, axis2=-1) > 0, axis=-1)


class _Symmetric(Constraint):
    event_dim = 2

    def _check(self, x):
        return np.all(np.isclose(x, np.swapaxes(x, -1, -2), atol=1e-6), axis=(-2, -1))


class _PositiveDefinite(_Symmetric):
    def _check(self, x):
        sym = super()._check(x)
        with np.errstate(invalid="ignore"):
            eig = np.linalg.eigvalsh(x)
        return sym & np.all(eig > 0, axis=-1)


class _PositiveSemidefinite(_Symmetric):
    def _check(self, x):
        sym = super()._check(x)
        return sym & np.all(np.linalg.eigvalsh(x) >= 0, axis=-1)


class _Multinomial(Constraint):
    """Nonnegative integer counts over the last dim summing to at most ``upper_bound``."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def _check(self, x):
        return np.all(x >= 0, axis=-1) & (x.sum(-1) <= self.upper_bound)


class _Square(Constraint):
    event_dim = 2

    def _check(self, x):
        return np.full(x.shape[:-2], x.shape[-2] == x.shape[-1], dtype=bool)


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices: rows of unit norm."""

    event_dim = 2

    def _check(self, x):
        tol = np.finfo(x.dtype).eps * x.shape[-1] * 10
        unit_rows = np.all(np.abs(np.linalg.norm(x, axis=-1) - 1) <= tol, axis=-1)
        return _LowerCholesky()._check(x) & unit_rows


class _Cat(Constraint):
    """``cseq[i]`` on the ``lengths[i]`` slices of ``dim``, in order (as torch.cat)."""

    def __init__(self, cseq, dim=0, lengths=None):
        self.cseq = list(cseq)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.cseq)
        self.dim = dim
        self.is_discrete = any(c.is_discrete for c in self.cseq)
        self.event_dim = max(c.event_dim for c in self.cseq)

    def _check(self, x):
        parts, start = [], 0
        for c, n in zip(self.cseq, self.lengths):
            parts.append(c._check(np.take(x, range(start, start + n), axis=self.dim)))
            start += n
        return np.concatenate(parts, self.dim)


class _Stack(Constraint):
    """``cseq[i]`` on index i of ``dim`` (as torch.stack)."""

    def __init__(self, cseq, dim=0):
        self.cseq = list(cseq)
        self.dim = dim
        self.is_discrete = any(c.is_discrete for c in self.cseq)
        self.event_dim = max(c.event_dim for c in self.cseq)

    def _check(self, x):
        parts = [c._check(np.take(x, i, axis=self.dim)) for i, c in enumerate(self.cseq)]
        return np.stack(parts, self.dim)


class MixtureSameFamilyConstraint(Constraint):
    """The component support, checked with the mixture dim reduced (any component)."""

    def __init__(self, base_constraint):
        self.base_constraint = base_constraint
        self.is_discrete = base_constraint.is_discrete
        self.event_dim = base_constraint.event_dim

    def _check(self, x):
        ok = self.base_constraint._check(np.expand_dims(x, -1 - self.event_dim))
        keep = x.ndim - self.event_dim
        return np.all(np.reshape(ok, np.shape(ok)[:keep] + (-1,)), axis=-1)

    def __repr__(self):
        return f"MixtureSameFamilyConstraint({self.base_constraint!r})"


dependent = _Dependent()
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
symmetric = _Symmetric()
positive_definite = _PositiveDefinite()
positive_semidefinite = _PositiveSemidefinite()
corr_cholesky = _CorrCholesky()
square = _Square()
multinomial = _Multinomial
cat = _Cat
stack = _Stack
