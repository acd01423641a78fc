"""From a recording to a replay function: dead-op removal, code generation, fingerprint.

The replay is one generated Python function (shown by ``explain()``): it reads
the state arrays from their locations and checks the guards (returning ``MISS``
before any side effect when one fails), then runs the recorded NumPy calls in
order on plain arrays, with no Tensor, Node or tracing object, deleting each
intermediate after its last use and reusing the memory of dead ones (Note
[Replay memory] in memplan.py), then stores the arrays that the eager call
assigned (``p.grad = ...``) and returns the outputs. NumPy functions appear under
readable names (``np_add``, ``np_add_reduce``); other constants as ``_k0, _k1...``.
"""

from __future__ import annotations

import keyword
import math

import numpy as np

from .memplan import drop_self_writes, plan_memory
from .recorder import Ref, refs_in
from .state import _IsTensor

__all__ = ["Program", "MISS"]


class _Miss:
    def __repr__(self):
        return "MISS"


MISS = _Miss()


def _literal(v):
    """Source text for a value that round-trips through repr, else None."""
    t = type(v)
    if v is None or t is bool or t is int or t is str:
        return repr(v)
    if t is float and math.isfinite(v):
        return repr(v)
    if v is Ellipsis:
        return "..."
    return None


class Program:
    """A recording compiled into a replay function.

    Args:
        rec: the Recorder.
        arg_slots: the slot of each argument array (None where unused by the recording).
        guards: ``[(Location, expected)]`` checked before anything runs.
        assignments: ``[(Location, ('slot', i) | ('object', obj))]`` done at the end.
        outputs: the slots returned, in order.
        new_objects: ids of objects created by the recorded call (compared as "new").
    """

    def __init__(self, rec, arg_slots, guards, assignments, outputs, new_objects, name):
        self.consts = []  # values bound to names (in first-use order)
        self._const_names = {}  # id(value) -> its name in the generated code
        self._names = []  # per constant: its name
        self._name_index = {}  # name -> its index in _names (a list scan made recording O(n^2))
        self._new = new_objects
        self.n_ops = 0
        self.buffers = []  # (shape, dtype) of each program buffer (Note [Replay memory])
        self.source = self._generate(rec, arg_slots, guards, assignments, outputs, name)
        namespace = {
            "MISS": MISS,
            "_asarray": np.asarray,
            "_Tensor": _tensor_type(),
            "_pool": [],
            "_alloc": self._alloc,
        }
        for n, v in zip(self._names, self.consts, strict=True):
            namespace[n] = v
        exec(compile(self.source, f"<tapegrad.jit {name}>", "exec"), namespace)  # noqa: S102
        self.run = namespace["replay"]

    # -- constants ---------------------------------------------------------------------

    def _const(self, v) -> str:
        key = id(v)
        name = self._const_names.get(key)
        if name is None:
            name = _numpy_name(v)
            k = self._name_index.get(name) if name is not None else None
            if k is not None:  # a bound method is a new object at each access
                if self.consts[k] == v:
                    return name  # (not keyed by id(v): v may die and its id be reused)
                name = None
            if name is None:
                name = f"_k{len(self.consts)}"
            self.consts.append(v)
            self._name_index.setdefault(name, len(self._names))
            self._names.append(name)
            self._const_names[key] = name
        return name

    def _alloc(self):
        return tuple(np.empty(shape, dtype) for shape, dtype in self.buffers)

    def _expr(self, x) -> str:
        t = type(x)
        if t is Ref:
            return f"s{x.i}"
        if t is tuple:
            inner = ", ".join(self._expr(v) for v in x)
            return f"({inner},)" if len(x) == 1 else f"({inner})"
        if t is list:
            return "[" + ", ".join(self._expr(v) for v in x) + "]"
        if t is dict and all(type(k) is str for k in x):
            return "{" + ", ".join(f"{k!r}: {self._expr(v)}" for k, v in x.items()) + "}"
        if t is slice:
            return f"slice({self._expr(x.start)}, {self._expr(x.stop)}, {self._expr(x.step)})"
        lit = _literal(x)
        return lit if lit is not None else self._const(x)

    def _location(self, loc) -> str:
        obj = self._const(loc.obj)
        if loc.kind == "len":
            return f"len({obj})"
        if loc.kind == "attr":
            key = loc.key
            if key.isidentifier() and not keyword.iskeyword(key):
                return f"{obj}.{key}"
            return f"getattr({obj}, {key!r})"
        if loc.kind == "item":
            lit = _literal(loc.key)
            return f"{obj}[{lit if lit is not None else self._const(loc.key)}]"
        return f"{obj}.cell_contents"

    # -- code generation -----------------------------------------------------------------

    def _generate(self, rec, arg_slots, guards, assignments, outputs, name):
        keep, live_out = self._live_ops(rec, assignments, outputs)
        keep = drop_self_writes(rec, keep)
        used = set(live_out)
        for op in keep:
            used.update(refs_in((op.args, op.kwargs, op.result), []))
        escaping = {rec.roots[i] for i in live_out}
        params = [
            f"s{i}" if i is not None and i in used else f"_a{j}" for j, i in enumerate(arg_slots)
        ]
        lines = [f"def replay({', '.join(params)}):"]
        body = []
        for loc, expected in guards:
            body.append(self._guard(loc, expected))
        for i in sorted(used):
            origin = rec.slots[i]
            if origin[0] == "state":
                arr = rec.objects[i]
                expr = self._location(origin[1])
                body.append(f"s{i} = {expr}")
                body.append(
                    f"if s{i}.shape != {arr.shape!r} or s{i}.dtype != {self._const(arr.dtype)}: "
                    "return MISS"
                )
        for i in sorted(used):
            origin = rec.slots[i]
            if origin[0] == "const":
                k = self._const(origin[1])
                copy = len(origin) == 3 or i in escaping
                body.append(f"s{i} = {k}.copy()" if copy else f"s{i} = {k}")
        last = {}
        for n, op in enumerate(keep):
            for i in refs_in((op.args, op.kwargs, op.result), []):
                last[i] = n
        protected = set(live_out)
        dies_at = {}  # op index -> the slots last used there (one pass: the step is linear)
        for i in sorted(last):
            if i not in protected:
                dies_at.setdefault(last[i], []).append(i)
        plan = plan_memory(rec, keep, protected)
        self.buffers = plan.buffers
        bufs = "".join(f"_b{k}, " for k in range(len(plan.buffers)))
        if bufs:
            body.append(f"{bufs}= _pool.pop() if _pool else _alloc()")
        for n, op in enumerate(keep):
            if n in plan.alias:
                src = plan.alias[n]
                body.append(f"s{op.result.i} = s{src}  # no copy: s{src} is dead")
            else:
                body.extend(self._op_lines(op, plan.out.get(n)))
            dead = dies_at.get(n)
            if dead:
                body.append("del " + ", ".join(f"s{i}" for i in dead))
        for loc, (kind, payload) in assignments:
            value = f"s{payload}" if kind == "slot" else self._expr_object(payload)
            body.append(f"{self._location(loc)} = {value}")
        if bufs:
            body.append(f"_pool.append(({bufs}))")
        body.append("return (" + "".join(f"s{i}, " for i in outputs) + ")")
        self.n_ops = len(keep)
        return "\n".join(lines + ["    " + b for b in body]) + "\n"

    def _expr_object(self, obj):
        return "None" if obj is None else self._const(obj)

    def _guard(self, loc, expected) -> str:
        expr = self._location(loc)
        if isinstance(expected, _IsTensor):
            return f"if not isinstance({expr}, _Tensor): return MISS"
        if expected is None or type(expected) is bool:
            return f"if {expr} is not {expected!r}: return MISS"
        lit = _literal(expected)
        if lit is None and type(expected) is tuple:
            lit = repr(expected) if all(_literal(v) for v in expected) else None
        ref = lit if lit is not None else self._const(expected)
        return f"if type({expr}) is not {type(expected).__name__} or {expr} != {ref}: return MISS"

    @staticmethod
    def _live_ops(rec, assignments, outputs):
        live = set(outputs)
        live.update(p for _, (k, p) in assignments if k == "slot")
        live_out = set(live)
        keep = []
        for op in reversed(rec.ops):
            if op.writes or op.kind == "rng" or op.result is None or live.intersection(op.defines):
                keep.append(op)
                live.update(refs_in((op.args, op.kwargs, op.result), []))
        keep.reverse()
        return keep, live_out

    def _op_lines(self, op, out=None):
        args = list(op.args)
        kw = "".join(f", {k}={self._expr(v)}" for k, v in op.kwargs.items())
        if out is not None:
            kw += f", out={out}"
        if op.kind == "method":
            target = self._expr(args[0])
            if op.fn == "__setitem__":
                return [f"{target}[{self._expr(args[1])}] = {self._expr(args[2])}"]
            if op.fn == "__getitem__":
                call = f"{target}[{self._expr(args[1])}]"
            else:
                rest = ", ".join(self._expr(a) for a in args[1:])
                call = f"{target}.{op.fn}({rest}{kw})".replace("(, ", "(")
        elif op.kind == "rng":
            gen, method = op.fn
            rest = ", ".join(self._expr(a) for a in args)
            call = f"{self._const(gen)}.numpy.{method}({rest}{kw})".replace("(, ", "(")
        else:
            rest = ", ".join(self._expr(a) for a in args)
            call = f"{self._const(op.fn)}({rest}{kw})".replace("(, ", "(")
        if op.wrap_scalar:
            call = f"_asarray({call})"
        res = op.result
        if res is None:
            return [call]
        if type(res) is Ref:
            return [f"s{res.i} = {call}" if res.i in op.defines else call]
        lines = [f"_r = {call}"]
        for k, r in enumerate(res):
            if type(r) is Ref and r.i in op.defines:
                lines.append(f"s{r.i} = _r[{k}]")
        return lines

    # -- comparing two recordings ------------------------------------------------------------

    def same_as(self, other) -> bool:
        """Whether ``other`` is the same program with the same constants.

        (Note [Stable recordings] in cache.py.)
        """
        if self.source != other.source or len(self.consts) != len(other.consts):
            return False
        return all(self._same(a, b, other) for a, b in zip(self.consts, other.consts, strict=True))

    def _same(self, a, b, other):
        if a is b:
            return True
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return (
                a.shape == b.shape
                and a.dtype == b.dtype
                and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
            )
        if id(a) in self._new and id(b) in other._new:
            return True
        if type(a) is not type(b):
            return False
        if callable(a) and not isinstance(a, np.ufunc):
            return a == b
        if isinstance(a, (int, float, complex, str, bytes, np.generic, np.dtype, tuple)):
            try:
                return bool(a == b) or (a != a and b != b)
            except Exception:  # noqa: BLE001 - incomparable tuples
                return False
        return False


def _numpy_name(v):
    """``np_<name>`` for a NumPy function or ufunc (or ufunc method), else None."""
    if isinstance(v, np.ufunc):
        return f"np_{v.__name__}"
    owner = getattr(v, "__self__", None)
    if isinstance(owner, np.ufunc):
        return f"np_{owner.__name__}_{v.__name__}"
    module = getattr(v, "__module__", None) or ""
    if callable(v) and module.split(".")[0] == "numpy" and not isinstance(v, type):
        name = getattr(v, "__name__", "")
        return f"np_{name}" if name.isidentifier() else None
    return None


def _tensor_type():
    from ..tensor import Tensor  # noqa: PLC0415

    return Tensor
