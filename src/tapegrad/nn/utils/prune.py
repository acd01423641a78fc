"""``torch.nn.utils.prune``: zero out entries (or whole channels) of a module's tensor.

Pruning ``name`` reparametrises it as torch does: the parameter moves to ``<name>_orig``,
a buffer ``<name>_mask`` holds the 0/1 mask, and a forward pre-hook (the pruning method
itself) recomputes the plain attribute ``<name> = <name>_mask * <name>_orig`` before every
forward, so gradients reach ``<name>_orig`` masked and the state dict has torch's keys.
Pruning the same tensor again composes the masks in a :class:`PruningContainer`: the new
method only sees what is still unpruned. :func:`remove` makes the pruning permanent.

>>> import tapegrad as tg
>>> from tapegrad.nn.utils import prune
>>> m = tg.nn.Linear(3, 2)
>>> with tg.no_grad():
...     _ = m.weight.copy_(tg.tensor([[1.0, -4.0, 2.0], [0.5, 3.0, -6.0]]))
...     _ = prune.l1_unstructured(m, "weight", amount=2)
>>> m.weight
tensor([[ 0., -4.,  2.],
        [ 0.,  3., -6.]])
>>> sorted(m.state_dict())
['bias', 'weight_mask', 'weight_orig']
"""

from __future__ import annotations

from collections.abc import Iterable

from ...creation import ones_like, rand, rand_like, zeros_like
from ...strided_creation import contiguous_format
from ._prune_base import (
    BasePruningMethod,
    PruningContainer,
    _drop_entry,
    _nparams_toprune,
    _pruning_entries,
    _validate_pruning_amount_init,
    _validate_structured,
)
from ._prune_ties import topk_flat_indices
from .convert_parameters import parameters_to_vector

