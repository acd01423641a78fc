"""Mutation testing: small deliberate bugs, one at a time; does the test suite notice?

Usage (from the repository root; not part of ``make test``)::

    python tools/mutate.py src/tapegrad/autograd src/tapegrad/jit/signature.py \\
        --sample 60 --seed 0 --jobs 2 --report mutants.md

Each mutant is one edit of one source file, found by walking its AST:

- ``binop``: an arithmetic operator swapped (+ -, * /, // /, ** *, @ *, % //)
- ``compare``: a comparison swapped (< <=, > >=, == !=, is / is not, in / not in)
- ``boolop``: ``and`` / ``or`` swapped; ``not x`` -> ``x``; ``-x`` -> ``x``
- ``const``: an int n -> n + 1, a float x -> 1.01 x (0.0 -> 1e-3), True <-> False
- ``drop``: a statement in a function body (assignment, call, augmented assignment,
  raise, return of a value) replaced by ``pass``

Docstrings, ``__all__``, strings (error messages) and type annotations are never
mutated. The working tree (src/, tests/, benchmarks/, pyproject.toml, README.md) is copied to a
scratch directory once; each mutant edits that copy, runs tests there with
``pytest -x`` (stop at the first failure), and restores the file. A mutant is
*killed* when a test fails or the run passes its time limit (an infinite loop), and
*survives* when the tests pass. Survivors are listed with their line and edit
so a person can decide whether each is equivalent (no observable change) or a
gap in the tests.

Which tests (Note [Mutant test selection] in tools/covmap.py): the first run
builds ``--covmap`` (default ``.mutate/covmap.json``), a map line -> tests that
execute it, by running the whole suite once under ``coverage`` with one context
per test (tools/covmap_plugin.py); later runs reuse it while src/ and tests/ are
unchanged. A mutant inside a function body whose lines never run outside a test
gets exactly the tests that execute its statement (lines that child processes run
count for the test that started them: Note [Traced children] in covmap.py), then (if
they pass) the few tests whose children could not be traced. Any other mutant
(module level, class body, decorator, default argument, or code that also runs
while modules are imported) gets the tests that execute it and then, if they
pass, the whole suite. This needs ``coverage`` (>= 7). ``--fork N`` decides mutants in N
fork servers, each a pytest process that collected the suite once (Note [Fork server] in
tools/forkserver.py): a mutant of a function body that never runs at import is put into the
live interpreter of a fork, which runs its tests; 0.3-2 s per killed mutant instead of
10-20 s of interpreter start and collection. ``--full`` runs the whole
suite for every mutant (the old way; ``--quick`` then first tries the test files
that name the module).
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import dataclasses
import os
import queue
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import covmap
import forkserver

BINOP_SWAP = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Pow: ast.Mult,
    ast.MatMult: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
}
CMP_SWAP = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
DROPPABLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Raise, ast.Return)


@dataclasses.dataclass
class Mutant:
    path: str  # relative to the repository root
    line: int
    kind: str
    before: str
    after: str
    span: tuple  # (lineno, col, end_lineno, end_col) of the replaced source
    lines: tuple = ()  # (first, last): lines whose coverage shows the mutant ran
    in_body: bool = False  # inside a function or lambda body (runs only when called)
    # a default that reads only constants, of a module-level function or method: (first
    # line of the def and its decorators, parameter, first and last line of the body)
    # (Note [Default arguments])
    default: tuple = ()

    def label(self):
        return f"{self.path}:{self.line} [{self.kind}] {self.before!r} -> {self.after!r}"


def _skip_nodes(tree):
    """ids of nodes never mutated: docstrings, annotations, __all__."""
    skip = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.update(id(n) for n in ast.walk(first))
        for field in ("annotation", "returns"):
            ann = getattr(node, field, None)
            if ann is not None:
                skip.update(id(n) for n in ast.walk(ann))
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            skip.update(id(n) for n in ast.walk(node))
    return skip


def _in_functions(tree):
    """ids of statements directly in a function body (candidates for ``drop``)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                for field in ("body", "orelse", "finalbody"):
                    stmts = getattr(sub, field, None)
                    if isinstance(stmts, list):
                        out.update(id(s) for s in stmts)
    return out


