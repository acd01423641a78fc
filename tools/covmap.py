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
  (``<outside>``: imports, between tests; a test module's collection has its own
  context), every run of it happened
  inside some test T and was recorded under T's node id. A test that never ran
  those lines never ran the mutant, so it passes on the mutant exactly as on the
  original (same code, same data). Running the covering tests decides the mutant.
- Code run at import time (module level, class bodies, decorators,
  default arguments, or a function body called while importing) can change what
  every later test sees: such a mutant gets the whole suite, except a literal default
  argument, which only a call (its body runs) or introspection can observe (Note
  [Default arguments]). Code that only a test module's collection runs counts as
  run by that module's tests (Note [Collection contexts]).
- Code run in a child process (MPI tests under ``mpiexec``, tests that start an
  interpreter) is traced in the child and recorded under the spawning test's node id
  (Note [Traced children]), so the spawning test is among those that execute the
  child's lines and runs for the mutants there, like any other test. A test whose
  children were not all traced (a child killed before saving its data, a child that
  is not Python, a ``fork`` that ends in ``os._exit``) is a *spawner*: it runs for
  every mutant, as every spawner did before children were traced.

Limits: a test that reads state cached by an earlier test (a cache filled while
test A ran, read by test B in the same worker) may observe a mutant in the
full suite that the selected run misses; so can a test whose path depends on the
order of tests. Both would make a kill depend on test order, which the suite
avoids. The selection can only miss kills (make the score lower), never invent them.

Note [Default arguments]
------------------------
A parameter's default value is evaluated when its ``def`` runs, so a mutant of the
default of a module-level function or method is import-time code and used to get the
whole suite (one suite run per survivor, 600-1,000 s on the shared machine). But the
value lives in the function object, and only two things can observe it:

- a call that leaves the parameter out: only the function's body reads the bound value,
  and coverage records the body's lines under the test running it (a plain function's
  body runs on the call; a generator's or coroutine's binds on the call and runs when
  first resumed, which is when the value is first read: a generator made in one test
  and resumed in another is the shared-state limit below);
