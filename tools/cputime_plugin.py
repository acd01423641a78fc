"""pytest plugin: CPU seconds per test and per file, robust to a loaded machine.

Wall-clock durations (``--durations``) mostly measure the other processes on a shared
machine; CPU time measures the test. Loaded with ``-p cputime_plugin`` (``tools/`` on
``sys.path``) and ``TAPEGRAD_CPUTIME`` set to a folder; works under pytest-xdist (each
worker writes its own ``<worker>.json``)::

    PYTHONPATH=src:tools TAPEGRAD_CPUTIME=/tmp/cpu python -m pytest -n 2 -p cputime_plugin
    python tools/cputime_plugin.py /tmp/cpu [N]      # top N files and tests

Per test: ``time.process_time()`` plus the CPU of waited-for children (subprocesses,
``mpiexec`` jobs), over setup, call and teardown. Per worker: the CPU spent up to the
end of collection, counted from the process start (interpreter, conftest's imports of
torch and tapegrad, the test modules, the op table).
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
import resource
import sys
import time

import pytest

_OUT = os.environ.get("TAPEGRAD_CPUTIME")
_tests: dict[str, tuple[float, float]] = {}
_start: dict[str, float] = {}


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def pytest_sessionstart(session):
    _start["wall"] = time.perf_counter()


def pytest_collection_finish(session):
    _start["collect_cpu"] = _cpu()  # since the process started: interpreter, conftest, imports


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cpu, wall = _cpu(), time.perf_counter()
    yield
    _tests[item.nodeid] = (_cpu() - cpu, time.perf_counter() - wall)


def pytest_sessionfinish(session):
    if not _OUT:
        return
    out = pathlib.Path(_OUT)
    out.mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    record = {
        "collect_cpu": _start.get("collect_cpu"),
        "total_cpu": _cpu(),
        "total_wall": time.perf_counter() - _start["wall"],
        "tests": _tests,
    }
    (out / f"{worker}.json").write_text(json.dumps(record))


def report(folder: str, n: int = 20) -> None:
    files, tests = collections.Counter(), {}
    for path in sorted(pathlib.Path(folder).glob("*.json")):
        record = json.loads(path.read_text())
        if not record["tests"]:  # the xdist controller runs no test
            continue
        print(
            f"{path.stem}: {len(record['tests'])} tests, collection {record['collect_cpu']:.1f} s "
            f"CPU, process {record['total_cpu']:.1f} s CPU, {record['total_wall']:.1f} s wall"
        )
        for node, (cpu, _) in record["tests"].items():
            files[node.split("::")[0]] += cpu
            tests[node] = cpu
    print(f"all tests: {sum(files.values()):.1f} s CPU\n-- top {n} files (CPU s)")
    for name, cpu in files.most_common(n):
        print(f"{cpu:8.2f}  {name}")
    print(f"-- top {n} tests (CPU s)")
    for node, cpu in sorted(tests.items(), key=lambda kv: -kv[1])[:n]:
        print(f"{cpu:8.2f}  {node}")


if __name__ == "__main__":
    report(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 20)