def _where(tree):
    """node id -> (first, last, in_body) for the coverage lookup of a mutant there.

    ``first..last`` are the lines of the innermost enclosing statement (for a
    compound statement, its header up to the node), one of which a line event
    fires on whenever the mutated code runs. ``in_body``: some enclosing function
    or lambda has the node in its body, so it runs only when that body runs.
    """
    out = {}

    def visit(node, stmt, in_body):
        if isinstance(node, ast.stmt):
            stmt = node
        if stmt is not None:
            last = node.end_lineno or node.lineno if isinstance(node, (ast.expr, ast.stmt)) else 0
            compound = any(isinstance(getattr(stmt, f, None), list) for f in ("body", "orelse"))
            end = max(last, stmt.lineno) if compound else stmt.end_lineno
            out[id(node)] = (stmt.lineno, end, in_body)
        for field, value in ast.iter_fields(node):
            body = in_body or (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                and field == "body"
            )
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    visit(child, stmt, body)

    visit(tree, None, False)
    return out


# the nodes of a default value that reads nothing but constants (Note [Default arguments])
_CONSTANT_EXPR = (
    ast.Constant,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.Tuple,
    ast.List,
    ast.Set,
    ast.Dict,
    ast.operator,
    ast.unaryop,
    ast.boolop,
    ast.cmpop,
    ast.expr_context,
)


def _constant_value(node) -> bool:
    """Whether evaluating ``node`` reads only constants: a literal, or operators over
    literals (``1.0 / 3``); no name, call, attribute or subscript, so evaluating it has no
    effect but its value (or an exception, which ``mutants_of`` checks for each mutant)."""
    return all(isinstance(n, _CONSTANT_EXPR) for n in ast.walk(node))


def _evaluates(text: str) -> bool:
    """Whether a constant expression evaluates without an exception (nothing else to read)."""
    try:
        eval(compile(f"(\n{text}\n)", "<default>", "eval"), {"__builtins__": {}}, {})
    except Exception:
        return False
    return True


