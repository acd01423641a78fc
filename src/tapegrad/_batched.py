"""Batched tensors for tg.func.vmap: a Tensor seen without its batch dimension.

Note [vmap levels]
As in functorch, ``vmap`` wraps each mapped input in a :class:`BatchedTensor`: a
*physical* value whose dim 0 is the batch, seen by ``func`` as the *logical* tensor
without it (``shape``, ``ndim``, ``size()`` are logical). Every ``vmap`` call opens a
level with a fresh, increasing id; a nested vmap wraps values that are themselves
BatchedTensors of the outer level, so a value is batched once per level. An op on
BatchedTensors runs the batching rule of the highest level among its arguments
(``RULES[name]``, in _batch_rules.py): the rule turns the logical call into one call
on the physical values (batch dim moved to the front, logical ranks aligned, ``dim``
arguments shifted by one) and wraps the result again. Arguments of a lower level
(or plain tensors) are constants to that level; the rule's own call dispatches them
to their level in turn. The physical calls are ordinary tapegrad ops, so they record
the graph: ``grad`` outside a vmap differentiates through it unchanged, and
``grad`` inside one (func.py) differentiates the physical graph (Note [grad under
vmap]).

Where dispatch happens (the unbatched fast path pays nothing):
* methods and operators of a BatchedTensor (generated from the op registry by
  :func:`install_methods`; Python prefers a subclass's reflected operator, so
  ``plain + batched`` lands here too);
* ``tg.<op>(...)`` functions: the exported wrapper in ops/_registry.py catches the
  :class:`BatchedAccess` that a BatchedTensor raises when an op reads its ``_data``,
  and calls ``VMAP_DISPATCH`` (its ``except`` clause costs nothing when no exception);
* ``nn.functional.linear`` (the same catch).
An op without a rule runs once per batch element (:func:`loop`, a one-time warning
naming it). Any other code that reads a BatchedTensor's data (an unregistered function,
``.item()`` in data-dependent control flow) raises BatchedAccess, and ``vmap`` then
runs the whole function once per element (a warning names where): never a wrong answer.
"""

from __future__ import annotations

import itertools
import math
import threading

import numpy as np

from . import _warn
from . import random as tg_random
from .ops import _registry
from .ops._registry import OPS
from .tensor import Tensor

__all__ = ["BatchedTensor", "BatchedAccess", "dispatch", "op", "wrap", "RULES", "LEVELS"]


class BatchedAccess(AttributeError):
    """An op without a batching hook read the data of a BatchedTensor (Note [vmap levels]).

    Raised (and caught by the dispatching ``except`` clauses) once per op on batched
    arguments, so its message (and the shape in it) is only worked out when shown."""

    def __init__(self, tensor=None):
        super().__init__()
        self._tensor = tensor

    @property
    def shape(self) -> tuple:
        """The logical shape of the batched tensor that was read."""
        return () if self._tensor is None else tuple(self._tensor._bval.shape[1:])

    def __str__(self) -> str:
        return (
            "vmap: code without a batching rule read the data of a batched tensor "
            f"(logical shape {list(self.shape)}); vmap falls back to a per-element loop"
        )


class VmapUnsupported(RuntimeError):
    """An op that no batching rule nor the per-element loop can compute exactly (a rule
    raises it; dispatch lets it through instead of falling back to the loop)."""


class _Levels(threading.local):
    def __init__(self):
        self.active: list = []  # ids of the open vmap levels, outermost first
        self.sizes: dict = {}  # their batch sizes
        self.same: set = set()  # the levels with randomness="same"


LEVELS = _Levels()
_IDS = itertools.count(1)

#: ``RULES[name](name, fn, level, args, kwargs)``: the batched result, or NotImplemented
#: to fall back to the per-element loop. Filled by _batch_rules.py.
RULES: dict = {}

_WARNED: set = set()


def new_level() -> int:
    return next(_IDS)


def warn_once(key: str, message: str) -> None:
    if key not in _WARNED:
        _WARNED.add(key)
        _warn.warn(message, UserWarning)


def _trap(self):
    raise BatchedAccess(self)


def _no_data(name):
    def method(self, *args, **kwargs):
        _trap(self)

    method.__name__ = name
    return method


