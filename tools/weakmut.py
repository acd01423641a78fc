"""Weak mutation of conditions: which mutants of tools/mutate.py no test can kill.

Usage (from the repository root; not part of ``make test``)::

    python tools/weakmut.py src/tapegrad/autograd src/tapegrad/ops src/tapegrad/nn \\
        src/tapegrad/jit/signature.py --jobs 2 --report weak.md

A mutant can be killed only by a test that *infects* the program with it: runs the
mutated code and gets a different value there. For a mutant inside a condition (the
test of an ``if``, ``elif``, ``while``, conditional expression, comprehension filter or
``assert``), a different value that matters is a different decision: the branch taken.
A boundary mutant (``n > 0`` -> ``n >= 0``) decides differently only where ``n == 0``;
``a or b`` -> ``a and b`` only where ``a`` and ``b`` differ in truth; a constant mutant
(``ndim == 3`` -> ``ndim == 4``) only for an input of rank 3 or 4. A mutant whose
condition decides the same way in every test, every time it runs, survives the suite
for certain (Note [Never flipped]); a sample run of ``tools/mutate.py`` finds such
survivors one at a time, 10-20 s each, while this tool finds all of them in one run of
the suite.

How: an import hook compiles every module under the given paths with each condition
that holds mutants (kinds ``compare``, ``boolop``, ``binop``, ``const``) rewritten to

    (COND if _tgwm_D[k] else _tgwm_f(k, lambda: COND, (lambda: MUTANT_1, ...)))

``_tgwm_f`` evaluates the original condition (its value is the one the program gets),
then each mutated condition not yet seen to decide differently, in a ``try``: one that
raises, or whose truth differs from the original's, is *flipped*. A site whose mutants
have all flipped is switched back to the plain condition (``_tgwm_D[k]``), so the cost
falls on the conditions the suite never turns. Each pytest worker writes the flipped
mutants and the sites that ran to ``$TAPEGRAD_WEAKMUT.<pid>.json`` when it finishes.

Note [Never flipped]
~~~~~~~~~~~~~~~~~~~~
"Never flipped" is exact for the run: the mutated program takes the same branches as the
original in every test, so every test passes on it as it does on the original (the
evaluation of a mutated condition reads the same names; conditions that change state when
evaluated, such as ``next(it)`` or a random draw, are rare in the sources and would at
worst change a later decision). Two limits:
- Tests that start a Python process (MPI, ``subprocess``) run their children without the
  hook: a condition only a child turns is listed as never flipped.
- Conditions in a class body, and conditions that bind a name (``:=``), call ``super()``,
  ``yield`` or ``await``, cannot move into a ``lambda``; conditions that call something
  that changes state (``_IMPURE``: ``fast_path``, ``pop``, ...) must not run twice. They
  are left alone and listed as not instrumented.
A listed mutant is a survivor or an equivalent mutant; the list is not a score. A mutant
that flipped may still survive (no test checks the branch's effect): that part is the
sample run's job.
"""

from __future__ import annotations

import argparse
import ast
import collections
import copy
import glob
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import mutate  # noqa: E402

KINDS = ("compare", "boolop", "binop", "const")


def _offsets(source: str):
    """Byte offset of the start of each line (1-based line -> offset at index line - 1)."""
    starts, pos = [], 0
    for line in source.encode().splitlines(keepends=True):
        starts.append(pos)
        pos += len(line)
    starts.append(pos)
    return starts


def _tests(tree):
    """(test node, scope) for every condition: the test of If, While, IfExp, Assert and
    comprehension filters, outermost only (a condition inside another is part of it)."""
    found = []

    def visit(node, scope, inside):
        tests = []
        if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            tests = [node.test]
        elif isinstance(node, ast.comprehension):
            tests = list(node.ifs)
        if not inside:
            found.extend((t, scope) for t in tests)
        for child in ast.iter_child_nodes(node):
            child_scope = scope
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                child_scope = "function"
            elif isinstance(node, ast.ClassDef):
                child_scope = "class"
            visit(child, child_scope, inside or any(child is t for t in tests))

    visit(tree, "module", False)
    return found