def _defaults(tree):
    """node id -> ((first line of the def, parameter, first and last body line), the
    default's value node) for every node inside a default value that reads only constants
    (``_constant_value``) of a module-level function or method (Note [Default arguments]
    in tools/covmap.py; a generator's or coroutine's too: its body reads the value)."""
    out = {}
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        a = fn.args
        pos = a.posonlyargs + a.args
        pairs = list(zip(pos[len(pos) - len(a.defaults) :], a.defaults))
        pairs += [(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
        first = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
        for param, value in pairs:
            if not _constant_value(value):
                continue
            key = (first, param.arg, fn.body[0].lineno, fn.end_lineno)
            out.update({id(n): (key, value) for n in ast.walk(value)})
    return out


def mutants_of(path: Path, root: Path):
    source = path.read_text()
    tree = ast.parse(source)
    skip = _skip_nodes(tree)
    droppable = _in_functions(tree)
    where = _where(tree)
    rel = str(path.relative_to(root))
    found = []
    lines = [ln.encode() for ln in source.splitlines(keepends=True)]

    def between(l0, c0, l1, c1):
        """The source from line l0 (1-based), byte c0 to line l1, byte c1."""
        l0, l1 = l0 - 1, l1 - 1
        if l0 == l1:
            return lines[l0][c0:c1]
        return lines[l0][c0:] + b"".join(lines[l0 + 1 : l1]) + lines[l1][:c1]

    def segment(node):
        """``ast.get_source_segment`` without re-splitting the source for every node."""
        if getattr(node, "end_lineno", None) is None:
            return None
        return between(node.lineno, node.col_offset, node.end_lineno, node.end_col_offset).decode()

    defaults = _defaults(tree)

    def default_of(node, after):
        """The default ``node`` sits in, if its mutant ``after`` still evaluates."""
        key, value = defaults.get(id(node), ((), None))
        if value is None:
            return ()
        v0, v1 = (value.lineno, value.col_offset), (value.end_lineno, value.end_col_offset)
        n0, n1 = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
        text = between(*v0, *n0) + after.encode() + between(*n1, *v1)
        return key if _evaluates(text.decode()) else ()  # one that raises: import fails

    def add(node, kind, new_node=None, text=None):
        before = segment(node)
        if before is None:
            return
        after = text if text is not None else ast.unparse(new_node)
        if isinstance(node, ast.expr) and text is None:
            after = f"({after})"
        span = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
        first, last, in_body = where.get(id(node), (node.lineno, node.end_lineno, False))
        default = () if in_body else default_of(node, after)
        found.append(
            Mutant(rel, node.lineno, kind, before, after, span, (first, last), in_body, default)
        )

    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.BinOp) and type(node.op) in BINOP_SWAP:
            new = ast.BinOp(node.left, BINOP_SWAP[type(node.op)](), node.right)
            add(node, "binop", new)
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in CMP_SWAP:
            new = ast.Compare(node.left, [CMP_SWAP[type(node.ops[0])]()], node.comparators)
            add(node, "compare", new)
        elif isinstance(node, ast.BoolOp):
            new = ast.BoolOp(ast.Or() if isinstance(node.op, ast.And) else ast.And(), node.values)
            add(node, "boolop", new)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
            add(node, "boolop" if isinstance(node.op, ast.Not) else "binop", node.operand)
        elif isinstance(node, ast.Constant) and not isinstance(node.value, (str, bytes)):
            v = node.value
            if isinstance(v, bool):
                add(node, "const", text=repr(not v))
            elif isinstance(v, int):
                add(node, "const", text=repr(v + 1))
            elif isinstance(v, float):
                add(node, "const", text=repr(v * 1.01 if v else 1e-3))
        if isinstance(node, DROPPABLE) and id(node) in droppable:
            if isinstance(node, ast.Return) and node.value is None:
                continue
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue  # docstring-like
            add(node, "drop", text="pass")
    found.sort(key=lambda m: (m.span[0], m.span[1], m.kind))
    return found


def apply(source: str, m: Mutant) -> str:
    lines = source.splitlines(keepends=True)
    l0, c0, l1, c1 = m.span
    # col offsets are UTF-8 byte offsets
    first = lines[l0 - 1].encode()
    last = lines[l1 - 1].encode()
    new = first[:c0].decode() + m.after + last[c1:].decode()
    return "".join(lines[: l0 - 1]) + new + "".join(lines[l1:])


def run_tests(workdir: Path, args, timeout, select=None):
    """Run pytest in ``workdir``; ``select``: only these node ids (by covmap_plugin)."""
    tools = str(Path(__file__).resolve().parent)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(workdir / "src"), tools]),
        PYTHONDONTWRITEBYTECODE="1",
    )
    if select is not None:
        listing = workdir / ".selected-tests"
        listing.write_text("".join(f"{t}\n" for t in select))  # in this order
        env["TAPEGRAD_SELECT"] = str(listing)
        args = [*args, *sorted({t.split("::")[0] for t in select})]
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
    cmd += ["-p", "covmap_plugin", *args]
    start = time.monotonic()
    # The limit is CPU time of each process (an infinite loop), not wall time: on a
    # loaded machine a wall-clock limit cut slow but passing runs and counted them
    # as kills. The wall-clock limit is only a backstop.
    try:
        proc = subprocess.run(
            cmd,
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=max(10 * timeout, 3600),
            preexec_fn=lambda: resource.setrlimit(
                resource.RLIMIT_CPU, (int(timeout), int(timeout) + 30)
            ),
        )
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - start, "timeout (wall clock)"
    if proc.returncode < 0 or "node down" in proc.stdout or "crashed" in proc.stdout:
        return "timeout", time.monotonic() - start, f"timeout: over {timeout:.0f} s of CPU"
    tail = proc.stdout.strip().splitlines()[-1:] if proc.stdout else []
    failed = [ln for ln in proc.stdout.splitlines() if ln.startswith(("FAILED", "ERROR"))]
    # 5: no test collected (every selected test deselected), not a failure
    status = "passed" if proc.returncode in (0, 5) else "failed"
    return status, time.monotonic() - start, (failed[:1] or tail or [""])[0]


def quick_tests(workdir: Path, m: Mutant):
    """Test files that mention the mutated module's name (a guess; survivors rerun all)."""
    stem = Path(m.path).stem.lstrip("_")
    parent = Path(m.path).parent.name
    hits = []
    for t in sorted((workdir / "tests").rglob("test_*.py")):
        text = t.read_text()
        if stem in text or (parent not in ("src", "tapegrad") and parent in t.name):
            hits.append(str(t.relative_to(workdir)))
    return hits


