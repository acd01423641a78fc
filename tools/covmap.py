"""Map source line -> tests that execute it, for tools/mutate.py's test selection.

Built once by running the whole suite under coverage with one context per test
(``tools/covmap_plugin.py``), stored as JSON and reused while the fingerprint of
the tree (src/, tests/, benchmarks/, tools/, docs/ops.md, pyproject.toml, README.md) is unchanged.

Why selecting by coverage is sound (Note [Mutant test selection])
----------------------------------------------------------------
A mutant changes the code of one statement. A test can observe the mutant only if
the mutated code runs in the test's process: in the test itself (its setup, call
or teardown), or earlier, while modules are imported and tests are collected,
leaving state (tables, registered ops, module constants) that the test reads.

- A mutant whose node is inside a function or lambda body runs only when that
  body runs. If coverage never saw its statement's lines run outside a test
  (``<outside>``: imports, collection, between tests), every run of it happened
  inside some test T and was recorded under T's node id. A test that never ran
  those lines never ran the mutant, so it passes on the mutant exactly as on the
  original (same code, same data). Running the covering tests decides the mutant.
- Code run at import/collection time (module level, class bodies, decorators,
  default arguments, or a function body called while importing) can change what
  every later test sees: such a mutant gets the whole suite.
- Code run in a child process (MPI tests under ``mpiexec``, tests that start an
  interpreter) is not traced: the tests that start a subprocess are recorded and
  run for every mutant.

Limits: a test that reads state cached by an earlier test (a cache filled while
test A ran, read by test B in the same worker) may observe a mutant in the
full suite that the selected run misses; so can a test whose path depends on the
order of tests. Both would make a kill depend on test order, which the suite
avoids. The selection can only miss kills (make the score lower), never invent them.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

OUTSIDE = "<outside>"
TREE = ("src", "tests", "benchmarks", "tools", "docs/ops.md", "pyproject.toml", "README.md")
# the mutation machinery itself: no test reads it, so editing it keeps the map valid
NOT_FINGERPRINTED = {"tools/mutate.py", "tools/covmap.py", "tools/covmap_plugin.py"}


def fingerprint(root: Path) -> str:
    h = hashlib.sha256()
    for name in TREE:
        base = root / name
        paths = sorted(base.rglob("*")) if base.is_dir() else [base]
        for p in paths:
            if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".pyc"):
                if str(p.relative_to(root)) in NOT_FINGERPRINTED:
                    continue
                h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def convert(data_glob: str, root: Path, extra: dict) -> dict:
    """Combine the plugin's per-process files into the JSON map."""
    import coverage

    tests, index = [], {}
    lines, outside = {}, {}
    seconds, spawners = {}, set()
    for f in sorted(glob.glob(data_glob)):
        if f.endswith(".json"):
            with open(f) as fh:
                info = json.load(fh)
            seconds.update(info["seconds"])
            spawners.update(info["spawners"])
            continue
        data = coverage.CoverageData(f)
        data.read()
        for path in data.measured_files():
            try:
                rel = str(Path(path).resolve().relative_to(root.resolve()))
            except ValueError:
                continue
            by_line = data.contexts_by_lineno(path)
            for line, ctxs in by_line.items():
                for c in ctxs:
                    if c == OUTSIDE or not c:
                        outside.setdefault(rel, set()).add(line)
                        continue
                    if c not in index:
                        index[c] = len(tests)
                        tests.append(c)
                    lines.setdefault(rel, {}).setdefault(line, set()).add(index[c])
    return {
        **extra,
        "tests": tests,
        "seconds": [seconds.get(t, 0.0) for t in tests],
        "spawners": sorted(spawners),
        "lines": {f: {str(k): sorted(v) for k, v in d.items()} for f, d in lines.items()},
        "outside": {f: sorted(v) for f, v in outside.items()},
    }


def build(work: Path, root: Path, out: Path, jobs: int) -> dict:
    """Run the suite in ``work`` under the plugin; write and return the map."""
    data = work / ".covmap-data"
    data.mkdir(exist_ok=True)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(work / "src"), str(Path(__file__).parent)]),
        PYTHONDONTWRITEBYTECODE="1",
        TAPEGRAD_COVMAP=str(data / "cov"),
        TAPEGRAD_COVMAP_ROOT=str(work),
    )
    xdist = ["-n", str(jobs)] if jobs else []
    cmd = [sys.executable, "-m", "pytest", "-q", *xdist, "-p", "covmap_plugin"]
    cmd += ["-p", "no:cacheprovider"]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-15:])
        raise SystemExit(f"the unmutated suite does not pass under coverage:\n{tail}")
    # the copy that ran (the tree as it was when copied; root may have changed since)
    extra = {"fingerprint": fingerprint(work), "suite_seconds": wall}
    cmap = convert(str(data / "cov*"), work, extra)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(cmap))
    return cmap


def load(path: Path, root: Path):
    """The stored map if it matches the tree, else None."""
    if not path.exists():
        return None
    cmap = json.loads(path.read_text())
    return cmap if cmap.get("fingerprint") == fingerprint(root) else None


def select(cmap: dict, rel: str, first: int, last: int):
    """(tests that run any of lines first..last of rel, runs outside tests?)."""
    by_line = cmap["lines"].get(rel, {})
    out_lines = set(cmap["outside"].get(rel, ()))
    ids, outside = set(), False
    for line in range(first, last + 1):
        ids.update(by_line.get(str(line), ()))
        outside = outside or line in out_lines
    return sorted(ids), outside