class BatchedTensor(Tensor):
    """A tensor batched at one vmap level: ``_bval`` holds the batch in dim 0."""

    __slots__ = ("_bval", "_blevel")

    _data = property(_trap)
    _rg = property(_trap)

    @property
    def grad_fn(self):
        return self._bval.grad_fn

    @property
    def shape(self) -> tuple:
        return tuple(self._bval.shape[1:])

    @property
    def dtype(self):
        return self._bval.dtype

    @property
    def ndim(self) -> int:
        return self._bval.ndim - 1

    def dim(self) -> int:
        return self._bval.ndim - 1

    @property
    def device(self):
        return self._bval.device

    def size(self, dim=None):
        shape = self.shape
        if dim is None:
            return shape
        n = max(len(shape), 1)
        if not -n <= dim < n:
            raise IndexError(f"size: dimension {dim} out of range for {len(shape)} dims")
        return shape[dim % n]

    def numel(self) -> int:
        return math.prod(self._bval.shape[1:])

    nelement = numel

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    @property
    def requires_grad(self) -> bool:
        return self._bval.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag) -> None:
        self._bval.requires_grad_(flag)

    def requires_grad_(self, requires_grad=True):
        self._bval.requires_grad_(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self._bval.is_leaf

    @property
    def grad(self):
        return None

    @property
    def data(self):
        return wrap(self._bval.data, self._blevel)

    @property
    def is_cuda(self) -> bool:
        return self._bval.is_cuda

    @property
    def is_cpu(self) -> bool:
        return self._bval.is_cpu

    def detach(self):
        return wrap(self._bval.detach(), self._blevel)

    def to(self, *args, **kwargs):
        args = tuple((a.device, a.dtype) if isinstance(a, Tensor) else (a,) for a in args)
        return wrap(self._bval.to(*[x for a in args for x in a], **kwargs), self._blevel)

    def float(self):
        return self.to(np.dtype("float32"))

    def double(self):
        return self.to(np.dtype("float64"))

    def is_floating_point(self) -> bool:
        return self.dtype.kind == "f"

    def is_contiguous(self) -> bool:
        return True

    @property
    def T(self):  # noqa: N802 - PyTorch's name
        return self.permute(tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self):  # noqa: N802 - PyTorch's name
        if self.ndim < 2:
            raise RuntimeError(f"mT: needs at least 2 dims, got shape {list(self.shape)}")
        return self.transpose(-2, -1)

    @property
    def mH(self):  # noqa: N802 - PyTorch's name (real dtypes only)
        return self.mT

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(op("unbind", self, 0))

    def __repr__(self) -> str:
        return f"BatchedTensor(lvl={self._blevel}, bdim=0, value=\n{self._bval!r}\n)"

    __hash__ = Tensor.__hash__


# Reading values into Python (data-dependent control flow) cannot be batched: the whole
# function then runs per element (Note [vmap levels]).
for _name in (
    "item", "tolist", "numpy", "__array__", "__bool__", "__float__", "__int__", "__index__",
    "backward", "register_hook", "register_post_accumulate_grad_hook", "retain_grad",
    "detach_", "stride", "uniform_", "normal_", "bernoulli_", "exponential_", "random_",
):  # fmt: skip
    setattr(BatchedTensor, _name, _no_data(_name))


def wrap(value, level: int) -> BatchedTensor:
    """``value`` (batch in dim 0) as a BatchedTensor of ``level``."""
    t = object.__new__(BatchedTensor)
    t._bval = value
    t._blevel = level
    t._grad = None
    t._output_nr = 0
    t._vc_ = None
    t._accumulator = None
    t._hooks = None
    t._post_hooks = None
    t._retains_grad = False
    t._base = None
    return t


def level_of(args, kwargs=None) -> int:
    """The highest vmap level among the (one-deep nested) arguments; 0 if none."""
    lv = 0
    for a in itertools.chain(args, kwargs.values()) if kwargs else args:
        t = type(a)
        if t is BatchedTensor:
            if a._blevel > lv:
                lv = a._blevel
        elif t is list or t is tuple:
            for x in a:
                if type(x) is BatchedTensor and x._blevel > lv:
                    lv = x._blevel
    return lv


def dispatch(name: str, fn, args, kwargs):
    """Run op ``name`` (function ``fn``) on arguments that may be batched."""
    level = level_of(args, kwargs)
    if not level:
        return fn(*args, **kwargs)
    if level not in LEVELS.active:
        raise RuntimeError(
            f"vmap: {name} got a batched tensor of a vmap that has already returned (a "
            "tensor that escaped func through a closure or a global)"
        )
    rule = RULES.get(name)
    if rule is not None:
        try:
            out = rule(name, fn, level, args, kwargs)
        except (BatchedAccess, VmapUnsupported):
            raise
        except Exception:  # noqa: BLE001 - the loop gives the op's own error, or a result
            out = NotImplemented
        if out is not NotImplemented:
            return out
    return loop(name, fn, level, args, kwargs)


def op(name: str, *args, **kwargs):
    """Registered op ``name`` on possibly batched arguments."""
    return dispatch(name, OPS[name].fn, args, kwargs)


def _registry_dispatch(info, args, kwargs):
    return dispatch(info.name, info.fn, args, kwargs)


_registry.VMAP_DISPATCH[0] = _registry_dispatch


def batch_size(level: int, args, kwargs) -> int:
    for a in itertools.chain(args, kwargs.values()):
        for x in a if type(a) in (list, tuple) else (a,):
            if type(x) is BatchedTensor and x._blevel == level:
                return x._bval.shape[0]
    raise AssertionError("no argument batched at this level")


def _take(a, level: int, b: int):
    if type(a) is BatchedTensor:
        return a._bval[b] if a._blevel == level else a
    if type(a) in (list, tuple):
        return type(a)(_take(x, level, b) for x in a)
    return a


def loop(name: str, fn, level: int, args, kwargs):
    """The fallback: ``fn`` once per batch element of ``level``, results stacked."""
    warn_once(
        name,
        f"tg.func.vmap: {name} has no batching rule, so it runs once per batch element "
        "(a Python loop): exact, but slow",
    )
    n = batch_size(level, args, kwargs)
    inplace = name.endswith("_") and not name.endswith("__") or name == "setitem"
    if inplace and not (type(args[0]) is BatchedTensor and args[0]._blevel == level):
        raise RuntimeError(
            f"vmap: {name}(self, *extra_args) is not possible because there exists a Tensor "
            "in extra_args that is batched while self is not (write into a batched tensor "
            "or use the out-of-place op)"
        )
    outs = []
    state = None
    if level in LEVELS.same:  # randomness="same": every element draws the same numbers
        state = tg_random.get_rng_state()
    for b in range(n):
        if state is not None:
            tg_random.set_rng_state(state)
        a_b = [_take(a, level, b) for a in args]
        kw_b = {k: _take(v, level, b) for k, v in kwargs.items()}
        outs.append(dispatch(name, fn, a_b, kw_b))
    if inplace:
        return None if name == "setitem" else args[0]
    return _stack_outs(name, outs, level)


def _stack_outs(name, outs, level):
    first = outs[0]
    if isinstance(first, Tensor):
        return wrap(op("stack", list(outs)), level)
    if isinstance(first, (tuple, list)):
        parts = [_stack_outs(name, [o[k] for o in outs], level) for k in range(len(first))]
        if hasattr(first, "_fields"):
            return type(first)(*parts)
        return type(first)(parts)
    if all(o is first or o == first for o in outs[1:]):
        return first
    raise RuntimeError(
        f"vmap: {name} returned a {type(first).__name__} that differs across the batch; "
        "only Tensor results can be batched"
    )


def wrap_out(out, level: int):
    """An op's physical result(s) wrapped at ``level``."""
    if isinstance(out, Tensor):
        return wrap(out, level)
    if isinstance(out, (tuple, list)):
        parts = [wrap_out(o, level) for o in out]
        if hasattr(out, "_fields"):
            return type(out)(*parts)
        return type(out)(parts)
    return out


# -- methods of BatchedTensor, generated from the registry --------------------------------

_SKIP = {
    "__init__", "_wrap", "__hash__", "__repr__", "__format__", "__new__", "__getattribute__",
    "__setattr__", "__delattr__", "__init_subclass__", "__class_getitem__", "__reduce__",
    "__reduce_ex__", "__getstate__", "__setstate__", "__sizeof__", "__dir__", "__eq__",
}  # fmt: skip
_INSTALLED = [0]


def _method(name, fn):
    def method(self, *args, **kwargs):
        return dispatch(name, fn, (self, *args), kwargs)

    method.__name__ = name
    return method


def install_methods() -> None:
    """Give BatchedTensor a dispatching method for every op bound on Tensor (idempotent;
    rerun when ops were registered since)."""
    if _INSTALLED[0] == len(Tensor.__dict__) + len(OPS):
        return
    by_fn = {id(info.fn): info.name for info in OPS.values()}
    own = {k for k in BatchedTensor.__dict__ if not k.startswith("_") or k.endswith("__")}
    for attr, value in list(Tensor.__dict__.items()):
        if attr in _SKIP or attr in own or not callable(value) or isinstance(value, type):
            continue
        if attr.startswith("_") and not attr.endswith("__") and id(value) not in by_fn:
            continue
        name = by_fn.get(id(value), attr)
        setattr(BatchedTensor, attr, _method(name, value))
    # __eq__ is an op too, but __hash__ must stay: bind it explicitly.
    eq = Tensor.__dict__.get("__eq__")
    if eq is not None:
        BatchedTensor.__eq__ = _method(by_fn.get(id(eq), "__eq__"), eq)
        BatchedTensor.__hash__ = Tensor.__hash__
    _INSTALLED[0] = len(Tensor.__dict__) + len(OPS)