def _seconds(cmap, test):
    """The test's duration in the unmutated run (from the line map)."""
    index = cmap.get("_index")
    if index is None:
        index = cmap["_index"] = {t: i for i, t in enumerate(cmap["tests"])}
    i = index.get(test)
    return cmap["seconds"][i] if i is not None else 60.0  # a whole file: a guess


def _file_seconds(cmap, path):
    """A test file's duration in the unmutated run (the sum of its tests')."""
    if "_file_seconds" not in cmap:
        per = {}
        for t, s in zip(cmap["tests"], cmap["seconds"]):
            per[t.split("::")[0]] = per.get(t.split("::")[0], 0.0) + s
        cmap["_file_seconds"] = per
    return cmap["_file_seconds"].get(path, 60.0)


def run_selected(work: Path, m: Mutant, cmap, args, timeout):
    """Run the tests that can observe ``m`` (Note [Mutant test selection] in covmap.py).

    Returns (status, seconds, why, mode); mode "full" asks the caller for the whole
    suite when the selected tests pass (code that runs at import time).
    """
    ids, outside = covmap.select(cmap, m.path, *m.lines)
    full = outside or not m.in_body
    tag = ""
    if full and m.default and "default_reads" in cmap:  # Note [Default arguments]
        first, param, lo, hi = m.default
        key = f"{m.path}:{first}:{param}"
        ids, outside = covmap.select(cmap, m.path, lo, hi)  # the calls: the body runs
        ids = set(ids) | set(cmap["default_reads"].get(key, ()))  # introspection
        full = outside or key in set(cmap["default_reads_outside"])
        full = full or m.path in set(cmap.get("default_reads_unknown_files", ()))
        tag = " default"
    # fastest first: with -x a failing test ends the run, and a short one fails sooner
    tests = sorted({cmap["tests"][i] for i in ids}, key=lambda t: (_seconds(cmap, t), t))
    # the test files whose collection runs the line, whole (Note [Collection contexts])
    files = covmap.collected_by(cmap, m.path, *(m.default[2:] if tag else m.lines))
    spawners = [t for t in cmap["spawners"] if t not in set(tests)]
    mode = "full" if full else f"{len(tests)}+{len(spawners)}"
    mode += f" +{len(files)} files" if files and not full else ""
    mode += tag
    status, took, why = "passed", 0.0, "no test runs this line"
    # the covering tests first (most mutants die there), then those starting a process
    for run in (tests, [] if full else files + spawners):
        if run and status == "passed":
            secs = sum(_seconds(cmap, t) for t in run)
            xdist = ["-n", str(args.jobs)] if args.jobs and len(run) > 300 else []
            budget = timeout if full else min(timeout, 120 + 10 * secs)
            status, t, why = run_tests(work, xdist, budget, select=run)
            took += t
    return status, took, why, mode


def run_forked(server, work: Path, m: Mutant, cmap, timeout):
    """Decide ``m`` in the fork server (Note [Fork server] in tools/forkserver.py), or
    return None when it must run in a fresh interpreter: code that runs at import, a
    default argument, or a mutant the live interpreter cannot take. Test modules whose
    collection runs the line are collected again in the fork, under the mutant."""
    ids, outside = covmap.select(cmap, m.path, *m.lines)
    if outside or not m.in_body:
        return None
    # the test files whose collection runs the line, collected again in the fork
    files = covmap.collected_by(cmap, m.path, *m.lines)
    tests = sorted({cmap["tests"][i] for i in ids}, key=lambda t: (_seconds(cmap, t), t))
    spawners = [t for t in cmap["spawners"] if t not in set(tests)]
    mode = f"{len(tests)}+{len(spawners)}" + (f" +{len(files)} files" if files else "") + " fork"
    run = tests + spawners
    if not run and not files:
        return "passed", 0.0, "no test runs this line", mode
    secs = sum(_seconds(cmap, t) for t in run) + sum(_file_seconds(cmap, f) for f in files)
    # The child's CPU limit counts its own work, not the processes the spawners start
    # (their waiting costs no CPU): six times the in-process tests' time in the map (itself
    # measured under coverage) also leaves room for BLAS threads, and ends a mutant that
    # loops in a minute or two instead of 15 (seed 2212: counting.py:116 ran 936 s). The
    # wall clock, as before, bounds the spawners.
    own = sum(_seconds(cmap, t) for t in tests if t not in set(cmap["spawners"]))
    own += sum(_file_seconds(cmap, f) for f in files)
    original = (work / m.path).read_text()
    reply = server.run(
        work / m.path,
        original,
        apply(original, m),
        run,
        cpu=min(timeout, 60 + 6 * own),
        wall=max(600, 4 * min(timeout, 120 + 10 * secs)),
        files=files,
    )
    if reply["status"] in ("unsupported", "error"):
        return None
    return reply["status"], reply["secs"], reply["why"], mode


