"""The machinery of ``nn.utils.prune`` (see there): the pruning-method base class that is
also the forward pre-hook, the container that composes iterative pruning, and torch's
checks of ``amount`` and ``dim``."""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod

from ...creation import ones_like
from ...strided_creation import contiguous_format
from .._hooks import _fn

__all__ = ["BasePruningMethod", "PruningContainer"]

# Note [Pruning hooks in a list]: torch keeps forward pre-hooks in an OrderedDict keyed by
# handle id and finds a pruning method with ``_forward_pre_hooks.items()``; tapegrad keeps
# them in a ``_hooks.HookList`` of ``Hook`` entries (``.fn`` is the method; ``values()``
# and ``items()`` answer user code written for torch's dict). The helpers below are the
# one place that reads and edits that list, so the rest is torch's code, step for step.


def _pruning_entries(module, name=None):
    """``(entry, method)`` for each pruning pre-hook of ``module`` (on ``name`` if given)."""
    return [
        (entry, _fn(entry))
        for entry in module._forward_pre_hooks
        if isinstance(_fn(entry), BasePruningMethod)
        and (name is None or _fn(entry)._tensor_name == name)
    ]


def _drop_entry(module, entry):
    module._forward_pre_hooks[:] = [e for e in module._forward_pre_hooks if e is not entry]


class BasePruningMethod(ABC):
    """The base of every pruning method: subclasses define ``compute_mask(t, default_mask)``
    and ``PRUNING_TYPE`` (``"unstructured"``, ``"structured"`` with a ``dim``, or
    ``"global"``). An instance is the forward pre-hook that recomputes the pruned tensor."""

    _tensor_name: str

    def __call__(self, module, inputs):
        """Set ``module.<name>`` to the masked tensor before the forward."""
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The new mask for ``t``, on top of ``default_mask`` (same shape as ``t``)."""

    def apply_mask(self, module):
        """``<name>_mask * <name>_orig`` (the mask cast to the tensor's dtype)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)`` (composed with any pruning
        already there) and return the method registered as the pre-hook.

        Raises:
            AssertionError: ``importance_scores`` has another shape than the tensor.
        """
        method = _composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(
                    f"importance_scores should have the same shape as parameter "
                    f"{name} of {module}, got {importance_scores.shape} vs {orig.shape}"
                )
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):  # first pruning of `name`
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ones_like(orig)
        else:
            default_mask = (
                getattr(module, name + "_mask").detach().clone(memory_format=contiguous_format)
            )
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if not isinstance(method, PruningContainer):  # roll back, as torch
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times the mask this method computes for it (the module is not touched)."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError(
                    f"importance_scores should have the same shape as tensor t, "
                    f"got {importance_scores.shape} vs {t.shape}"
                )
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        """Make the pruning permanent: ``<name>`` becomes a parameter holding the pruned
        values (the ``<name>_orig`` Parameter object, its data replaced)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _composite_method(cls, module, name, *args, **kwargs):
    """The new method, added to the pruning already on ``name`` (whose hook is taken off)."""
    found = _pruning_entries(module, name)
    if len(found) > 1:
        raise AssertionError(
            f"Avoid adding multiple pruning hooks to the "
            f"same tensor {name} of module {module}. Use a PruningContainer."
        )
    for entry, _ in found:
        _drop_entry(module, entry)
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if found:
        old = found[0][1]
        if isinstance(old, PruningContainer):
            old.add_pruning_method(method)
            return old
        container = PruningContainer(old)
        container.add_pruning_method(method)
        return container
    return method


class PruningContainer(BasePruningMethod):
    """A sequence of pruning methods on one tensor (iterative pruning); its mask is the
    last method's, computed on what the earlier ones left unpruned."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:  # none, or several (torch then needs `_tensor_name` set first, as here)
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method):
        """Append ``method``.

        Raises:
            TypeError: ``method`` is not a BasePruningMethod.
            ValueError: it prunes another tensor than the container's.
        """
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        elif method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(
                "Can only add pruning methods acting on "
                f"the parameter named '{self._tensor_name}' to PruningContainer {self}."
                + f" Found '{method._tensor_name}'"
            )
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """``default_mask`` with the last method's mask written on the slice of ``t`` still
        unpruned: the entries where the mask is 1 (unstructured), the channels along
        ``dim`` not all zero (structured), or everything (global)."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        slc = _unpruned_slice(method, t, default_mask)
        partial_mask = method.compute_mask(t[slc], default_mask=default_mask[slc])
        new_mask[slc] = partial_mask.to(dtype=new_mask.dtype)
        return new_mask


def _unpruned_slice(method, t, mask):
    kind = method.PRUNING_TYPE
    if kind == "unstructured":
        return mask == 1
    n_dims = t.dim()
    slc = [slice(None)] * n_dims
    if kind == "structured":
        if not hasattr(method, "dim"):
            raise AttributeError(
                'Pruning methods of PRUNING_TYPE "structured" need to have the attribute '
                "`dim` defined."
            )
        dim = method.dim + n_dims if method.dim < 0 else method.dim
        if dim < 0:
            raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
        slc[dim] = mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
    elif kind != "global":
        raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
    return tuple(slc)


def _validate_pruning_amount_init(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
        not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)
    ):
        raise ValueError(
            f"amount={amount} should either be a float in the range [0, 1] or a non-negative "
            "integer"
        )


def _nparams_toprune(amount, tensor_size):
    """The count to prune: ``amount`` itself (checked against ``tensor_size``) or a rounded
    fraction of ``tensor_size``."""
    if isinstance(amount, numbers.Integral):
        if amount > tensor_size:
            raise ValueError(
                f"amount={amount} should be smaller than the number of parameters to "
                f"prune={tensor_size}"
            )
        return amount
    return round(amount * tensor_size)


def _validate_structured(t, dim):
    """The number of channels of ``t`` along ``dim``, after torch's checks."""
    shape = t.shape
    if len(shape) <= 1:
        raise ValueError(
            "Structured pruning can only be applied to multidimensional tensors. Found tensor "
            f"of shape {shape} with {len(shape)} dims"
        )
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")
    return t.shape[dim]
