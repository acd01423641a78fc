"""``biject_to(constraint)`` and ``transform_to(constraint)``: a transform from unconstrained
space onto a constraint's set (bijective for ``biject_to``), looked up by the constraint's
class (as ``torch.distributions.constraint_registry``).

>>> import tapegrad as tg
>>> from tapegrad.distributions import constraints, transform_to
>>> transform_to(constraints.positive)(tg.tensor([0.0])).item()
1.0
"""

from __future__ import annotations

import numbers

from . import constraints
from . import transforms as T

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """Constraint class -> factory ``fn(constraint) -> Transform``."""

    def __init__(self):
        self._registry = {}

    def register(self, constraint, factory=None):
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError(
                "Expected constraint to be either a Constraint subclass or instance, "
                f"but got {constraint}"
            )
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(
                f"Cannot transform {type(constraint).__name__} constraints"
            ) from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _both(constraint):
    def deco(fn):
        biject_to.register(constraint, fn)
        transform_to.register(constraint, fn)
        return fn

    return deco


@_both(constraints.real)
def _to_real(constraint):
    return T.identity_transform


@biject_to.register(constraints.independent)
def _biject_independent(constraint):
    base = biject_to(constraint.base_constraint)
    return T.IndependentTransform(base, constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_independent(constraint):
    base = transform_to(constraint.base_constraint)
    return T.IndependentTransform(base, constraint.reinterpreted_batch_ndims)


@_both(constraints.greater_than)
@_both(constraints.greater_than_eq)
def _to_greater_than(constraint):
    return T.ComposeTransform([T.ExpTransform(), T.AffineTransform(constraint.lower_bound, 1)])


@_both(constraints.less_than)
def _to_less_than(constraint):
    return T.ComposeTransform([T.ExpTransform(), T.AffineTransform(constraint.upper_bound, -1)])


@_both(constraints.interval)
@_both(constraints.half_open_interval)
def _to_interval(constraint):
    lower, upper = constraint.lower_bound, constraint.upper_bound
    is_number = isinstance(lower, numbers.Number) and isinstance(upper, numbers.Number)
    if is_number and lower == 0 and upper == 1:
        return T.SigmoidTransform()
    return T.ComposeTransform([T.SigmoidTransform(), T.AffineTransform(lower, upper - lower)])


@biject_to.register(constraints.simplex)
def _biject_simplex(constraint):
    return T.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_simplex(constraint):
    return T.SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_lower_cholesky(constraint):
    return T.LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_positive_definite(constraint):
    return T.PositiveDefiniteTransform()


@_both(constraints.corr_cholesky)
def _to_corr_cholesky(constraint):
    return T.CorrCholeskyTransform()


@biject_to.register(constraints.cat)
def _biject_cat(constraint):
    parts = [biject_to(c) for c in constraint.cseq]
    return T.CatTransform(parts, constraint.dim, constraint.lengths)


@transform_to.register(constraints.cat)
def _transform_cat(constraint):
    parts = [transform_to(c) for c in constraint.cseq]
    return T.CatTransform(parts, constraint.dim, constraint.lengths)


@biject_to.register(constraints.stack)
def _biject_stack(constraint):
    return T.StackTransform([biject_to(c) for c in constraint.cseq], constraint.dim)


@transform_to.register(constraints.stack)
def _transform_stack(constraint):
    return T.StackTransform([transform_to(c) for c in constraint.cseq], constraint.dim)