__all__ = [
    "BasePruningMethod",
    "PruningContainer",
    "Identity",
    "RandomUnstructured",
    "L1Unstructured",
    "RandomStructured",
    "LnStructured",
    "CustomFromMask",
    "identity",
    "random_unstructured",
    "l1_unstructured",
    "random_structured",
    "ln_structured",
    "global_unstructured",
    "custom_from_mask",
    "remove",
    "is_pruned",
]


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (a reparametrisation without pruning)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        """Reparametrise ``module.<name>`` with an all-ones mask."""
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prunes ``amount`` entries (an int count, or a float fraction) chosen at random
    (tapegrad's RNG: reproducible with ``manual_seed``, not torch's draws)."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        k = _nparams_toprune(self.amount, t.nelement())
        mask = default_mask.clone(memory_format=contiguous_format)
        if k != 0:
            mask.view(-1)[topk_flat_indices(rand_like(t), k, largest=True)] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount):
        """Prune ``amount`` random entries of ``module.<name>``."""
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the ``amount`` entries of smallest absolute value (``topk`` of ``|t|``; among
    equal values the ones torch's CPU ``topk`` picks, Note [Ties in pruning])."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        k = _nparams_toprune(self.amount, t.nelement())
        mask = default_mask.clone(memory_format=contiguous_format)
        if k != 0:
            mask.view(-1)[topk_flat_indices(t.abs(), k, largest=False)] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        """Prune the ``amount`` smallest entries of ``importance_scores`` (default: the
        tensor itself) in ``module.<name>``."""
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` whole channels along ``dim``, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        """Zero the chosen channels on top of ``default_mask``.

        Raises:
            ValueError: ``t`` has fewer than 2 dims, or ``amount`` exceeds the channels.
            IndexError: ``dim`` is out of range.
        """
        nchannels = _validate_structured(t, self.dim)
        k = _nparams_toprune(self.amount, nchannels)
        if k == 0:
            return default_mask
        prob = rand(nchannels)
        keep = prob > prob.kthvalue(k).values
        mask = _channel_mask(t, self.dim, keep)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        """Prune ``amount`` random channels of ``module.<name>`` along ``dim``."""
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels along ``dim`` of smallest L``n`` norm (``n`` as
    ``torch.norm``'s ``p``: an int, float, ``inf``, ``-inf``, ``"fro"``)."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        """Keep the channels of largest norm, on top of ``default_mask``.

        Raises:
            ValueError: ``t`` has fewer than 2 dims, or ``amount`` exceeds the channels.
            IndexError: ``dim`` is out of range.
        """
        nchannels = _validate_structured(t, self.dim)
        k = _nparams_toprune(self.amount, nchannels)
        dims = list(range(t.dim()))
        dims.remove(dims[self.dim])
        keep = topk_flat_indices(t.norm(p=self.n, dim=dims), nchannels - k, largest=True)
        if k == 0:
            return default_mask
        mask = _channel_mask(t, self.dim, keep)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        """Prune the ``amount`` channels of ``module.<name>`` along ``dim`` of smallest
        L``n`` norm (of ``importance_scores`` if given)."""
        return super().apply(
            module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores
        )


class CustomFromMask(BasePruningMethod):
    """Prunes with a given mask (times any mask already there)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError(
                f"default_mask shape {default_mask.shape} must match "
                f"self.mask shape {self.mask.shape}"
            )
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        """Prune ``module.<name>`` where ``mask`` is 0."""
        return super().apply(module, name, mask=mask)


def _channel_mask(t, dim, keep):
    """Zeros like ``t`` with ones on the channels ``keep`` (bool mask or indices) of ``dim``."""
    mask = zeros_like(t)
    slc = [slice(None)] * t.dim()
    slc[dim] = keep
    mask[tuple(slc)] = 1
    return mask


def identity(module, name):
    """Apply :class:`Identity` to ``module.<name>``; returns ``module``."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune ``amount`` (int count or float fraction) random entries of ``module.<name>``;
    returns ``module``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the ``amount`` entries of ``module.<name>`` of smallest absolute value (of
    ``importance_scores`` if given); returns ``module``.

    Raises:
        TypeError: ``amount`` is neither int nor float.
        ValueError: a float ``amount`` outside [0, 1], a negative int, or more entries
            than the tensor has.
    """
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune ``amount`` random channels of ``module.<name>`` along ``dim``; returns
    ``module``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the ``amount`` channels of ``module.<name>`` along ``dim`` of smallest L``n``
    norm; returns ``module``."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the ``(module, name)`` tensors of ``parameters`` together: one unstructured
    ``pruning_method(**kwargs)`` over all their entries (``amount`` counts them all), each
    tensor then gets its share as a :class:`CustomFromMask`.

    Raises:
        TypeError: ``parameters`` is not iterable, ``importance_scores`` not a dict, or the
            method not unstructured.
    """
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    relevant_importance_scores = parameters_to_vector(
        [
            importance_scores.get((module, name), getattr(module, name))
            for module, name in parameters
        ]
    )
    default_mask = parameters_to_vector(
        [
            getattr(module, name + "_mask", ones_like(getattr(module, name)))
            for module, name in parameters
        ]
    )
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(
            'Only "unstructured" PRUNING_TYPE supported for '
            f"the `pruning_method`. Found method {pruning_method} of type {method.PRUNING_TYPE}"
        )
    container.add_pruning_method(method)
    final_mask = container.compute_mask(relevant_importance_scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        num_param = param.numel()
        custom_from_mask(
            module, name, mask=final_mask[pointer : pointer + num_param].view_as(param)
        )
        pointer += num_param


def custom_from_mask(module, name, mask):
    """Prune ``module.<name>`` where ``mask`` is 0; returns ``module``."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent: drop ``<name>_orig``, ``<name>_mask``
    and the hook; ``<name>`` is a parameter again, with the pruned values.

    Raises:
        ValueError: ``name`` is not pruned.
    """
    for entry, method in _pruning_entries(module, name):
        method.remove(module)
        _drop_entry(module, entry)
        return module
    raise ValueError(
        f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed"
    )


def is_pruned(module):
    """Whether ``module`` or any submodule has a pruning pre-hook."""
    return any(_pruning_entries(sub) for _, sub in module.named_modules())
