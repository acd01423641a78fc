"""pytest plugin for tools/weakmut.py: conditions that record which mutants they flip.

Loaded with ``-p weakmut_plugin`` (``tools/`` on ``sys.path``) and ``TAPEGRAD_WEAKMUT``
set to an output prefix. When pytest imports it, before any conftest imports tapegrad,
it puts an import hook first on ``sys.meta_path`` that compiles each file listed in
``TAPEGRAD_WEAKMUT_FILES`` with its conditions rewritten (``weakmut.instrument``). Each
process (every pytest-xdist worker) writes ``<prefix>.<pid>.json`` when its session ends.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import sys
from pathlib import Path

_OUT = os.environ.get("TAPEGRAD_WEAKMUT")
_DONE = []  # site k -> every mutant of it flipped (the condition runs plain)
_FLIPPED = {}  # site k -> set of mutant positions seen deciding differently
_LABELS = {}  # site k -> mutant labels
_RAN = set()
_SKIPPED = []
_next = [0]


def _tgwm_f(k, original, mutants):
    """The original condition's value; records the mutants that decide differently."""
    value = original()
    _RAN.add(k)
    try:
        truth = bool(value)
    except Exception:  # an array's truth: the ``if`` raises as it would anyway
        return value
    seen = _FLIPPED.setdefault(k, set())
    for j, mutant in enumerate(mutants):
        if j in seen:
            continue
        try:
            flipped = bool(mutant()) != truth
        except Exception:
            flipped = True
        if flipped:
            seen.add(j)
    if len(seen) == len(mutants):
        _DONE[k] = True
    return value


class _Loader(importlib.machinery.SourceFileLoader):
    def get_code(self, fullname):
        import weakmut

        path = Path(self.path)
        root = Path(os.environ["TAPEGRAD_WEAKMUT_ROOT"])
        code, sites, skipped = weakmut.instrument(path, root, _next[0])
        for k, name, labels in sites:
            _LABELS[k] = (name, labels)
            _DONE.append(False)
        _SKIPPED.extend(skipped)
        _next[0] += len(sites)
        return code

    def exec_module(self, module):
        module.__dict__["_tgwm_D"] = _DONE
        module.__dict__["_tgwm_f"] = _tgwm_f
        super().exec_module(module)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, files):
        self.files = files

    def find_spec(self, fullname, path, target=None):
        if not fullname.startswith("tapegrad"):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin not in self.files:
            return spec
        spec.loader = _Loader(fullname, spec.origin)
        return spec


if _OUT:
    _files = {
        str(Path(f).resolve()) for f in os.environ["TAPEGRAD_WEAKMUT_FILES"].split(os.pathsep)
    }
    sys.meta_path.insert(0, _Finder(_files))


def pytest_sessionfinish(session):
    if not _OUT:
        return
    name = {k: v[0] for k, v in _LABELS.items()}
    flipped = [f"{name[k]}#{j}" for k, js in _FLIPPED.items() for j in js]
    data = dict(
        flipped=sorted(set(flipped)),
        ran=sorted(name[k] for k in _RAN),
        sites=dict(_LABELS.values()),
        skipped=_SKIPPED,
    )
    Path(f"{_OUT}.{os.getpid()}.json").write_text(json.dumps(data))
