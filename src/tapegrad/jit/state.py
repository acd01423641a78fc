"""The state a cached function reaches: where its arrays and Python settings live.

Note [Reachable state]
Before recording, :func:`walk` follows the function's closure cells, the globals
its code names (and those of the functions it reaches), explicit ``modules=``,
and non-tensor arguments, through object attributes, dicts, lists and tuples, and
Tensors' ``data`` and ``grad``. It returns *locations* (a container and a key):

* array locations (``p._data``, ``opt.state[p]['exp_avg']``): the recorder swaps a
  tracing view into each, so in-place updates of parameters and optimizer state
  are recorded, and the replay reads the array found there at call time;
* guard locations: Python numbers, strings, booleans (a module's ``training``
  flag, an optimizer's ``lr``, an entry of a list), whether a tensor's ``grad`` is
  None, a tensor's ``requires_grad``, and the length of every dict and list
  entered (code may loop over them): a replay first checks that each still has its
  recorded value, and records again when one changed.

Modules, classes and functions' code are not entered; the walk stops after
:data:`MAX_OBJECTS` objects.
"""

from __future__ import annotations

import types

import numpy as np

from ..creation import Generator
from ..tensor import Tensor
from .tracer import TracedArray

__all__ = ["Location", "walk", "MAX_OBJECTS"]

MAX_OBJECTS = 20000
_SCALARS = (bool, int, float, str, type(None), complex)
_SKIP = (
    types.ModuleType,
    type,
    types.BuiltinFunctionType,
    types.CodeType,
    Generator,
    np.random.Generator,
    np.dtype,
    range,
    bytes,
    bytearray,
)


class Location:
    """A place that holds a value: ``obj.name`` ('attr'), ``obj[key]`` ('item'), a cell."""

    __slots__ = ("obj", "key", "kind", "label")

    def __init__(self, obj, key, kind, label):
        self.obj = obj
        self.key = key
        self.kind = kind
        self.label = label

    def get(self):
        if self.kind == "len":
            return len(self.obj)
        if self.kind == "attr":
            return getattr(self.obj, self.key)
        if self.kind == "item":
            return self.obj[self.key]
        return self.obj.cell_contents

    def set(self, value):
        if self.kind == "attr":
            setattr(self.obj, self.key, value)
        elif self.kind == "item":
            self.obj[self.key] = value
        else:
            self.obj.cell_contents = value

    def same_place(self, other) -> bool:
        return self.obj is other.obj and self.key == other.key and self.kind == other.kind

    def __repr__(self):
        return self.label


def _is_scalar_tuple(v):
    return type(v) is tuple and len(v) <= 16 and all(type(x) in _SCALARS for x in v)


def walk(roots, skip_ids=()):
    """Locations reachable from ``roots`` (pairs ``(label, object)``).

    Returns ``(arrays, guards, containers)``: array locations, guard locations with
    their current values, and ``(container, len)`` of every dict and list entered
    (a call that adds entries to one changed Python state).
    """
    arrays, guards, containers = [], [], []
    seen = set(skip_ids)
    queue = list(roots)
    count = 0
    while queue and count < MAX_OBJECTS:
        label, obj = queue.pop(0)
        if id(obj) in seen or isinstance(obj, _SKIP) or getattr(obj, "_tg_jit_opaque", False):
            continue  # opaque: a cached function's own bookkeeping is not the step's state
        seen.add(id(obj))
        count += 1
        for loc, value in _children(obj, label):
            if type(value) is np.ndarray or type(value) is TracedArray:
                arrays.append(loc)
            elif type(value) in _SCALARS or _is_scalar_tuple(value):
                guards.append((loc, _guard_value(value)))
            elif loc.kind == "attr" and loc.key == "grad" and isinstance(loc.obj, Tensor):
                guards.append((loc, _guard_value(value)))
                queue.append((loc.label, value))
            elif loc.kind != "attr" or loc.key not in ("grad_fn", "_vc", "_accumulator"):
                queue.append((loc.label, value))
        if isinstance(obj, (dict, list)):
            containers.append((obj, len(obj)))
    return arrays, guards, containers


class _IsTensor:
    """Guard value of a ``grad`` slot that holds some Tensor."""

    def __eq__(self, other):
        return isinstance(other, _IsTensor)

    def __repr__(self):
        return "<a Tensor>"


def _guard_value(value):
    return _IsTensor() if isinstance(value, Tensor) else value


def guard_holds(loc, expected) -> bool:
    value = _guard_value(loc.get())
    return type(value) is type(expected) and value == expected


def _children(obj, label):
    if isinstance(obj, Tensor):
        yield Location(obj, "_data", "attr", f"{label}._data"), obj._data
        if label.endswith(".grad"):
            return  # a gradient: its own grad and requires_grad never matter
        yield Location(obj, "grad", "attr", f"{label}.grad"), obj.grad
        yield Location(obj, "_rg", "attr", f"{label}.requires_grad"), obj._rg
        return
    t = type(obj)
    if isinstance(obj, dict):  # also defaultdict, OrderedDict (optimizer state, modules)
        for k, v in list(obj.items()):
            yield Location(obj, k, "item", f"{label}[{_short(k)}]"), v
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield Location(obj, i, "item", f"{label}[{i}]"), v
    elif t is tuple:
        for v in obj:  # tuples cannot be written to: only what they hold is walked
            if type(v) not in _SCALARS and type(v) is not np.ndarray:
                yield _NoLocation(f"{label}[...]"), v
    elif isinstance(obj, types.FunctionType):
        yield from _function_children(obj, label)
    elif isinstance(obj, types.MethodType):
        yield _NoLocation(f"{label}.__self__"), obj.__self__
        yield _NoLocation(f"{label}.__func__"), obj.__func__
    elif hasattr(obj, "__dict__") and not callable(getattr(obj, "__get__", None)):
        own = vars(obj)
        for k, v in list(own.items()):
            yield Location(obj, k, "attr", f"{label}.{k}"), v
        # Class-level defaults (``scale = 2.0`` in the class body) are read through the
        # instance too; an instance assignment later shadows them, so guard them.
        # Only the class nearest in the MRO counts: a subclass overriding a base's default
        # must not be guarded with the base's (shadowed) value.
        seen = set(own)
        for klass in type(obj).__mro__[:-1]:
            for k, v in list(vars(klass).items()):
                if k in seen:
                    continue
                seen.add(k)
                if not k.startswith("__") and type(v) in _SCALARS:
                    yield Location(obj, k, "attr", f"{label}.{k}"), v


class _NoLocation(Location):
    """A reference that cannot be rebound (a tuple entry); only its contents are walked."""

    def __init__(self, label):
        super().__init__(None, None, "none", label)


def _function_children(fn, label):
    code = fn.__code__
    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=True):
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        yield Location(cell, name, "cell", name), value
    g = fn.__globals__
    names = _global_names(code)
    for name in names:
        if name in g:
            value = g[name]
            yield Location(g, name, "item", name), value
            if isinstance(value, types.ModuleType):
                # ``config.lr``: guard the module's numbers that the code names.
                for attr in names:
                    v = getattr(value, attr, None)
                    if type(v) in _SCALARS and v is not None:
                        yield Location(value, attr, "attr", f"{name}.{attr}"), v


def _global_names(code):
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _short(k):
    if isinstance(k, (str, int)):
        return repr(k)
    if isinstance(k, Tensor):
        return f"<tensor {tuple(k.shape)}>"
    return f"<{type(k).__name__}>"
