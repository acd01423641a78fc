"""A fork server for tools/mutate.py: collect the suite once, run each mutant in a fork.

Note [Fork server]
------------------
A mutant run as ``pytest -x <selected tests>`` in a fresh interpreter pays for the start
(Python, NumPy, torch, tapegrad, pytest and the collection of every selected test file)
before its first test: 10-20 s on a 2-core machine, most of the median mutant's time.
The fork server pays it once. It is pytest itself, started with this plugin (``-p
forkserver``): it collects the whole suite, then, instead of running it, reads requests
(JSON lines) from a pipe. For each mutant it

1. writes the mutated file into its copy of the tree, so that any Python a test starts
   (MPI ranks, fresh interpreters) imports the mutant, and forks;
2. in the child, puts the mutant into the live interpreter: it compiles the original and
   the mutated source, and every live function of that file whose code object changed
   gets the mutated one (``f.__code__ = new``), so every reference to it (tables, methods,
   closures, ``functools`` wrappers) runs the mutant. Then it runs the selected tests with
   pytest's own ``runtestprotocol`` (fixtures, hooks, xfail) and exits 1 at the first
   failure, 0 when all pass;
3. restores the file (and its mtime, so the compiled caches stay valid) and replies.

Only mutants of *function bodies that never run at import* go this way (the caller
checks: ``in_body``, no ``<outside>`` or collection line in the map), because the
server's state (tables, module constants) was built by the original import: a mutant of
code that ran then would not be seen. The child refuses (exit 3: *unsupported*, the caller
falls back to a fresh interpreter) when the mutated source's functions do not pair with
the original's (a dropped statement that held a lambda), when a function's free
variables changed, or when no live function changed (the mutant would not be applied).

The child's result can differ from a fresh run's only through state the server holds: the
collection, which is the same, and a first run of nothing. ``--fork`` runs the unmutated
selection of a few mutants first as a check (``baseline``), so a test that cannot run in a
fork shows up as a failure of the unmutated code and stops the run.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import signal
import time
import types

_FDS = os.environ.get("TAPEGRAD_FORKSERVER")  # "read_fd,write_fd"


def _codes(code, out):
    out.append(code)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _codes(const, out)
    return out


_FUNCS = {}  # file -> its live functions, gathered once in the server (one walk of the heap)


def _gather():
    for f in gc.get_objects():
        if type(f) is types.FunctionType:
            _FUNCS.setdefault(f.__code__.co_filename, []).append(f)


def patch(path: str, old_source: str, new_source: str, functions=None) -> int:
    """Give every live function of ``path`` (``functions``: those gathered in the server)
    whose code changed its mutated code.

    Returns how many functions changed; 0 when the mutant cannot be put in place (see
    Note [Fork server])."""
    old = _codes(compile(old_source, path, "exec", dont_inherit=True), [])
    new = _codes(compile(new_source, path, "exec", dont_inherit=True), [])
    if [c.co_qualname for c in old] != [c.co_qualname for c in new]:
        return 0
    index = {}
    for i, code in enumerate(old):
        index.setdefault(code, i)
    changed = 0
    for f in _FUNCS.get(path, ()) if functions is None else functions:
        i = index.get(f.__code__)
        if i is None or new[i] == old[i]:
            continue
        if new[i].co_freevars != f.__code__.co_freevars:
            return 0
        f.__code__ = new[i]
        changed += 1
    return changed


def _child(items, req):
    """In the fork: apply the mutant, run the tests; never returns."""
    os.setpgid(0, 0)  # the server kills the whole group on a timeout
    cpu = int(req["cpu"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    from _pytest.runner import runtestprotocol

    if req.get("mutated") is not None:
        if not patch(req["path"], req["original"], req["mutated"]):
            os._exit(3)
    for i, item in enumerate(items):
        nxt = items[i + 1] if i + 1 < len(items) else None
        for report in runtestprotocol(item, log=False, nextitem=nxt):
            if report.failed:
                with open(req["why"], "w") as fh:
                    fh.write(f"FAILED {item.nodeid}")
                os._exit(1)
    if req.get("files"):
        _collect_again(req)
    os._exit(0)


def _collect_again(req):
    """Run the test files whose collection runs the mutated line whole, collected again
    under the mutant: their modules leave ``sys.modules`` and a nested pytest imports them."""
    import sys

    import pytest

    root = os.getcwd()
    files = {os.path.normpath(os.path.join(root, f)) for f in req["files"]}
    for name, module in list(sys.modules.items()):
        if os.path.normpath(getattr(module, "__file__", None) or "") in files:
            del sys.modules[name]
    args = [*req["files"], "-x", "-q", "-p", "no:cacheprovider", "-p", "no:forkserver"]
    code = pytest.main([*args, f"--basetemp={os.path.join(root, '.basetemp-files')}"])
    if code not in (0, 5):  # 5: nothing collected
        with open(req["why"], "w") as fh:
            fh.write(f"FAILED in {' '.join(req['files'])} (collected again)")
        os._exit(1)


def _serve(items_by_id, req):
    items = [items_by_id[t] for t in req["tests"] if t in items_by_id]
    missing = len(req["tests"]) - len(items)
    path = req["path"]
    stat = os.stat(path)
    if req.get("mutated") is not None:
        with open(path, "w") as fh:
            fh.write(req["mutated"])
    start = time.monotonic()
    try:
        pid = os.fork()
        if pid == 0:
            try:
                _child(items, req)
            finally:
                os._exit(4)
        deadline = start + req["wall"]
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                status = -1
                break
            time.sleep(0.02)
    finally:
        if req.get("mutated") is not None:
            with open(path, "w") as fh:
                fh.write(req["original"])
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    try:  # a test's own processes outlive a killed child
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    took = time.monotonic() - start
    why = ""
    if os.path.exists(req["why"]):
        with open(req["why"]) as fh:
            why = fh.read()
        os.remove(req["why"])
    if status == -1:
        return {"status": "timeout", "secs": took, "why": "timeout (wall clock)"}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = "over its CPU time" if sig in (signal.SIGXCPU, signal.SIGKILL) else f"signal {sig}"
        return {"status": "timeout", "secs": took, "why": f"killed: {name}"}
    code = os.WEXITSTATUS(status)
    status = {0: "passed", 1: "failed", 3: "unsupported"}.get(code, "error")
    return {"status": status, "secs": took, "why": why or f"exit {code}", "missing": missing}


def pytest_runtestloop(session):
    if not _FDS or session.config.option.collectonly:
        return None
    rfd, wfd = (int(v) for v in _FDS.split(","))
    items_by_id = {item.nodeid: item for item in session.items}
    _gather()
    with os.fdopen(rfd) as requests, os.fdopen(wfd, "w") as replies:
        threads = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 0
        replies.write(json.dumps({"ready": len(items_by_id), "threads": threads}) + "\n")
        replies.flush()
        for line in requests:
            reply = _serve(items_by_id, json.loads(line))
            replies.write(json.dumps(reply) + "\n")
            replies.flush()
    return True


class Server:
    """A fork server over the tree in ``work`` (the client side, in tools/mutate.py)."""

    def __init__(self, work, log_path):
        import subprocess
        import sys

        tools = os.path.dirname(os.path.abspath(__file__))
        r_req, w_req = os.pipe()
        r_rep, w_rep = os.pipe()
        env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join([os.path.join(work, "src"), tools]),
            PYTHONDONTWRITEBYTECODE="1",
            TAPEGRAD_FORKSERVER=f"{r_req},{w_rep}",
        )
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "forkserver"]
        cmd.append(f"--basetemp={os.path.join(work, '.basetemp')}")
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(
            cmd, cwd=work, env=env, pass_fds=(r_req, w_rep), stdout=self.log, stderr=self.log
        )
        os.close(r_req)
        os.close(w_rep)
        self.requests = os.fdopen(w_req, "w")
        self.replies = os.fdopen(r_rep)
        self.why = os.path.join(work, ".why")
        self.hello = self._read()

    def _read(self):
        line = self.replies.readline()
        if not line:
            raise RuntimeError(f"the fork server stopped; see {self.log.name}")
        return json.loads(line)

    def run(self, path, original, mutated, tests, cpu, wall, files=()):
        req = dict(path=str(path), original=original, mutated=mutated, tests=list(tests))
        req.update(files=list(files))
        req.update(cpu=cpu, wall=wall, why=self.why)
        self.requests.write(json.dumps(req) + "\n")
        self.requests.flush()
        return self._read()

    def close(self):
        self.requests.close()
        self.proc.wait()
        self.log.close()
