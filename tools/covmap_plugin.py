"""pytest plugin for tools/mutate.py: which tests execute which source lines.

Loaded with ``-p covmap_plugin`` (``tools/`` on ``sys.path``) and the environment
variable ``TAPEGRAD_COVMAP`` set to a coverage data file. Coverage (its C tracer)
starts when pytest imports this plugin, before any conftest imports tapegrad, so
lines run while modules are imported and tests collected are recorded under the
context ``<outside>``; each test (setup, call and teardown) runs under its node id.
It works under pytest-xdist: every worker loads the plugin and writes its own data
file (``data_suffix``), which ``tools/mutate.py`` combines.

Tests that start a subprocess (``subprocess.Popen``: the MPI tests, child
interpreters) are listed, with every test's duration, in
``<data file>.tests.<pid>.json``: lines run in the child are not traced, so the
mutation tool runs those tests for every mutant.

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

    _popen_init = subprocess.Popen.__init__

    def _recording_init(self, *args, **kwargs):
        if _current is not None:
            _spawners.add(_current)
        return _popen_init(self, *args, **kwargs)

    subprocess.Popen.__init__ = _recording_init


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
        json.dump({"seconds": _seconds, "spawners": sorted(_spawners)}, fh)


_SELECT = os.environ.get("TAPEGRAD_SELECT")


def pytest_collection_modifyitems(session, config, items):
    """With ``TAPEGRAD_SELECT`` (a file of node ids, one a line), run only those tests."""
    if not _SELECT:
        return
    with open(_SELECT) as fh:
        order = {t: i for i, t in enumerate(fh.read().splitlines())}
    wanted = order
    # in the file's order (tools/mutate.py lists the fastest tests first: with -x the
    # first failure ends the run sooner)
    keep = sorted((it for it in items if it.nodeid in wanted), key=lambda it: order[it.nodeid])
    drop = [it for it in items if it.nodeid not in wanted]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep
