"""The Distribution base class (``torch.distributions.Distribution``).

Note [Distribution shapes]
``sample(sample_shape)`` has shape ``sample_shape + batch_shape + event_shape``;
``log_prob(value)`` reduces the event dims and returns ``sample_shape + batch_shape``.
"""

from __future__ import annotations

import numpy as np

import tapegrad as tg

from ..tensor import Tensor
from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


class Distribution:
    """Base class: subclasses set ``arg_constraints``, ``support``, and implement ``rsample``
    (or ``sample``), ``log_prob`` and whatever else they can."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = True
    arg_constraints: dict = {}
    support = None

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        if value not in (True, False):
            raise ValueError("set_default_validate_args expects True or False")
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(
                    getattr(type(self), param, None), lazy_property
                ):
                    continue  # not given: computed lazily from another parametrisation
                value = getattr(self, param)
                valid = constraint.check(value)
                if not bool(np.all(valid._data)):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}"
                    )

    # -- shapes --------------------------------------------------------------------------

    @property
    def batch_shape(self) -> tuple:
        return tg.Size(self._batch_shape) if hasattr(tg, "Size") else self._batch_shape

    @property
    def event_shape(self) -> tuple:
        return tg.Size(self._event_shape) if hasattr(tg, "Size") else self._event_shape

    def _extended_shape(self, sample_shape=()) -> tuple:
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        return tuple(sample_shape) + self._batch_shape + self._event_shape

    def expand(self, batch_shape, _instance=None):
        raise NotImplementedError(f"{type(self).__name__}.expand is not implemented")

    def _get_checked_instance(self, cls, _instance=None):
        """The instance ``expand`` fills: ``_instance``, or a bare one of ``type(self)``
        (a subclass with its own ``__init__`` must define its own ``expand``, as torch)."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {type(self).__name__} of {cls.__name__} that defines a custom "
                "__init__() method must also define a custom .expand() method."
            )
        return type(self).__new__(type(self)) if _instance is None else _instance

    def _expand_probs_or_logits(self, new, shape):
        """The end of ``expand`` for a family parametrised by ``probs`` or ``logits``: the one
        ``self`` holds (both, once the other was read) expanded onto ``new``, ``new._param``
        set, and ``new`` initialised without validation, as torch's families do."""
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(shape))
                new._param = getattr(new, name)
        Distribution.__init__(new, shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    # -- statistics ----------------------------------------------------------------------

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def entropy(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no entropy")

    def perplexity(self) -> Tensor:
        return tg.exp(self.entropy())

    def cdf(self, value) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no cdf")

    def icdf(self, value) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no icdf")

    def enumerate_support(self, expand=True) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} cannot enumerate its support")

    # -- sampling ------------------------------------------------------------------------

    def sample(self, sample_shape=()) -> Tensor:
        """Draw a sample (no gradient flows to the parameters)."""
        with tg.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        raise NotImplementedError(
            f"{type(self).__name__} has no reparameterized sample (rsample); use sample()"
        )

    def sample_n(self, n: int) -> Tensor:
        return self.sample((n,))

    def log_prob(self, value) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no log_prob")

    def _validate_sample(self, value) -> None:
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.shape) - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != self._event_shape:
            raise ValueError(
                f"The right-most size of value must match event_shape: {tuple(value.shape)} "
                f"vs {self._event_shape}."
            )
        actual = tuple(value.shape)
        expected = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(
                    f"Value is not broadcastable with batch_shape+event_shape: {actual} vs "
                    f"{expected}."
                )
        support = self.support
        if support is None or constraints.is_dependent(support):
            return
        valid = support.check(value)
        if not bool(np.all(valid._data)):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) of the distribution {self!r}, "
                f"but found invalid values:\n{value}"
            )

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(
            f"{k}: {self.__dict__[k] if self.__dict__[k].numel() == 1 else self.__dict__[k].size()}"
            for k in names
        )
        return f"{type(self).__name__}({args})"