# calls that change state or depend on who holds a reference: a condition holding one is
# not evaluated a second time (``x is None and fast_path(self, other)`` would run the
# in-place update twice)
_IMPURE = {
    "fast_path", "pop", "next", "send", "append", "add", "update", "setdefault", "bump",
    "getrefcount", "_probe_agrees", "_reproduces", "super",
}  # fmt: skip


def _movable(test) -> bool:
    """Whether a condition can be evaluated in a ``lambda``, more than once, with the same
    meaning."""
    for n in ast.walk(test):
        if isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)):
            return False
        if isinstance(n, ast.Call):
            f = n.func
            name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
            if name in _IMPURE:
                return False
    return True


def plan(path: Path, root: Path):
    """The sites of one file: [(test node span, scope, [mutant, ...], movable)] and the
    parsed tree, for the mutants of ``KINDS`` that lie inside a condition."""
    source = path.read_text()
    tree = ast.parse(source)
    mutants = [m for m in mutate.mutants_of(path, root) if m.kind in KINDS]
    sites = []
    for test, scope in _tests(tree):
        t0, t1 = (test.lineno, test.col_offset), (test.end_lineno, test.end_col_offset)
        inside = [m for m in mutants if t0 <= m.span[:2] and m.span[2:] <= t1]
        if inside:
            sites.append((test, scope, inside, scope != "class" and _movable(test)))
    return source, tree, sites


def _mutated_test(source, starts, test, m) -> ast.expr:
    """The condition ``test`` with mutant ``m`` applied, parsed."""
    raw = source.encode()

    def at(line, col):
        return starts[line - 1] + col

    a, b = at(test.lineno, test.col_offset), at(test.end_lineno, test.end_col_offset)
    ma, mb = at(m.span[0], m.span[1]), at(m.span[2], m.span[3])
    text = (raw[a:ma] + m.after.encode() + raw[mb:b]).decode()
    expr = ast.parse(f"(\n{text}\n)", mode="eval").body
    for n in ast.walk(expr):  # report errors at the condition's line
        if hasattr(n, "lineno"):
            ast.copy_location(n, test)
    return expr


def instrument(path: Path, root: Path, first: int):
    """Compile ``path`` with its conditions rewritten (module docstring). Returns the
    code object, the sites [(k, site name, [mutant label, ...])] numbered from ``first``
    in this process (the name is the same in every process) and the labels of the
    mutants in conditions that could not be rewritten."""
    source, tree, sites = plan(path, root)
    starts = _offsets(source)
    replace, numbered, skipped = {}, [], []
    k = first
    rel = path.relative_to(root)
    for test, _scope, inside, movable in sites:
        if not movable:
            skipped += [m.label() for m in inside]
            continue
        mutated = [_mutated_test(source, starts, test, m) for m in inside]
        lam = lambda body: ast.Lambda(  # noqa: E731
            ast.arguments([], [], None, [], [], None, []), body
        )
        call = ast.Call(
            ast.Name("_tgwm_f", ast.Load()),
            [ast.Constant(k), lam(test), ast.Tuple([lam(e) for e in mutated], ast.Load())],
            [],
        )
        done = ast.Subscript(ast.Name("_tgwm_D", ast.Load()), ast.Constant(k), ast.Load())
        new = ast.IfExp(done, copy.deepcopy(test), call)
        for n in ast.walk(new):
            if isinstance(n, (ast.expr, ast.arguments)) and not hasattr(n, "lineno"):
                ast.copy_location(n, test)
        replace[id(test)] = new
        numbered.append((k, f"{rel}:{test.lineno}:{test.col_offset}", [m.label() for m in inside]))
        k += 1

    spots = []  # (parent, field, index or None) of each condition to replace
    for node in ast.walk(tree):
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                spots += [(node, field, i) for i, v in enumerate(value) if id(v) in replace]
            elif id(value) in replace:
                spots.append((node, field, None))
    for node, field, i in spots:
        if i is None:
            setattr(node, field, replace[id(getattr(node, field))])
        else:
            getattr(node, field)[i] = replace[id(getattr(node, field)[i])]
    ast.fix_missing_locations(tree)
    code = compile(tree, str(path), "exec", dont_inherit=True)
    return code, numbered, skipped