- introspection: a reader of ``__defaults__``/``__kwdefaults__``. In Python that is
  ``inspect`` (``signature``, ``getfullargspec``, ``getcallargs``; ``pydoc``, pytest,
  hypothesis and tapegrad's own ``_batch_rules``/``creation``/``_registry`` use it); no
  file of src/, tests/ or tools/ reads the attributes itself, and the libraries that do
  (hypothesis on lambdas it prints, numpy on its own functions, torch's fx/dynamo)
  never see a tapegrad function.

So while the map is built, ``tools/covmap_child/_covmap_default_reads.py`` tags the
``inspect.Parameter`` objects made for functions under src/tapegrad/ and records, per
test (and ``<outside>``), every read of a tagged default: the ``default`` property,
``str``/``repr``, ``==``, ``hash``, pickling, ``replace`` (whose copy stays tagged).
A cached Signature (``_batch_rules._signature``) is read again by each test that binds
with it, so the read counts for that test. Reads while the Signature is constructed
only ask whether a default exists, which a mutant of a literal value never changes.

A mutant inside a default that *reads only constants* (``_constant_value`` in
tools/mutate.py: a literal, or operators over literals such as ``1.0 / 3`` or ``-(4 *
5)``; no name, call, attribute or subscript) is covered by the same argument: the value is
computed once, when the ``def`` runs, and evaluating it or its mutant has no effect but
the value. The one exception is a mutant whose default no longer evaluates (``1 / (3 -
2)`` -> ``1 / (3 - 3)``): the module's import then fails, which every test that imports
it sees, so the tool evaluates each such mutant's default (with no builtins: there is
nothing else to read) and gives one that raises the whole suite. Such a mutant
gets the tests that run a line of that body, the tests that read that parameter's
default, and (if they pass) the untraced spawners, like a mutant in a body. It still
gets the whole suite when the body runs at import (``<outside>``), when the default is
read outside tests (a table built from signatures at import), or, on a map extended
after the def line itself was edited, for every default of that file. What it shares
with Note [Mutant test selection]: a value derived from a default and cached by one test
for another is seen only under the first.

Not covered: the default of a *lambda* in a module-level statement (``_refusing(elu,
lambda alpha=1.0: alpha, ...)`` in nn/_activations.py, a table row's lambda; 4 mutants of
the pool). Who can observe the value is the same (a call runs the lambda's body, or
introspection), but the rule also needs to know that the body never ran at import, and a
line map cannot say: the lambda's lines are lines of the statement that defines it, which
runs at import, so they are always ``<outside>`` whether or not the lambda was called
then. Such a mutant keeps the whole suite; telling the two apart would need the map to
record calls of code objects, not lines.

Note [Edited statements]
------------------------
An edit that replaces or deletes lines of a function body (no insertion between
statements, every function's compiled scope kept: ``_scopes``) and lies within one
statement of that body reruns only the tests that executed a line of that statement,
not every test that ran the function: the code before the statement is unchanged, so
a test whose control flow never arrived there (its line event never fired) never runs
the new text either, and runs the same code on the same data as before. This is
``_never_ran``'s argument for a statement that no test reached, applied to one that
some did. A typical fix, a ``raise`` with a better message, then reruns the tests that
raised it. The same holds for the function's runs at import: if they never reached the
statement (none of its lines ran ``<outside>``), the import-time state is unchanged, so
such an edit is accepted in a function that also runs at import (a strict extension
used to refuse it). An insertion, or an edit across statements, reruns the function's
tests, and is refused in a function that runs at import.

Note [Collection contexts]
--------------------------
While pytest collects a test module (imports it, builds its parametrize lists), the
plugin records under ``<collect>`` + the module's path, not ``<outside>``. A module that
runs tapegrad code at collection made that code "import-time" for the whole suite:
``tests/test_array_backward.py`` runs every op-table row to find the Nodes with array
rules (``PAIRS``), which put the bodies of nearly every op (4,530 lines) in ``<outside>``
and sent 36 of the 100 mutants of seed 1805 to the whole suite. Running code at
collection is running it before the tests, like an earlier test of the same session:
it can change that module's items (the selection then runs the module *whole*, so a
changed parametrization or a collection error is seen), and it can leave state behind
that later tests read, which is the limit Note [Mutant test selection] already states
for state one test leaves another. So a mutant on such a line gets its covering tests,
then (if they pass) the modules whose collection ran it, whole, with the untraced
spawners; only lines run while tapegrad itself, conftest or the plugins are imported
(and between tests) stay ``<outside>`` and get the whole suite. ``--recollect`` splits
an existing map with one ``--collect-only`` run under the plugin: the lines that run
only inside some module's collection leave ``<outside>`` (nothing else moves).

Note [Helper files]
-------------------
``--extend`` accepts a new or edited file under tests/ that pytest does not collect
(a helper module such as ``tests/_second_order.py``, a data file; not a conftest, which
every test imports) by rerunning whole every test file that can observe it: the ones
that name it (its module name, or its file name for data), transitively through the
helpers that name it, and the ones that list a directory (``glob``, ``listdir``,
``iterdir``...), which could find it without naming it. A test file that names none of
them and lists nothing runs the same code on the same data as when the map was built.

Note [Traced children]
----------------------
While the map is built, ``covmap_plugin.py`` gives every ``subprocess.Popen`` a test
starts an environment with ``tools/covmap_child/`` first on ``PYTHONPATH`` and the
test's node id; the ``sitecustomize.py`` there starts coverage in each Python child
(and grandchild: ``mpiexec`` passes the environment to its ranks, a child's own
``Popen`` gets the same treatment, an ``exec`` saves first) with that node id as its
context and its own data file. The child writes ``start.<spawn>.<pid>.<token>`` before
coverage starts and ``done.<token>`` after its data is saved. Its lines count only
with the done marker; a spawn is traced when some child started under it and every
one that started is done; a test is traced when all its spawns are. A child that
never started Python (``dot``) leaves no marker, and one that dies unsaved (killed,
``MPI_Abort``, ``os._exit``) leaves a start marker alone: its test stays a spawner.
Nothing of this reaches the project's install: the directory is on a child's path
only while the map is built, and mutation runs themselves trace nothing.

The one assumption: a Python process started under a test has the injected
environment (Popen's, passed down by ``mpiexec`` and ``exec``) and imports
``sitecustomize``. A grandchild started by a non-Python process that scrubs the
environment would escape unseen; ``mpiexec`` (hydra) passes it whole by default.

Note [Loose extension]
----------------------
``--extend --loose`` accepts an edit of code that runs at import (a class body, a
module constant) by rerunning every test that executed any line of the edited file,
where a strict extension refuses and the map is built afresh (a suite run under
coverage). It can miss a test that observes the import-time change without running a
line of that file (reading a class attribute from elsewhere). A map wrong that way
lists too few tests for some lines, so a mutant there runs too few tests: the selection
can only miss kills, and the score stays a lower bound; a survivor is then checked by
hand (its verdict needs a person anyway). A run on such a map says so in its report.

"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

OUTSIDE = "<outside>"
COLLECT = "<collect>"  # + a test file: lines its collection ran (Note [Collection contexts])
CHILD_DATA = "-child."  # <data file>-child.<token>: a child process's data
TREE = ("src", "tests", "benchmarks", "tools", "docs/ops.md", "pyproject.toml", "README.md")
# the mutation machinery itself: no test reads it, so editing it keeps the map valid
NOT_FINGERPRINTED = {
    "tools/mutate.py",
    "tools/mutation_gaps.py",
    "tools/covmap.py",
    "tools/covmap_plugin.py",
    "tools/forkserver.py",
    "tools/covmap_child/sitecustomize.py",
    "tools/covmap_child/_covmap_default_reads.py",
}


def _tree_files(root: Path):
    for name in TREE:
        base = root / name
        paths = sorted(base.rglob("*")) if base.is_dir() else [base]
        for p in paths:
            if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".pyc"):
                if str(p.relative_to(root)) in NOT_FINGERPRINTED:
                    continue
                yield str(p.relative_to(root)), p.read_bytes()


def fingerprint(root: Path) -> str:
    h = hashlib.sha256()
    for rel, data in _tree_files(root):
        h.update(rel.encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def file_hashes(root: Path) -> dict:
    """relative path -> sha256 of every fingerprinted file (what ``extend`` compares)."""
    return {rel: hashlib.sha256(data).hexdigest() for rel, data in _tree_files(root)}


def convert(data_glob: str, root: Path, extra: dict) -> dict:
    """Combine the plugin's per-process files into the JSON map."""
    import coverage

    tests, index = [], {}
    lines, outside, collect = {}, {}, {}
    seconds, spawners, spawns, forkers, marks = {}, set(), {}, set(), set()
    reads = {}  # context -> keys of defaults read (Note [Default arguments])
    files = sorted(glob.glob(data_glob))
    for f in files:
        if f.endswith(".json"):
            with open(f) as fh:
                info = json.load(fh)
            for c, keys in info.get("default_reads", {}).items():
                reads.setdefault(c, set()).update(keys)
            seconds.update(info["seconds"])
            spawners.update(info["spawners"])
            spawns.update(info.get("spawns", {}))
            forkers.update(info.get("forkers", ()))
            if info.get("marks"):
                marks.add(info["marks"])
            continue
    done = _marks(marks)[1]
    for f in glob.glob(os.path.join(os.path.dirname(data_glob), "reads-child.*.json")):
        if os.path.basename(f)[len("reads-child.") : -len(".json")] in done:
            with open(f) as fh:
                for c, keys in json.load(fh).items():
                    reads.setdefault(c, set()).update(keys)
    for f in files:
        if f.endswith(".json"):
            continue
        # a child's data (tools/covmap_child): only when it saved it (traced_spawners)
        child = os.path.basename(f).partition(CHILD_DATA)[2]
        if child and child not in done:
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
                    if c.startswith(COLLECT):  # Note [Collection contexts]
                        collect.setdefault(rel, {}).setdefault(line, set()).add(c[len(COLLECT) :])
                        continue
                    if c not in index:
                        index[c] = len(tests)
                        tests.append(c)
                    lines.setdefault(rel, {}).setdefault(line, set()).add(index[c])
    traced = traced_spawners(spawners, spawns, marks) - forkers
    by_key, reads_outside = {}, set()
    for c, keys in reads.items():
        if c == OUTSIDE or not c:
            reads_outside.update(keys)
            continue
        if c not in index:
            index[c] = len(tests)
            tests.append(c)
        for k in keys:
            by_key.setdefault(k, set()).add(index[c])
    return {
        **extra,
        "tests": tests,
        "seconds": [seconds.get(t, 0.0) for t in tests],
        # run for every mutant: their children's lines are not (all) in the map
        "spawners": sorted(spawners - traced | forkers),
        "traced_spawners": sorted(traced),
        "lines": {f: {str(k): sorted(v) for k, v in d.items()} for f, d in lines.items()},
        "outside": {f: sorted(v) for f, v in outside.items()},
        # "path:first line of the def:parameter" -> tests that read that default other
        # than by calling the function; and those read outside tests (Note [Default arguments])
        "default_reads": {k: sorted(v) for k, v in by_key.items()},
        "default_reads_outside": sorted(reads_outside),
        # test files whose collection runs a line (Note [Collection contexts])
        "collect": {f: {str(k): sorted(v) for k, v in d.items()} for f, d in collect.items()},
    }


def _marks(dirs):
    """(spawn id -> tokens of the children that started, tokens of those that saved)."""
    started, done = {}, set()
    for d in dirs:
        for name in os.listdir(d) if os.path.isdir(d) else ():
            kind, _, token = name.partition(".")
            if kind == "start":
                started.setdefault(token.split(".")[0], []).append(token)
            elif kind == "done":
                done.add(token)
    return started, done


def traced_spawners(spawners, spawns, marks) -> set:
    """The tests that start processes whose children were all traced (Note [Traced children]).

    ``spawns``: spawn id -> the test that started it; ``marks``: the directories where the
    children (tools/covmap_child/sitecustomize.py) left ``start.<spawn>.<pid>.<token>``
    before starting coverage and ``done.<...>`` after saving its data. A spawn counts as
    traced when at least one child started under it and every child that started is done;
    a test is traced when all its spawns are.
    """
    started, done = _marks(marks)
    ok = {}
    for spawn, test in spawns.items():
        tokens = started.get(spawn, [])
        ok[test] = ok.get(test, True) and bool(tokens) and all(t in done for t in tokens)
    return {t for t in spawners if ok.get(t, False)}


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
    extra = {"fingerprint": fingerprint(work), "files": file_hashes(work), "suite_seconds": wall}
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


def collected_by(cmap: dict, rel: str, first: int, last: int) -> list:
    """The test files whose collection runs any of lines first..last of rel."""
    by_line = cmap.get("collect", {}).get(rel, {})
    return sorted({f for ln in range(first, last + 1) for f in by_line.get(str(ln), ())})


def recollect(path: Path, root: Path) -> dict:
    """Split a map's ``<outside>`` lines: those only test modules' collection ran move to
    ``collect`` (Note [Collection contexts]), from one ``--collect-only`` run of the tree
    the map describes (a map built before collection had its own contexts)."""
    import tempfile

    cmap = json.loads(path.read_text())
    if cmap.get("fingerprint") != fingerprint(root):
        raise SystemExit(f"{path} does not describe this tree: extend it first")
    data = Path(tempfile.mkdtemp(prefix="tapegrad-recollect-"))
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(root / "src"), str(Path(__file__).parent)]),
        PYTHONDONTWRITEBYTECODE="1",
        TAPEGRAD_COVMAP=str(data / "cov"),
        TAPEGRAD_COVMAP_ROOT=str(root),
    )
    cmd = [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "covmap_plugin"]
    proc = subprocess.run(
        cmd + ["-p", "no:cacheprovider"], cwd=root, env=env, text=True, capture_output=True
    )
    if proc.returncode != 0:
        raise SystemExit("collection failed:\n" + "\n".join(proc.stdout.splitlines()[-10:]))
    fresh = convert(str(data / "cov*"), root, {})
    import shutil

    shutil.rmtree(data, ignore_errors=True)
    moved = 0
    outside = {}
    for f, v in cmap["outside"].items():
        only_collect = set(map(int, fresh["collect"].get(f, {}))) - set(fresh["outside"].get(f, ()))
        keep = set(v) - only_collect
        moved += len(set(v) - keep)
        outside[f] = sorted(keep)
    cmap.update(outside=outside, collect=fresh["collect"])
    path.write_text(json.dumps(cmap))
    print(f"{moved} lines ran only while test modules were collected: now in 'collect'")
    return cmap


