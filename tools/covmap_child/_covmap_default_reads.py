"""Which tests read a default argument of a tapegrad function other than by calling it.

Used while ``tools/covmap.py`` builds its line map, by ``tools/covmap_plugin.py`` in the
test processes and by ``sitecustomize.py`` here in their children (Note [Default
arguments] in tools/covmap.py). A parameter's default value is stored in the function
object when its ``def`` runs (at import, for a module-level function or method), so a
mutant of it is import-time code; but the value is observed only by a call that binds
it (which runs the function's body: coverage sees that) or by introspection, which in
Python goes through ``inspect``'s ``Parameter`` objects (no file of src/, tests/ or
tools/ reads ``__defaults__``/``__kwdefaults__``). So ``inspect._signature_from_function``
tags the Parameter objects it makes for a function under src/tapegrad/ with
``path:first line of the def:parameter``, and every read of a tagged Parameter's
default (the ``default`` property, ``str``/``repr``, ``==``, ``hash``, pickling,
``replace``) is recorded under the current context (a test's node id or
``<outside>``). Reads inside the construction of the Signature (its check that no
parameter without a default follows one with a default) are not counted: they ask
only whether a default exists, which no mutant of a default's value changes.
"""

from __future__ import annotations

import inspect
import os

READS: dict = {}  # context -> set of "path:first line:parameter"
_ORIGIN: dict = {}  # id(Parameter) -> (the Parameter, its key); a strong reference keeps the id
_BUILDING = [0]


def install(root: str, context) -> None:
    """Patch ``inspect``; ``context()`` names the current test (or ``<outside>``)."""
    prefix = os.path.join(os.path.abspath(root), "src", "tapegrad") + os.sep
    P = inspect.Parameter
    empty = P.empty

    def note(p):
        if _BUILDING[0]:
            return
        o = _ORIGIN.get(id(p))
        if o is not None and o[0] is p:
            READS.setdefault(context(), set()).add(o[1])

    sff = inspect._signature_from_function

    def from_function(cls, func, *args, **kwargs):
        _BUILDING[0] += 1
        try:
            sig = sff(cls, func, *args, **kwargs)
            code = getattr(func, "__code__", None)
            name = getattr(code, "co_filename", "")
            if name.startswith(prefix):
                rel = os.path.relpath(name, root)
                for p in sig.parameters.values():
                    if p._default is not empty:
                        _ORIGIN[id(p)] = (p, f"{rel}:{code.co_firstlineno}:{p.name}")
        finally:
            _BUILDING[0] -= 1
        return sig

    inspect._signature_from_function = from_function

    default = P.default.fget

    def wrap(fn):
        def run(self, *args, **kwargs):
            note(self)
            return fn(self, *args, **kwargs)

        run.__name__ = fn.__name__
        return run

    P.default = property(lambda self: (note(self), default(self))[1])
    for name in ("__str__", "__repr__", "__hash__", "__reduce__"):
        setattr(P, name, wrap(getattr(P, name)))

    eq = P.__eq__

    def __eq__(self, other):
        note(self)
        if isinstance(other, P):
            note(other)
        return eq(self, other)

    P.__eq__ = __eq__
    replace = P.replace

    def replace_(self, *args, **kwargs):
        note(self)
        new = replace(self, *args, **kwargs)
        o = _ORIGIN.get(id(self))
        if o is not None and o[0] is self and new._default is self._default:
            _ORIGIN[id(new)] = (new, o[1])  # the same default, read later through the copy
        return new

    P.replace = replace_


def snapshot() -> dict:
    """context -> sorted keys, for a JSON file."""
    return {c: sorted(v) for c, v in READS.items()}