def merge_reports(paths, out):
    """One report from the shards' reports (rows in path order, the score recounted)."""
    head, rows = None, []
    for path in paths:
        text = Path(path).read_text()
        head = head or text.split("\n\n")[:2]
        rows += [ln for ln in text.splitlines() if ln.startswith("| `")]
    rows = sorted({ln.split("` |")[0]: ln for ln in rows}.values())  # a mutant once
    verdicts = [ln.rsplit(" | ", 2)[-2] for ln in rows]
    valid = [v for v in verdicts if v != "invalid"]
    killed = valid.count("killed")
    score = 100.0 * killed / max(1, len(valid))
    title, cmd = head
    body = (
        f"{title}\n\n{cmd}\n\n**{killed}/{len(valid)} killed ({score:.1f}%)**; "
        f"{len(verdicts) - len(valid)} invalid; merged from {len(paths)} shards.\n\n"
        "| mutant | tests run | verdict | first failure |\n|---|---|---|---|\n"
    )
    Path(out).write_text(body + "".join(r + "\n" for r in rows))
    print(f"score: {killed}/{len(valid)} killed ({score:.1f}%)")
    return 0


def _head(root):
    """The commit checked out when the run starts (the tree copied for the run)."""
    try:
        return (
            subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
            ).stdout.strip()
            or "?"
        )
    except OSError:
        return "?"