def select(cmap: dict, rel: str, first: int, last: int):
    """(tests that run any of lines first..last of rel, runs outside tests?)."""
    by_line = cmap["lines"].get(rel, {})
    out_lines = set(cmap["outside"].get(rel, ()))
    ids, outside = set(), False
    for line in range(first, last + 1):
        ids.update(by_line.get(str(line), ()))
        outside = outside or line in out_lines
    return sorted(ids), outside


def _copy_tree(root: Path, work: Path):
    """The files tests read, as tools/mutate.py copies them."""
    import shutil

    for name in ("src", "tests", "benchmarks", "docs", "tools"):
        if (root / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", ".covmap-data")
            shutil.copytree(root / name, work / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        if (root / name).exists():
            shutil.copy(root / name, work / name)


def _tests_read_benchmarks(root: Path) -> bool:
    """Whether any file under tests/ names ``benchmarks`` (imports or reads one)."""
    return any(
        "benchmarks" in p.read_text(errors="replace") for p in (root / "tests").rglob("*.py")
    )


def _is_test_file(f: str) -> bool:
    return f.startswith("tests/") and Path(f).name.startswith("test_") and f.endswith(".py")


def _is_helper(f: str) -> bool:
    """A file under tests/ that pytest does not collect and that no conftest is."""
    return f.startswith("tests/") and not _is_test_file(f) and Path(f).name != "conftest.py"


# a test that lists a directory can see any file in it (Note [Helper files])
_LISTS_FILES = re.compile(r"glob\(|rglob\(|listdir\(|scandir\(|os\.walk\(|iterdir\(")


def _helper_users(root: Path, helpers) -> set:
    """The test files that can observe the changed helper files (Note [Helper files])."""
    if not helpers:
        return set()
    texts = {
        str(p.relative_to(root)): p.read_text(errors="replace")
        for p in (root / "tests").rglob("*")
        if p.is_file() and p.suffix in (".py", ".txt", ".json", ".toml", ".cfg", ".ini")
    }
    names = {Path(f).stem if f.endswith(".py") else Path(f).name for f in helpers}
    users, todo = set(), set(names)
    while todo:
        name = todo.pop()
        for f, text in texts.items():
            if f not in users and re.search(rf"\b{re.escape(name)}\b", text):
                users.add(f)
                if _is_helper(f):  # a helper importing a helper: its users too
                    todo.add(Path(f).stem if f.endswith(".py") else Path(f).name)
    users |= {f for f, text in texts.items() if _is_test_file(f) and _LISTS_FILES.search(text)}
    return {f for f in users if _is_test_file(f)}


def _src_hunks(old: str, new: str):
    """(old line -> new line for unchanged lines, [(first, last) old lines of each edit])."""
    import difflib

    a, b = old.splitlines(), new.splitlines()
    mapping, hunks = {}, []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            mapping.update({i + 1: j + 1 for i, j in zip(range(i1, i2), range(j1, j2))})
        else:  # old lines i1+1..i2 (an insertion sits between lines i1 and i1+1)
            added = "\n".join(b[j1:j2]) if op == "insert" else None
            hunks.append((i1 + 1, max(i2, i1 + 1), added))
    return mapping, hunks


def _only_definitions(text) -> bool:
    """Whether inserted module-level ``text`` only defines functions or classes without
    decorators (running it at import binds a name and changes nothing the other code
    reads; a decorator such as ``@register`` would)."""
    import ast

    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return bool(tree.body) and all(isinstance(n, kinds) and not n.decorator_list for n in tree.body)


def _never_ran(tree, first: int, last: int, by_line: dict, outside: set) -> bool:
    """Whether the innermost statements holding old lines ``first..last`` never ran, in a
    test or at import. A replacement there sits where no test's control flow ever
    arrived (the code before it is unchanged, and a line event fires on a statement's
    first line whenever it starts), so no test can run the new text either; a line
    that only a compound statement (a def, an ``if`` header) holds counts that one."""
    import ast

    stmts = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    for ln in range(first, last + 1):
        holding = [n for n in stmts if n.lineno <= ln <= n.end_lineno]
        if not holding:
            return False  # a line outside every statement (module level): be strict
        inner = min(holding, key=lambda n: n.end_lineno - n.lineno)
        lines = range(inner.lineno, inner.end_lineno + 1)
        if any(str(k) in by_line or k in outside for k in lines):
            return False
    return True


def _scopes(text: str):
    """What a function's compiled scope depends on: per code object, its qualified name,
    local, cell and free variables and flags (generator, ...). An edit that keeps
    these (new lambdas and comprehensions aside) cannot change how untouched lines
    resolve their names (a new assignment would make a global local everywhere)."""
    from collections import Counter

    out, todo = Counter(), [compile(text, "<covmap>", "exec")]
    anon = ("<lambda>", "<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>")
    while todo:
        code = todo.pop()
        todo += [c for c in code.co_consts if hasattr(c, "co_code")]
        if code.co_name not in anon:
            out[
                (
                    code.co_qualname,
                    code.co_varnames,
                    code.co_cellvars,
                    code.co_freevars,
                    code.co_flags,
                )
            ] += 1
    return out


def _scopes_kept(old: str, new: str) -> bool:
    """``_scopes`` equal, or different only by new local variables that the old function
    never named at all (``top = ...`` in a rewritten ``raise``): no untouched line names
    them, so none resolves a name differently."""
    if _scopes(old) == _scopes(new):
        return True
    anon = ("<lambda>", "<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>")

    def codes(text):
        out, todo = {}, [compile(text, "<covmap>", "exec")]
        while todo:
            code = todo.pop()
            todo += [c for c in code.co_consts if hasattr(c, "co_code")]
            if code.co_name not in anon:
                out.setdefault(code.co_qualname, []).append(code)
        return out

    def named(code):  # every name a code object or its nested ones mention
        names = set(code.co_names) | set(code.co_varnames) | set(code.co_freevars)
        names |= set(code.co_cellvars)
        for c in code.co_consts:
            if hasattr(c, "co_code"):
                names |= named(c)
        return names

    a, b = codes(old), codes(new)
    if a.keys() != b.keys() or any(len(a[k]) != len(b[k]) for k in a):
        return False
    for k in a:
        for x, y in zip(a[k], b[k]):
            same = (x.co_cellvars, x.co_freevars, x.co_flags) == (
                y.co_cellvars,
                y.co_freevars,
                y.co_flags,
            )
            added = set(y.co_varnames) - set(x.co_varnames)
            if not same or not set(x.co_varnames) <= set(y.co_varnames) or added & named(x):
                return False
    return True


def _holding_statement(tree, first: int, last: int, body):
    """(first, last) lines of the innermost statement of the function body ``body`` that
    holds all of old lines ``first..last``, or None when only the function does."""
    import ast

    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= first and last <= node.end_lineno:
            inside = body[0] <= node.lineno and node.end_lineno <= body[1]
            if inside and (best is None or node.end_lineno - node.lineno < best[1] - best[0]):
                best = (node.lineno, node.end_lineno)
    return best


def _enclosing_body(tree, first: int, last: int):
    """(first, last) body lines of the innermost function whose body holds first..last."""
    import ast

    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lo, hi = node.body[0].lineno, node.end_lineno
            if lo <= first and last <= hi and (best is None or hi - lo < best[1] - best[0]):
                best = (lo, hi)
    return best


def extend(
    path: Path,
    root: Path,
    jobs: int = 0,
    base: str | None = None,
    spawners: bool = False,
    dry_run: bool = False,
    loose: bool = False,
) -> dict:
    """Bring a stored map up to date after tests were added or edited, or functions fixed.

    The stored per-file hashes say what changed since the map was built. A test file
    (``tests/**/test_*.py``) that changed or is new is rerun under the plugin; its
    tests replace the ones the map had for it. A changed file under src/ (its old text
    from the commit ``base``) is compared line by line: an edit inside a function body
    reruns every test that executed a line of that body (only they can take another
    path; the others run the same code, its lines renumbered), and an edit that only
    replaces or deletes statements that never ran (no test, not at import) reruns
    nothing, provided every function keeps its compiled scope (``_never_ran``,
    ``_scopes``): a fix in a branch no test reached, typically. An edit outside function bodies,
    in a function that also runs outside tests (at import), or any other changed file
    (a conftest, a helper module, docs/ops.md): refuse, build afresh.

    ``loose`` (Note [Loose extension]): an import-time edit of a src file reruns every
    test that executed a line of that file instead of refusing.

    ``spawners``: also rerun the map's spawners (tests whose child processes were not
    traced, e.g. in a map built before children were), so that their children's lines
    enter the map and those traced leave the run-for-every-mutant list.
    """
    import ast
    import tempfile

    cmap = json.loads(path.read_text())
    old = cmap.get("files")
    if old is None:
        raise SystemExit(f"{path} has no per-file hashes; build it afresh")
    now = file_hashes(root)
    changed = sorted(f for f in set(old) | set(now) if old.get(f) != now.get(f))
    srcs = [f for f in changed if f.startswith("src/") and f.endswith(".py") and f in old]
    bad = [f for f in changed if not _is_test_file(f) and f not in srcs]
    helper_users = _helper_users(root, [f for f in bad if _is_helper(f)])
    bad = [f for f in bad if not _is_helper(f)]
    if not _tests_read_benchmarks(root):  # then an edited benchmark changes no test's run
        bad = [f for f in bad if not f.startswith("benchmarks/")]
    if bad:
        raise SystemExit(f"not only test and src files changed ({', '.join(bad[:5])})")
    if srcs and base is None:
        raise SystemExit("src/ changed: give --base, the commit the map was built at")
    rerun_ids, remaps = set(), {}
    for f in srcs:
        text = subprocess.run(
            ["git", "show", f"{base}:{f}"], cwd=root, capture_output=True, text=True, check=True
        ).stdout
        if hashlib.sha256(text.encode()).hexdigest() != old[f]:
            raise SystemExit(f"{f} at {base} is not the file the map was built from")
        mapping, hunks = _src_hunks(text, (root / f).read_text())
        remaps[f] = mapping
        by_line = cmap["lines"].get(f, {})
        outside = set(cmap["outside"].get(f, ()))
        tree = ast.parse(text)
        scopes_kept = _scopes_kept(text, (root / f).read_text())
        for first, last, added in hunks:
            ran = set()
            for ln in range(first, last + 1):
                ran.update(by_line.get(str(ln), ()))
            body = _enclosing_body(tree, first, last)
            if added is None and scopes_kept and _never_ran(tree, first, last, by_line, outside):
                continue  # only statements that never ran were replaced or deleted
            if body is None and added is not None and _only_definitions(added):
                continue  # new functions or classes: run only from edited code or new tests
            # Note [Edited statements]: the one statement of the body holding the edit
            stmt = None
            if body is not None and added is None and scopes_kept:
                stmt = _holding_statement(tree, first, last, body)
            scope = stmt or body
            at_import = body is None and (ran or outside & set(range(first, last + 1)))
            at_import = at_import or (
                body is not None and outside & set(range(scope[0], scope[1] + 1))
            )
            if at_import and loose:  # Note [Loose extension]
                print(f"{f}:{first}-{last}: runs at import; rerunning every test that ran {f}")
                for ids in by_line.values():
                    rerun_ids.update(ids)
                continue
            if body is None:  # module level: only code that never ran (nor at import)
                if at_import:
                    raise SystemExit(f"{f}:{first}-{last}: an edit of code that runs at import")
                continue
            if at_import:
                raise SystemExit(f"{f}:{first}: the edited code runs at import: build afresh")
            lines = range(scope[0], scope[1] + 1)
            for ln in lines:
                rerun_ids.update(by_line.get(str(ln), ()))
    again = set(cmap["spawners"]) if spawners else set()
    rerun_tests = sorted({cmap["tests"][i] for i in rerun_ids} | again)
    files_rerun = sorted({f for f in changed if _is_test_file(f) and f in now} | helper_users)
    gone = {f for f in changed if _is_test_file(f)}
    if dry_run:
        print(f"would rerun {len(files_rerun)} test files and {len(rerun_tests)} tests")
        return cmap
    work = Path(tempfile.mkdtemp(prefix="tapegrad-covmap-"))
    _copy_tree(root, work)
    fresh = {"tests": [], "seconds": [], "spawners": [], "lines": {}, "outside": {}}
    fresh["traced_spawners"] = []
    if files_rerun or rerun_tests:
        data = work / ".covmap-data"
        data.mkdir()
        env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join([str(work / "src"), str(Path(__file__).parent)]),
            PYTHONDONTWRITEBYTECODE="1",
            TAPEGRAD_COVMAP=str(data / "cov"),
            TAPEGRAD_COVMAP_ROOT=str(work),
        )
        # the rerun tests of unchanged files, by node id, with the changed files whole
        keep_ids = [t for t in rerun_tests if t.split("::")[0] not in gone]
        listing = work / ".selected-tests"
        todo = sorted({t.split("::")[0] for t in keep_ids} | set(files_rerun))
        select = list(keep_ids)
        xdist = ["-n", str(jobs)] if jobs else []
        cmd = [sys.executable, "-m", "pytest", "-q", *xdist, "-p", "covmap_plugin"]
        cmd += ["-p", "no:cacheprovider"]
        procs = []
        if files_rerun:
            procs.append(cmd + files_rerun)
        if select:
            listing.write_text("".join(f"{t}\n" for t in select))
            procs.append(cmd + [t for t in todo if t not in files_rerun])
        for i, c in enumerate(procs):
            e = dict(env)
            if select and i == len(procs) - 1:
                e["TAPEGRAD_SELECT"] = str(listing)
            proc = subprocess.run(c, cwd=work, env=e, capture_output=True, text=True)
            if proc.returncode != 0:
                tail = "\n".join(proc.stdout.splitlines()[-15:])
                raise SystemExit(f"the rerun tests do not pass under coverage:\n{tail}")
        fresh = convert(str(data / "cov*"), work, {})
        missing = set(select) - set(fresh["tests"])
        if missing:
            raise SystemExit(f"{len(missing)} rerun tests did not run, e.g. {sorted(missing)[0]}")
    import shutil

    shutil.rmtree(work, ignore_errors=True)  # the scratch copy of the tree
    replaced = set(fresh["tests"]) | set(rerun_tests)
    keep = [
        i for i, t in enumerate(cmap["tests"]) if t.split("::")[0] not in gone and t not in replaced
    ]
    renum = {i: j for j, i in enumerate(keep)}
    tests = [cmap["tests"][i] for i in keep] + fresh["tests"]
    seconds = [cmap["seconds"][i] for i in keep] + fresh["seconds"]
    shift = len(keep)

    def moved(f, ln):
        return remaps[f].get(ln) if f in remaps else ln

    lines = {}
    for f, by_line in cmap["lines"].items():
        for ln, ids in by_line.items():
            kept = [renum[i] for i in ids if i in renum]
            new_ln = moved(f, int(ln))
            if kept and new_ln is not None:
                lines.setdefault(f, {}).setdefault(str(new_ln), []).extend(kept)
            elif kept:
                raise SystemExit(f"{f}:{ln}: an edited line that a test not rerun executed")
    for f, by_line in fresh["lines"].items():
        for ln, ids in by_line.items():
            merged = lines.setdefault(f, {}).setdefault(ln, [])
            merged.extend(i + shift for i in ids)
    outside = {}
    for f, v in cmap["outside"].items():
        outside[f] = {moved(f, ln) for ln in v} - {None}
    for f, v in fresh["outside"].items():
        outside.setdefault(f, set()).update(v)

    def kept(key):
        return {t for t in cmap.get(key, ()) if t in set(tests) and t not in set(fresh["tests"])}

    if "default_reads" in cmap:  # Note [Default arguments]: renumbered, the defs moved
        reads, reads_out = {}, set(fresh.get("default_reads_outside", ()))
        unknown = set(cmap.get("default_reads_unknown_files", ()))

        def rekey(key):
            f, ln, param = key.rsplit(":", 2)
            new_ln = moved(f, int(ln))
            if new_ln is None:  # the def line itself was edited: every default of f is full
                unknown.add(f)
                return None
            return f"{f}:{new_ln}:{param}"

        for key, ids in cmap["default_reads"].items():
            kept_ids = [renum[i] for i in ids if i in renum]
            new_key = rekey(key)
            if kept_ids and new_key is not None:
                reads.setdefault(new_key, set()).update(kept_ids)
        for key in cmap.get("default_reads_outside", ()):
            new_key = rekey(key)
            if new_key is not None:
                reads_out.add(new_key)
        for key, ids in fresh.get("default_reads", {}).items():
            reads.setdefault(key, set()).update(i + shift for i in ids)
        cmap.update(
            default_reads={k: sorted(v) for k, v in reads.items()},
            default_reads_outside=sorted(reads_out),
            default_reads_unknown_files=sorted(unknown),
        )

    cmap.update(
        traced_spawners=sorted(kept("traced_spawners") | set(fresh["traced_spawners"])),
        fingerprint=fingerprint(root),
        files=now,
        tests=tests,
        seconds=seconds,
        spawners=sorted(kept("spawners") | set(fresh["spawners"])),
        lines=lines,
        outside={f: sorted(v) for f, v in outside.items()},
    )
    cmap.pop("_index", None)
    path.write_text(json.dumps(cmap))
    print(f"reran {len(files_rerun)} test files and {len(rerun_tests)} tests of edited code")
    return cmap


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="update a line map after test files changed")
    ap.add_argument("--extend", default=".mutate/covmap.json", help="the map to update")
    ap.add_argument("--jobs", type=int, default=0, help="pytest-xdist workers")
    ap.add_argument("--base", default=None, help="the commit the map was built at (src edits)")
    ap.add_argument(
        "--spawners", action="store_true", help="rerun the untraced spawners, tracing children"
    )
    ap.add_argument("--dry-run", action="store_true", help="only say what would be rerun")
    ap.add_argument(
        "--loose", action="store_true", help="import-time edits: rerun the tests that ran the file"
    )
    ap.add_argument(
        "--recollect",
        action="store_true",
        help="move the lines only test modules' collection ran out of <outside> (then stop)",
    )
    a = ap.parse_args()
    if a.recollect:
        recollect(Path(a.extend), Path.cwd())
        sys.exit(0)
    m = extend(Path(a.extend), Path.cwd(), a.jobs, a.base, a.spawners, a.dry_run, a.loose)
    print(f"{len(m['tests'])} tests in the map")