def _pool(paths, root):
    files = []
    for raw in paths:
        p = Path(raw).resolve()
        files += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    return files


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+", help="files or directories under src/ to instrument")
    p.add_argument("--jobs", type=int, default=2, help="pytest-xdist workers (0: none)")
    p.add_argument("--report", default=None, help="write a Markdown report here")
    p.add_argument("--json", default=".mutate/weak.json", help="the merged result")
    p.add_argument("pytest_args", nargs="*", default=[], help="after --: passed to pytest")
    args, extra = p.parse_known_args(argv)
    root = Path.cwd()
    files = _pool(args.paths, root)
    out = root / ".mutate" / "weak"
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.json"):
        old.unlink()
    env = dict(
        os.environ,
        TAPEGRAD_WEAKMUT=str(out / "run"),
        TAPEGRAD_WEAKMUT_FILES=os.pathsep.join(str(f) for f in files),
        TAPEGRAD_WEAKMUT_ROOT=str(root),
        PYTHONPATH=os.pathsep.join([str(root / "src"), str(Path(__file__).parent)]),
        PYTHONDONTWRITEBYTECODE="1",
    )
    xdist = ["-n", str(args.jobs)] if args.jobs else []
    cmd = [sys.executable, "-m", "pytest", "-q", *xdist, "-p", "weakmut_plugin"]
    cmd += ["-p", "no:cacheprovider", *extra]
    t0 = time.time()
    print(" ".join(cmd), flush=True)
    rc = subprocess.run(cmd, cwd=root, env=env).returncode
    secs = time.time() - t0
    flipped, ran, sites, skipped = set(), set(), {}, []
    for f in glob.glob(str(out / "run.*.json")):
        data = json.loads(Path(f).read_text())
        flipped.update(data["flipped"])
        ran.update(data["ran"])
        sites.update(data["sites"])
        skipped = sorted(set(skipped) | set(data["skipped"]))
    result = summarise(sites, flipped, ran, skipped)
    result.update(seconds=round(secs), pytest_rc=rc, commit=mutate._head(root))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1))
    print(
        f"{result['mutants']} condition mutants at {result['sites']} sites in {secs:.0f} s: "
        f"{len(result['never_flipped'])} never flipped, {len(result['never_ran'])} at sites "
        f"no test ran, {len(result['not_instrumented'])} not instrumented",
        flush=True,
    )
    if args.report:
        write_report(args.report, result, " ".join(sys.argv))
    return 0


def summarise(sites, flipped, ran, skipped):
    never_flipped, never_ran, total = [], [], 0
    for k, labels in sorted(sites.items()):
        for j, label in enumerate(labels):
            total += 1
            if k not in ran:
                never_ran.append(label)
            elif f"{k}#{j}" not in flipped:
                never_flipped.append(label)
    return dict(
        mutants=total,
        sites=len(sites),
        never_flipped=never_flipped,
        never_ran=never_ran,
        not_instrumented=skipped,
    )


def write_report(path, result, argv):
    by_file = collections.Counter(label.split(":")[0] for label in result["never_flipped"])
    lines = [
        "# Weak mutation of conditions",
        "",
        f"`{argv}` at commit {result['commit']} ({result['seconds']} s, pytest exit "
        f"{result['pytest_rc']}).",
        "",
        f"{result['mutants']} mutants inside {result['sites']} conditions; "
        f"**{len(result['never_flipped'])} never decide differently** in any test (survivors "
        f"or equivalent, Note [Never flipped] in tools/weakmut.py); "
        f"{len(result['never_ran'])} sit in conditions no in-process test ran; "
        f"{len(result['not_instrumented'])} were not instrumented.",
        "",
        "| file | never flipped |",
        "|---|---|",
        *(f"| `{f}` | {n} |" for f, n in by_file.most_common()),
        "",
        "## Never flipped",
        "",
        *(f"- `{label}`" for label in result["never_flipped"]),
        "",
    ]
    Path(path).write_text("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