def report_head(args, argv, root, killed, valid, score, total):
    commit = args.commit
    cmd = " ".join(["python tools/mutate.py", *(argv if argv is not None else sys.argv[1:])])
    return (
        f"# Mutation run (seed {args.seed})\n\n`{cmd}` at commit {commit}\n\n"
        f"**{killed}/{valid} killed ({score:.1f}%)**; {total - valid} invalid. "
        "Tests run: `full` = the whole suite (code that runs at import time), "
        "`N+S` = the N tests whose coverage (theirs or their child processes') includes the "
        "line and the S tests that start a process the map could not trace "
        "(Note [Mutant test selection] in tools/covmap.py).\n\n"
    )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+", help="files or directories under src/ to mutate")
    p.add_argument("--sample", type=int, default=None, help="test N random mutants (all if unset)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--kinds", default="binop,compare,boolop,const,drop")
    p.add_argument("--jobs", type=int, default=2, help="pytest-xdist workers (0: none)")
    p.add_argument("--timeout", type=float, default=900, help="seconds per suite run")
    p.add_argument("--quick", action="store_true", help="try related test files first")
    p.add_argument("--list", action="store_true", help="only list the mutants")
    p.add_argument(
        "--only",
        nargs="+",
        default=None,
        metavar="PATH:LINE",
        help="only the mutants on these lines (e.g. src/tapegrad/autograd/engine.py:189)",
    )
    p.add_argument("--report", default=None, help="write a Markdown report here")
    p.add_argument(
        "--covmap",
        default=".mutate/covmap.json",
        help="line -> tests map (built by running the suite under coverage when missing or stale)",
    )
    p.add_argument("--shard", default="0/1", help="K/N: run only mutants K, K+N, ... of the sample")
    p.add_argument("--skip", type=int, default=0, help="skip the first N mutants (of the shard)")
    p.add_argument("--reverse", action="store_true", help="run the shard's mutants last first")
    p.add_argument("--shuffle", action="store_true", help="run the shard's mutants in random order")
    p.add_argument(
        "--skip-done",
        nargs="+",
        default=(),
        metavar="REPORT",
        help="before each mutant, skip it if one of these reports has it (a second process "
        "with --reverse on the same shard then meets the first one in the middle)",
    )
    p.add_argument(
        "--merge",
        nargs="+",
        default=None,
        metavar="REPORT",
        help="merge the reports of shards into --report (the paths are then ignored)",
    )
    p.add_argument(
        "--fork",
        type=int,
        default=0,
        metavar="N",
        help="N fork servers, each deciding mutants in parallel (Note [Fork server])",
    )
    p.add_argument(
        "--fork-only",
        action="store_true",
        help="leave out the mutants a fork cannot decide (a survey of function bodies; no score)",
    )
    p.add_argument(
        "--full", action="store_true", help="no test selection: the whole suite for every mutant"
    )
    args = p.parse_args(argv)

    root = Path.cwd()
    args.commit = _head(root)
    if args.merge:
        return merge_reports(args.merge, args.report)
    files = []
    for raw in args.paths:
        path = Path(raw).resolve()
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    kinds = set(args.kinds.split(","))
    pool = [m for f in files for m in mutants_of(f, root) if m.kind in kinds]
    if args.only is not None:
        pool = [m for m in pool if f"{m.path}:{m.line}" in set(args.only)]
    print(f"{len(pool)} mutants in {len(files)} files", flush=True)
    if args.sample is not None and args.sample < len(pool):
        pool = sorted(
            random.Random(args.seed).sample(pool, args.sample), key=lambda m: (m.path, m.line)
        )
    k, n = (int(v) for v in args.shard.split("/"))
    pool = pool[k::n][args.skip :]
    if args.reverse:
        pool = pool[::-1]
    if args.shuffle:  # a run cut short still covers every area
        random.Random(args.seed + 1).shuffle(pool)
    if args.list:
        for m in pool:
            print(m.label())
        return 0

    slots = max(1, args.fork)
    works = [_copy_tree(root) for _ in range(slots)]
    work = works[0]
    xdist = ["-n", str(args.jobs)] if args.jobs else []

    cmap = None
    if args.full:
        status, secs, why = run_tests(work, xdist, args.timeout)
        if status != "passed":
            print(f"the unmutated suite does not pass ({why}); fix that first", file=sys.stderr)
            return 2
    else:
        cmap = covmap.load(root / args.covmap, root)
        if cmap is None:
            print(f"building {args.covmap} (the suite under coverage)...", flush=True)
            cmap = covmap.build(work, root, root / args.covmap, args.jobs)
        secs = cmap["suite_seconds"]
        print(f"line map of {len(cmap['tests'])} tests, {len(cmap['spawners'])} start a process")
    print(f"baseline suite: {secs:.0f} s", flush=True)
    timeout = max(args.timeout, 3 * secs)
    servers = []
    if args.fork and cmap is not None:
        servers = _start_servers(works, pool, cmap)
        if servers is None:
            return 2
    free = queue.Queue()
    for k in range(slots):
        free.put(k)
    lock = threading.Lock()
    results = [None] * len(pool)

    def decide(i, m):
        if _done_elsewhere(m, args.skip_done):
            print(f"[{i + 1}/{len(pool)}] decided by another run: {m.label()}", flush=True)
            results[i] = (m, "elsewhere", "", "")
            return
        k = free.get()
        try:
            verdict, secs, why, mode = _decide(m, works[k], servers[k] if servers else None)
        finally:
            free.put(k)
        with lock:
            results[i] = (m, verdict, why, mode)
            print(
                f"[{i + 1}/{len(pool)}] {verdict:8s} {secs:5.0f}s {mode}  {m.label()}  {why}",
                flush=True,
            )
            done = [r for r in results if r is not None]
            if args.report and len(done) < len(pool):
                write_report(args, argv, root, done, len(pool))

    def _decide(m, work, server):
        target = work / m.path
        original = target.read_text()
        try:
            compile(apply(original, m), str(target), "exec")
        except SyntaxError:
            return "invalid", 0.0, "mutant does not compile", "full"
        forked = run_forked(server, work, m, cmap, timeout) if server else None
        if forked is not None:
            status, secs, why, mode = forked
        elif args.fork_only:
            return "elsewhere", 0.0, "not run: needs a fresh interpreter (--fork-only)", "-"
        else:
            target.write_text(apply(original, m))
            try:
                status, secs, why, mode = "passed", 0.0, "", "full"
                if cmap is not None:
                    status, secs, why, mode = run_selected(work, m, cmap, args, timeout)
                elif args.quick:
                    related = quick_tests(work, m)
                    if related:
                        status, secs, why = run_tests(work, related, timeout)
                if status == "passed" and mode == "full":
                    status, s2, why = run_tests(work, xdist, timeout)
                    secs += s2
            finally:
                target.write_text(original)
        verdict = {"passed": "SURVIVED", "invalid": "invalid"}.get(status, "killed")
        return verdict, secs, why, mode

    with concurrent.futures.ThreadPoolExecutor(slots) as ex:
        for f in [ex.submit(decide, i, m) for i, m in enumerate(pool)]:
            f.result()
    write_report(args, argv, root, results, len(pool))
    for server in servers:
        server.close()
    for w in works:
        shutil.rmtree(w, ignore_errors=True)
    return 0


