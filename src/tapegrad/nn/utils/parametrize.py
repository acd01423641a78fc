"""``torch.nn.utils.parametrize``: a parameter or buffer computed by a module from stored
originals (``module.weight = P(original)``), with torch's attribute and state-dict layout.

Registering a parametrization on ``module.weight`` moves the tensor to
``module.parametrizations.weight.original`` (``original0, original1, ...`` when the
parametrization's ``right_inverse`` returns several tensors) and swaps the module's
class for a subclass named ``Parametrized<Class>`` whose ``weight`` property runs the
parametrizations each time it is read (or once per :func:`cached` block).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager

from ...grad_mode import no_grad
from ...tensor import Tensor
from ..container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = [
    "register_parametrization",
    "remove_parametrizations",
    "is_parametrized",
    "cached",
    "type_before_parametrizations",
    "transfer_parametrizations_and_params",
    "ParametrizationList",
]

_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached():
    """Inside this block each parametrized tensor is computed once, on first read."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register(module, name, tensor):
    if isinstance(tensor, Parameter):
        module.register_parameter(name, tensor)
    else:
        module.register_buffer(name, tensor)


def _set_value(original, value):
    """``original.set_(value)``: ``original`` now holds ``value``'s data (its own copy)."""
    array = value._data.copy() if value._data is not original._data else value._data
    original.data = Tensor._wrap(array)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and its originals."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        shape, dtype = tuple(original.shape), original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:  # torch takes right_inverse as the identity
                        pass
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type(new).__name__}"
            )
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}"
                )
            with no_grad():
                _set_value(original, new)
            _register(self, "original", original)
        else:
            for i, item in enumerate(new):
                if not isinstance(item, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors "
                        f"(list, tuple...). Got element {i} of the sequence with type "
                        f"{type(item).__name__}."
                    )
                item = item.detach().clone()
                if isinstance(original, Parameter):
                    item = Parameter(item, original.requires_grad)
                item.requires_grad_(original.requires_grad)
                _register(self, f"original{i}", item)
        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            if z.dtype != dtype or tuple(z.shape) != shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape or dtype of the "
                    f"tensor, unless `unsafe` flag is enabled.\nunparametrized dtype: {dtype}\n"
                    f"parametrized dtype: {z.dtype}\nunparametrized shape: {list(shape)}\n"
                    f"parametrized shape: {list(z.shape)}"
                )

    def right_inverse(self, value):
        """Set the originals so that the parametrized tensor equals ``value``."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(
                        f"parametrization {type(module).__name__} does not implement right_inverse."
                    )
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value)}")
                _set_value(self.original, value)
            else:
                if len(value) != self.ntensors:
                    raise ValueError(
                        f"'right_inverse' must return a sequence of tensors of length "
                        f"{self.ntensors}. Got a sequence of length {len(value)}."
                    )
                for i, item in enumerate(value):
                    _set_value(getattr(self, f"original{i}"), item)

    def forward(self):
        mods = list(self)
        if self.is_tensor:
            x = mods[0](self.original)
        else:
            x = mods[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in mods[1:]:
            x = module(x)
        return x


def _inject_new_class(module):
    cls = module.__class__
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {})


def _inject_property(module, tensor_name):
    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            tensor = _cache.get(key)
            if tensor is None:
                tensor = _cache[key] = parametrization()
            return tensor
        return parametrization()

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def is_parametrized(module, tensor_name=None):
    """Whether ``module`` has parametrizations (on ``tensor_name``, when given)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make ``module.<tensor_name>`` the output of ``parametrization`` applied to the
    stored original (see the module docstring). Registering again on the same name
    chains the new parametrization after the existing ones.

    >>> import tapegrad as tg
    >>> class Symmetric(tg.nn.Module):
    ...     def forward(self, X):
    ...         return (X + X.mT) / 2
    >>> layer = tg.nn.Linear(3, 3)
    >>> _ = tg.nn.utils.parametrize.register_parametrization(layer, "weight", Symmetric())
    >>> (layer.weight - layer.weight.mT).abs().max().item()
    0.0
    >>> sorted(layer.state_dict())
    ['bias', 'parametrizations.weight.original']

    Raises:
        ValueError: ``module`` has no parameter or buffer called ``tensor_name``, or the
            parametrization changes its shape or dtype (unless ``unsafe``).
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
            if x.dtype != y.dtype or tuple(x.shape) != tuple(y.shape):
                raise ValueError(
                    "Registering a parametrization may not change the shape or dtype of the "
                    "tensor, unless the `unsafe` flag is enabled."
                )
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element "
            f"with name '{tensor_name}'"
        )
    return module


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo :func:`register_parametrization` on ``tensor_name``: the tensor becomes a plain
    parameter (or buffer) again, holding the parametrized value (``leave_parametrized``)
    or the original.

    Raises:
        ValueError: ``tensor_name`` is not parametrized, or it has several originals and
            ``leave_parametrized`` is False.
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _set_value(original, t)
    else:
        if not leave_parametrized:
            raise ValueError(
                "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                "parametrized in terms of a sequence of tensors."
            )
        with no_grad():
            t = getattr(module, tensor_name)
        first = plist.original0
        original = (
            Parameter(t.detach().clone(), first.requires_grad)
            if isinstance(first, Parameter)
            else t.detach().clone()
        )
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class before any parametrization was registered."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Copy the parametrizations (and their originals) of ``from_module`` to ``to_module``."""
    if not is_parametrized(from_module):
        return to_module
    names = [tensor_name] if tensor_name is not None else list(from_module.parametrizations)
    for name in names:
        plist = from_module.parametrizations[name]
        if name not in to_module._parameters and not is_parametrized(to_module, name):
            value = plist.original if plist.is_tensor else getattr(from_module, name)
            to_module.register_parameter(name, Parameter(value.detach().clone()))
        for p in plist:
            register_parametrization(to_module, name, p)
        target = to_module.parametrizations[name]
        with no_grad():
            if plist.is_tensor:
                _set_value(target.original, plist.original)
            else:
                for i in range(plist.ntensors):
                    _set_value(getattr(target, f"original{i}"), getattr(plist, f"original{i}"))
    return to_module
