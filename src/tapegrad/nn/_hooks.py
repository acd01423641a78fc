"""Module hooks: forward pre/post hooks (with kwargs, always_call) and full backward hooks.

Full backward hooks work as PyTorch's: the module's tensor inputs and outputs pass
through an identity Node each ("BackwardHookFunctionBackward"); the outputs' Node sees
``grad_output`` (and runs the pre-hooks), the inputs' Node sees ``grad_input`` (and runs
the hooks), both able to replace what flows on.
"""

from __future__ import annotations

from .. import _warn
from ..autograd.graph import RemovableHandle, make_results
from ..grad_mode import is_grad_enabled
from ..tensor import Tensor

__all__ = ["Hook", "HookList", "add", "call_with_hooks", "backward_lists"]


class Hook:
    """A registered forward hook and how to call it."""

    __slots__ = ("fn", "with_kwargs", "always_call")

    def __init__(self, fn, with_kwargs=False, always_call=False):
        self.fn = fn
        self.with_kwargs = with_kwargs
        self.always_call = always_call


class HookList(list):
    """A module's forward (pre-)hooks in call order: a list of :class:`Hook` entries that
    also answers torch's ``OrderedDict`` reading, ``values()`` / ``items()`` / ``keys()``
    (keys are positions, values the hook functions), as code such as PyTorch's pruning
    tutorial walks ``module._forward_pre_hooks.values()``."""

    __slots__ = ()

    def values(self):
        return [_fn(entry) for entry in self]

    def items(self):
        return list(enumerate(self.values()))

    def keys(self):
        return list(range(len(self)))


def add(hooks: list, entry, prepend: bool) -> RemovableHandle:
    if prepend:
        hooks.insert(0, entry)
    else:
        hooks.append(entry)
    return RemovableHandle(hooks, entry)


def backward_lists(module):
    """``(pre_hooks, hooks)`` of the module's full backward hooks, made on first use."""
    lists = module.__dict__.get("_bw")
    if lists is None:
        lists = ([], [])
        object.__setattr__(module, "_bw", lists)
    return lists


def _fn(entry):
    return entry.fn if isinstance(entry, Hook) else entry


def call_with_hooks(module, args, kwargs):
    for entry in list(module._forward_pre_hooks):
        if isinstance(entry, Hook) and entry.with_kwargs:
            new = entry.fn(module, args, kwargs)
            if new is not None:
                if not (isinstance(new, tuple) and len(new) == 2):
                    raise RuntimeError(
                        "forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                        f"but got {new}."
                    )
                args, kwargs = new
        else:
            new = _fn(entry)(module, args)
            if new is not None:
                args = new if isinstance(new, tuple) else (new,)
    bw = module.__dict__.get("_bw")
    state = None
    if bw and (bw[0] or bw[1]) and is_grad_enabled():
        state = {"grad_output": None, "n_inputs": 0}
        args = _wrap_inputs(module, args, bw, state)
    try:
        result = module.forward(*args, **kwargs)
    except Exception:
        for entry in list(module._forward_hooks):
            if isinstance(entry, Hook) and entry.always_call:
                try:
                    _call_forward_hook(entry, module, args, kwargs, None)
                except Exception:  # noqa: BLE001, S110 - the forward's error is the one to raise
                    pass
        raise
    for entry in list(module._forward_hooks):
        new = _call_forward_hook(entry, module, args, kwargs, result)
        if new is not None:
            result = new
    if state is not None:
        result = _wrap_outputs(module, result, bw, state)
    return result


def _call_forward_hook(entry, module, args, kwargs, result):
    if isinstance(entry, Hook) and entry.with_kwargs:
        return entry.fn(module, args, kwargs, result)
    return _fn(entry)(module, args, result)


def _identity(tensors, on_backward):
    """An identity Node over ``tensors`` whose backward hands the grads to ``on_backward``."""

    def backward(*grads):
        return tuple(on_backward(tuple(grads)))

    outs = make_results(
        [t._data for t in tensors], tensors, backward, "BackwardHookFunctionBackward"
    )
    for o, t in zip(outs, tensors):
        o._vc = t._vc
    return outs


def _wrap_inputs(module, args, bw, state):
    idx = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
    state["n_inputs"] = len(idx)
    if not idx:
        return args

    def on_backward(grad_input):
        grad_output = state["grad_output"]
        if grad_output is None:  # the gradient bypassed the outputs' hooks: torch skips too
            return grad_input
        for hook in list(bw[1]):
            new = hook(module, grad_input, grad_output)
            if new is not None:
                new = tuple(new) if isinstance(new, (tuple, list)) else (new,)
                if len(new) != len(grad_input):
                    raise RuntimeError(
                        f"Backward hook returned an invalid number of grad_input, got "
                        f"{len(new)}, but expected {len(grad_input)}"
                    )
                grad_input = new
        return grad_input

    wrapped = _identity([args[i] for i in idx], on_backward)
    args = list(args)
    for i, w in zip(idx, wrapped):
        args[i] = w
    return tuple(args)


def _wrap_outputs(module, result, bw, state):
    single = isinstance(result, Tensor)
    outs = (result,) if single else result
    if not isinstance(outs, tuple):
        _warn.warn(
            "For backward hooks to be called, module output should be a Tensor or a tuple of "
            f"Tensors but received {type(result)}",
        )
        return result
    idx = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
    if not idx:
        return result
    # grad_output has one entry per output, None for those that need no gradient (as torch)

    def on_backward(grads):
        grad_output = [None] * len(outs)
        for s, g in zip(idx, grads, strict=True):
            grad_output[s] = g
        grad_output = tuple(grad_output)
        for hook in list(bw[0]):
            new = hook(module, grad_output)
            if new is not None:
                grad_output = tuple(new) if isinstance(new, (tuple, list)) else (new,)
        state["grad_output"] = grad_output
        if state["n_inputs"] == 0:  # no input needs grad: the hooks run now, as torch
            for hook in list(bw[1]):
                hook(module, (None,), grad_output)
        return tuple(
            g if grad_output[s] is None else grad_output[s] for s, g in zip(idx, grads, strict=True)
        )

    wrapped = _identity([outs[i] for i in idx], on_backward)
    new = list(outs)
    for i, w in zip(idx, wrapped):
        new[i] = w
    if single:
        return new[0]
    return tuple(new) if type(outs) is tuple else type(outs)(*new)  # a namedtuple stays one