def _copy_tree(root):
    """A scratch copy of what the tests read, with compiled caches (their mtimes match)."""
    work = Path(tempfile.mkdtemp(prefix="tapegrad-mutate-"))
    for name in ("src", "tests", "benchmarks", "docs", "tools"):  # tests read docs/, tools/
        if (root / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__")
            shutil.copytree(root / name, work / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):  # tests read README.md's examples
        if (root / name).exists():
            shutil.copy(root / name, work / name)
    compiled = [str(work / "src"), str(work / "tests")]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *compiled], check=True)
    return work


def _start_servers(works, pool, cmap):
    """One fork server per copy; first the unmutated selections of a few mutants, which must
    pass (Note [Fork server])."""
    servers = [forkserver.Server(w, str(w / ".forkserver.log")) for w in works]
    for s in servers:
        print(f"fork server: {s.hello['ready']} tests collected, {s.hello['threads']} threads")
    checked = 0
    for m in pool[:: max(1, len(pool) // 5)][:5]:
        ids, _ = covmap.select(cmap, m.path, *m.lines)
        tests = [cmap["tests"][i] for i in ids][:200]
        if not tests:
            continue
        path = works[0] / m.path
        reply = servers[0].run(path, path.read_text(), None, tests, cpu=3600, wall=3600)
        checked += len(tests)
        if reply["status"] != "passed":
            print(f"the unmutated tests fail in a fork ({reply['why']}); fix that first")
            return None
    print(f"fork server: {checked} unmutated tests pass in a fork", flush=True)
    return servers


def _row_label(m):
    return f"| `{m.label().replace('|', '/').replace(chr(10), ' ')}` |"


def _done_elsewhere(m, reports):
    """Whether a row of one of ``reports`` (another run of the same sample) has ``m``."""
    start = _row_label(m)
    for path in reports:
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        if any(ln.startswith(start) for ln in text.splitlines()):
            return True
    return False


def write_report(args, argv, root, results, planned):
    """The score and table so far (rewritten after each mutant: a cut run keeps its part)."""
    planned -= sum(r[1] == "elsewhere" for r in results)
    results = [r for r in results if r[1] != "elsewhere"]
    valid = [r for r in results if r[1] != "invalid"]
    killed = sum(r[1] == "killed" for r in valid)
    score = 100.0 * killed / max(1, len(valid))
    if len(results) == planned:
        print(f"\nscore: {killed}/{len(valid)} killed ({score:.1f}%)")
        for m, *_ in (r for r in valid if r[1] == "SURVIVED"):
            print(f"  survived: {m.label()}")
    if args.report:
        with open(args.report, "w") as fh:
            fh.write(report_head(args, argv, root, killed, len(valid), score, len(results)))
            if len(results) < planned:
                fh.write(f"(run in progress or cut: {len(results)} of {planned} mutants)\n\n")
            fh.write("| mutant | tests run | verdict | first failure |\n|---|---|---|---|\n")
            for m, verdict, why, mode in results:
                label = m.label().replace("|", "/").replace("\n", " ")
                fh.write(f"| `{label}` | {mode} | {verdict} | {why.replace('|', '/')} |\n")


if __name__ == "__main__":
    sys.exit(main())
