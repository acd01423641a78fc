"""pytest plugin for tools/mutate.py: which tests execute which source lines.

Loaded with ``-p covmap_plugin`` (``tools/`` on ``sys.path``) and the environment
variable ``TAPEGRAD_COVMAP`` set to a coverage data file. Coverage (its C tracer)
starts when pytest imports this plugin, before any conftest imports tapegrad, so
lines run while modules are imported and tests collected are recorded under the
context ``<outside>``; each test (setup, call and teardown) runs under its node id.
It works under pytest-xdist: every worker loads the plugin and writes its own data
file (``data_suffix``), which ``tools/mutate.py`` combines.

Child processes (Note [Traced children]): every ``subprocess.Popen`` a test starts
gets, in its environment, ``tools/covmap_child/`` first on ``PYTHONPATH`` (its
``sitecustomize.py`` starts coverage in any Python child, and so in the MPI ranks
under ``mpiexec``, which inherit the environment) and the test's node id, under
which the child records its lines. Each child leaves a start and a done marker;
``tools/covmap.py`` counts a spawning test as traced only when every child that
started also saved its data, and at least one did. The tests that start a process
whose children were not all traced, and the tests that ``fork`` (a forked child
ends with ``os._exit`` and saves nothing), are listed as *spawners* with every
test's duration in ``<data file>.tests.<pid>.json``: the mutation tool runs those
for every mutant.

With ``TAPEGRAD_SELECT`` (a file of node ids) it runs only those tests, in that order.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

_OUT = os.environ.get("TAPEGRAD_COVMAP")
_cov = None
_current = None
_spawners = set()
_spawns = {}  # spawn id -> node id of the test that started it
_forkers = set()
_seconds = {}

if _OUT:
    import coverage

    _root = os.environ.get("TAPEGRAD_COVMAP_ROOT", os.getcwd())
    _cov = coverage.Coverage(
        data_file=_OUT,
        data_suffix=True,
        include=[os.path.join(_root, "src", "tapegrad", "*")],
        config_file=False,
    )
    _cov.start()
    _cov.switch_context("<outside>")

    # who reads a default argument other than by a call (Note [Default arguments])
    import importlib.util

    _spec = importlib.util.spec_from_file_location(
        "_covmap_default_reads",
        os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "covmap_child", "_covmap_default_reads.py"
        ),
    )
    _reads = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_reads)
    _reads.install(_root, lambda: _current or "<outside>")

    _popen_init = subprocess.Popen.__init__
    _CHILD_SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "covmap_child")
    _MARKS = os.path.join(os.path.dirname(os.path.abspath(_OUT)), "child-marks")
    os.makedirs(_MARKS, exist_ok=True)
    _in_popen = [False]

    def _recording_init(self, *args, **kwargs):
        if _current is None:
            return _popen_init(self, *args, **kwargs)
        _spawners.add(_current)
        spawn = f"{os.getpid()}-{len(_spawns)}"
        _spawns[spawn] = _current
        env = dict(os.environ if kwargs.get("env") is None else kwargs["env"])
        path = env.get("PYTHONPATH")
        env["PYTHONPATH"] = _CHILD_SITE + (os.pathsep + path if path else "")
        env.update(
            TAPEGRAD_COVMAP_CHILD=f"{_OUT}-child",
            TAPEGRAD_COVMAP_MARKS=_MARKS,
            TAPEGRAD_COVMAP_SPAWN=spawn,
            TAPEGRAD_COVMAP_CONTEXT=_current,
            TAPEGRAD_COVMAP_INCLUDE=os.path.join(_root, "src", "tapegrad", "*"),
        )
        kwargs["env"] = env
        _in_popen[0] = True
        try:
            return _popen_init(self, *args, **kwargs)
        finally:
            _in_popen[0] = False

    subprocess.Popen.__init__ = _recording_init

    def _before_fork():
        # a forked child (os.fork, multiprocessing's fork workers) inherits the tracer but
        # ends with os._exit and saves nothing: its test runs for every mutant
        if _current is not None and not _in_popen[0]:
            _forkers.add(_current)

    os.register_at_fork(before=_before_fork)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    global _current
    if _cov is None:
        yield
        return
    _current = item.nodeid
    _cov.switch_context(item.nodeid)
    start = time.perf_counter()
    try:
        yield
    finally:
        _seconds[item.nodeid] = time.perf_counter() - start
        _current = None
        _cov.switch_context("<outside>")


def pytest_unconfigure(config):
    if _cov is None:
        return
    _cov.stop()
    _cov.save()
    with open(f"{_OUT}.tests.{os.getpid()}.json", "w") as fh:
        info = {"seconds": _seconds, "spawners": sorted(_spawners), "spawns": _spawns}
        info["default_reads"] = _reads.snapshot()
        json.dump({**info, "forkers": sorted(_forkers), "marks": _MARKS}, fh)


_SELECT = os.environ.get("TAPEGRAD_SELECT")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """A test module's collection (its import, parametrize lists) under ``<collect>path``
    (Note [Collection contexts] in covmap.py), the rest of ``<outside>`` apart."""
    if _cov is None or not isinstance(collector, pytest.Module | pytest.Class | _DoctestModule):
        yield
        return
    _cov.switch_context(f"<collect>{collector.nodeid.split('::')[0]}")
    try:
        yield
    finally:
        _cov.switch_context("<outside>")


try:
    from _pytest.doctest import DoctestModule as _DoctestModule
except ImportError:  # pragma: no cover
    _DoctestModule = pytest.Module


def pytest_collection_modifyitems(session, config, items):
    """With ``TAPEGRAD_SELECT`` (a file of node ids, one a line), run only those tests; a
    line without ``::`` (a file) keeps every test of that file (Note [Collection contexts])."""
    if not _SELECT:
        return
    with open(_SELECT) as fh:
        order = {t: i for i, t in enumerate(fh.read().splitlines())}

    def rank(it):
        return order.get(it.nodeid, order.get(it.nodeid.split("::")[0]))

    # in the file's order (tools/mutate.py lists the fastest tests first: with -x the
    # first failure ends the run sooner)
    keep = sorted((it for it in items if rank(it) is not None), key=rank)
    drop = [it for it in items if rank(it) is None]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep
