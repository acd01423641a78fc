"""Module: the base class of layers, with PyTorch's registration and traversal API.

Assigning a Parameter, a Module or (for a registered name) a buffer to an
attribute registers it; ``named_parameters``/``named_buffers``/``named_modules``
walk the tree in registration order with dotted names, which is also the key
order of ``state_dict``.
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple

import numpy as np

from .. import _dtypes
from ..grad_mode import no_grad
from ..tensor import Tensor
from . import _hooks
from ._uninitialized import _SHAPE_MESSAGE, UninitializedBuffer, is_lazy
from .buffer import Buffer
from .parameter import Parameter

__all__ = ["Module"]

# assigning one of these to an attribute registers a buffer (as torch's nn.Buffer)
_BUFFER_TYPES = (Buffer, UninitializedBuffer)
IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Module:
    """Base class of all layers; subclasses define ``forward``.

    >>> import tapegrad as tg
    >>> class Affine(tg.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.scale = tg.nn.Parameter(tg.ones(2))
    ...     def forward(self, x):
    ...         return x * self.scale
    >>> [name for name, _ in Affine().named_parameters()]
    ['scale']
    """

    training: bool

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", _hooks.HookList())
        object.__setattr__(self, "_forward_hooks", _hooks.HookList())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    def __call__(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks or self.__dict__.get("_bw")):
            return self.forward(*args, **kwargs)
        return _hooks.call_with_hooks(self, args, kwargs)

    # -- registration ----------------------------------------------------------------------

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, params)
            params[name] = value
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(tapegrad.nn.Parameter or None expected)"
                )
            params[name] = None
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, self._modules)
            self._modules[name] = value
        elif name in self.__dict__.get("_modules", ()):
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' "
                    "(tapegrad.nn.Module or None expected)"
                )
            self._modules[name] = None
        elif name in self.__dict__.get("_buffers", ()):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                    "(tapegrad.Tensor or None expected)"
                )
            if isinstance(value, _BUFFER_TYPES):
                self.register_buffer(name, value, value.persistent)
            else:
                self._buffers[name] = value
        elif isinstance(value, _BUFFER_TYPES):  # an nn.Buffer (or lazy buffer)
            if params is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self.register_buffer(name, value, value.persistent)
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name, keep=None):
        """Drop ``name`` from every table but ``keep``, the one it is assigned into: a
        child, parameter or buffer assigned again keeps its position (as in PyTorch), so
        the order of ``parameters()`` and ``state_dict()`` does not change."""
        self.__dict__.pop(name, None)
        for table in (self._parameters, self._buffers, self._modules):
            if table is not keep:
                table.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name):
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            entries = d.get(table)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def _check_name(self, name, kind, table):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
        if name == "" or "." in name:
            raise KeyError(f'{kind} name can\'t be empty or contain ".", got: {name!r}')
        # as torch: a name held by a plain attribute or by another table is taken
        if name not in table and (
            name in self.__dict__
            or any(name in t for t in (self._parameters, self._buffers, self._modules))
        ):
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name, param):
        """Register ``param`` (a Parameter or None) under ``name``."""
        self._check_name(name, "parameter", self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(tapegrad.nn.Parameter or None required)"
            )
        self._forget(name, self._parameters)
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Register a non-learnable tensor (saved in state_dict unless ``persistent=False``)."""
        self._check_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                "(tapegrad.Tensor or None required)"
            )
        self._forget(name, self._buffers)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        """Register ``module`` (a Module or None) as a child called ``name``."""
        self._check_name(name, "module", self._modules)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._forget(name, self._modules)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` (``''`` is self)."""
        mod = self
        for part in target.split(".") if target else ():
            child = mod._modules.get(part)
            if child is None:
                raise AttributeError(f"{type(mod).__name__} has no submodule `{part}`")
            mod = child
        return mod

    # -- traversal -------------------------------------------------------------------------

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """Yield ``(dotted_name, module)`` for self and every descendant, each once."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = f"{prefix}.{name}" if prefix else name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, table, prefix, recurse, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
        if not recurse:
            mods = [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, value in getattr(mod, table).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """Yield ``(dotted_name, Parameter)``; a parameter shared by two modules appears once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # -- state -----------------------------------------------------------------------------

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """An ordered dict of every parameter and persistent buffer by dotted name.

        Values share memory with the module's tensors (detached unless ``keep_vars``).
        """
        if destination is None:
            destination = OrderedDict()
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars or is_lazy(p) else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars or is_lazy(b) else b.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination, prefix + name + ".", keep_vars)
        return destination

    def load_state_dict(self, state_dict, strict=True):
        """Copy values from ``state_dict`` into this module's parameters and buffers, in place.

        Returns:
            ``(missing_keys, unexpected_keys)`` as a named tuple.

        Raises:
            RuntimeError: listing missing and unexpected keys (when ``strict``) and
                every shape mismatch (always), before anything is modified.
        """
        for path, m in self.named_modules():  # lazy modules materialise to the loaded shapes
            hook = getattr(type(m), "_lazy_load_hook", None)
            if hook is not None:
                hook(m, state_dict, path + "." if path else "")
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        updates = []
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            if is_lazy(target) or is_lazy(value):  # Note [Uninitialized tensors]
                if not is_lazy(target):
                    raise RuntimeError(_SHAPE_MESSAGE)
                continue  # an uninitialized value into an uninitialized tensor: nothing
            array = value._data if isinstance(value, Tensor) else np.asarray(value)
            if array.shape != target._data.shape:
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {list(array.shape)} "
                    f"from checkpoint, the shape in current model is {list(target._data.shape)}."
                )
            else:
                updates.append((target, array))
        if strict:
            if unexpected:
                keys = ", ".join(f'"{k}"' for k in unexpected)
                errors.insert(0, f"Unexpected key(s) in state_dict: {keys}. ")
            if missing:
                keys = ", ".join(f'"{k}"' for k in missing)
                errors.insert(0, f"Missing key(s) in state_dict: {keys}. ")
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                + "\n\t".join(errors)
            )
        with no_grad():
            for target, array in updates:
                np.copyto(target._data, array, casting="unsafe")
                target._vc.bump("load_state_dict")
        return IncompatibleKeys(missing, unexpected)

    # -- modes and bulk changes ------------------------------------------------------------

    def train(self, mode=True):
        """Set training mode on self and every descendant; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        """Evaluation mode (dropout off, batch norm uses running statistics); returns self."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Clear every parameter's ``.grad`` (set to None, or zero it in place)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if p.grad.grad_fn is not None:
                    p.grad = p.grad.detach()
                p.grad._data[...] = 0
                p.grad._vc.bump("zero_grad")

    def apply(self, fn):
        """Call ``fn(module)`` on every descendant (children first), then on self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def to(self, *args, dtype=None, device=None, non_blocking=False):
        """Move/cast floating parameters and buffers (in place; parameters keep identity)."""
        for arg in args:
            if isinstance(arg, str):
                device = arg
            else:
                dtype = arg
        dtype = _dtypes.to_dtype(dtype)

        def convert(t):
            if dtype is not None and t._data.dtype.kind == "f":
                t2 = Tensor._wrap(t._data).to(device=device, dtype=dtype)
            else:
                t2 = Tensor._wrap(t._data).to(device=device)
            return t2._data

        for t in list(self.parameters()) + list(self.buffers()):
            if is_lazy(t):  # convert the empty array it holds (Note [Uninitialized tensors])
                t._data = convert(t.data)
                continue
            new = convert(t)
            if new is not t._data:
                t._data = new
                t._size = None  # Note [Size cache]
                t._vc.bump("to")
                if t.grad is not None:
                    t.grad = Tensor._wrap(convert(t.grad))
        return self

    def share_memory(self):
        """``share_memory_()`` on every parameter and buffer, as torch (no-ops on the CPU;
        an uninitialized or meta tensor raises torch's RuntimeError); returns self."""
        for t in list(self.parameters()) + list(self.buffers()):
            t.share_memory_()
        return self

    def float(self):
        return self.to(_dtypes.float32)

    def double(self):
        return self.to(_dtypes.float64)

    def half(self):
        return self.to(_dtypes.float16)

    def type(self, dst_type):
        """Cast every parameter and buffer to ``dst_type`` (floating ones only, as ``to``)."""
        return self.to(dst_type)

    def get_parameter(self, target: str):
        """The parameter at dotted path ``target``."""
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if name not in mod._parameters:
            raise AttributeError(f"{mod._get_name()} has no parameter `{name}`")
        return mod._parameters[name]

    def get_buffer(self, target: str):
        """The buffer at dotted path ``target``."""
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if name not in mod._buffers:
            raise AttributeError(f"{mod._get_name()} has no buffer `{name}`")
        return mod._buffers[name]

    # -- hooks -----------------------------------------------------------------------------

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` before forward; a non-None return replaces the args.

        With ``with_kwargs``: ``hook(module, args, kwargs)`` returning None or
        ``(args, kwargs)``. ``prepend`` runs it before the hooks already registered.
        """
        return _hooks.add(self._forward_pre_hooks, _hooks.Hook(hook, with_kwargs), prepend)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """``hook(module, args, output)`` after forward (``hook(module, args, kwargs, output)``
        with ``with_kwargs``); a non-None return replaces the output. With ``always_call``
        it runs even when forward raised."""
        entry = _hooks.Hook(hook, with_kwargs, always_call)
        return _hooks.add(self._forward_hooks, entry, prepend)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` when the gradients of the module's outputs are
        ready; a non-None return replaces ``grad_output``."""
        return _hooks.add(_hooks.backward_lists(self)[0], hook, prepend)

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` once the gradients of the module's tensor
        inputs are computed; a non-None return replaces ``grad_input``."""
        return _hooks.add(_hooks.backward_lists(self)[1], hook, prepend)

    # -- printing --------------------------------------------------------------------------

    def extra_repr(self) -> str:
        """The text inside this module's parentheses (override in layers)."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, module in self._modules.items():
            text = _indent(repr(module), 2)
            lines.append(f"({name}): {text}")
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __dir__(self):
        keys = set(super().__dir__())
        for table in (self._parameters, self._buffers, self._modules):
            keys.update(table)
        return sorted(keys)


def _indent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])
