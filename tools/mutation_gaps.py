"""Where the mutation pool meets lines no test runs: a floor on the survivors, by function.

Usage (from the repository root; needs a line map built by tools/mutate.py or
tools/covmap.py, no test run)::

    python tools/mutation_gaps.py src/tapegrad/autograd src/tapegrad/ops src/tapegrad/nn \\
        src/tapegrad/jit/signature.py --covmap .mutate/covmap.json [--top 40] [--files]

Every mutant of the pool (``mutants_of`` in tools/mutate.py over the paths) falls in one
of three classes, read from the map the way tools/mutate.py selects its tests (Note
[Mutant test selection] in tools/covmap.py):

- ``never``: its statement ran in no test, no test module's collection and not at import
  (for a literal default argument: the function's body never ran and no test read the
  default). No test can observe it: it survives unless it is equivalent. These are
  listed, grouped by the innermost function (or class) holding them, largest first.
- ``tests``: some test (or a test module's collection, or a test's child process) ran it.
- ``import``: import-time code (module level, class bodies, decorators, non-literal
  defaults) or a function body that also runs while modules are imported; the mutation
  tool gives these the whole suite.

The map describes the tree it was built from (or extended to): a src file whose text
differs from the map's (its stored hash) is left out of the figures and named, since its
line numbers may have moved, unless ``--base COMMIT`` (the commit the map describes) is
given: then its lines are moved to the current text, and the edited lines count as run by
no test of the map. New test files are not in the map either; ``--with-tests FILES`` runs
them once under coverage (a minute, not a suite) and counts what they run, so the figures
after new tests need no new map::

    python tools/mutation_gaps.py src/tapegrad/ops --covmap .mutate/covmap.json \
        --base 13cab2e --with-tests tests/test_never_run_ops.py
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

import covmap
import mutate


def _owners(tree):
    """line -> qualified name of the innermost function or class whose span holds it."""
    spans = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                spans.append((first, child.end_lineno, name))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    owner = {}
    for first, last, name in sorted(spans, key=lambda s: s[0] - s[1]):  # widest first
        for ln in range(first, last + 1):
            owner[ln] = name  # narrower spans overwrite wider ones
    return owner


def classify(m, cmap) -> str:
    """``never``, ``tests`` or ``import`` for one mutant (see the module docstring)."""
    lines = cmap["lines"].get(m.path, {})
    outside = set(cmap["outside"].get(m.path, ()))
    collect = cmap.get("collect", {}).get(m.path, {})
    first, last = m.lines
    if m.default and "default_reads" in cmap:  # Note [Default arguments]
        _, param, lo, hi = m.default
        key = f"{m.path}:{m.default[0]}:{param}"
        first, last = lo, hi
        if key in set(cmap["default_reads_outside"]) or m.path in set(
            cmap.get("default_reads_unknown_files", ())
        ):
            return "import"
        if cmap["default_reads"].get(key):
            return "tests"
    elif not m.in_body:
        return "import"
    span = [str(ln) for ln in range(first, last + 1)]
    if any(int(ln) in outside for ln in span):
        return "import"
    if any(ln in lines or ln in collect for ln in span):
        return "tests"
    return "never"


def rebase(cmap, root: Path, base: str) -> set:
    """Move the map's line numbers of every src file edited since ``base`` (the commit the
    map describes) to the file as it is now (``covmap._src_hunks``); the edited lines
    themselves keep no record (the map's tests ran other text there). Returns the files
    moved, whose stored hashes are updated so ``stale_files`` accepts them."""
    import subprocess

    moved = set()
    for rel, digest in list(cmap.get("files", {}).items()):
        if not (rel.startswith("src/") and rel.endswith(".py")) or not (root / rel).exists():
            continue
        now = (root / rel).read_text()
        if hashlib.sha256(now.encode()).hexdigest() == digest:
            continue
        old = subprocess.run(
            ["git", "show", f"{base}:{rel}"], cwd=root, capture_output=True, text=True, check=True
        ).stdout
        if hashlib.sha256(old.encode()).hexdigest() != digest:
            raise SystemExit(f"{rel} at {base} is not the file the map describes")
        mapping, _ = covmap._src_hunks(old, now)
        for key in ("lines", "collect"):
            by_line = cmap.get(key, {}).get(rel, {})
            cmap.setdefault(key, {})[rel] = {
                str(mapping[int(ln)]): ids for ln, ids in by_line.items() if int(ln) in mapping
            }
        cmap["outside"][rel] = [mapping[ln] for ln in cmap["outside"].get(rel, ()) if ln in mapping]
        cmap["files"][rel] = hashlib.sha256(now.encode()).hexdigest()
        moved.add(rel)
    return moved


def overlay(cmap, root: Path, tests) -> int:
    """Add to the map the lines that ``tests`` (test files or node ids, new or edited since
    the map was built) run: they are run once under the map's plugin, on a copy of the tree
    (not ``<outside>``: imports are the map's). Returns the number of tests run."""
    import os
    import shutil
    import subprocess
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="tapegrad-gaps-"))
    covmap._copy_tree(root, work)
    data = work / ".covmap-data"
    data.mkdir()
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(work / "src"), str(Path(__file__).parent)]),
        PYTHONDONTWRITEBYTECODE="1",
        TAPEGRAD_COVMAP=str(data / "cov"),
        TAPEGRAD_COVMAP_ROOT=str(work),
    )
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "covmap_plugin", "-p", "no:cacheprovider"]
    proc = subprocess.run(cmd + list(tests), cwd=work, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit("the overlay tests fail:\n" + "\n".join(proc.stdout.splitlines()[-10:]))
    fresh = covmap.convert(str(data / "cov*"), work, {})
    shutil.rmtree(work, ignore_errors=True)
    shift = len(cmap["tests"])
    cmap["tests"] = cmap["tests"] + fresh["tests"]
    for key in ("lines", "collect"):
        for rel, by_line in fresh.get(key, {}).items():
            mine = cmap.setdefault(key, {}).setdefault(rel, {})
            for ln, ids in by_line.items():
                extra = [i + shift for i in ids] if key == "lines" else list(ids)
                mine[ln] = list(mine.get(ln, ())) + extra
    return len(fresh["tests"])


def stale_files(cmap, root: Path, rels) -> set:
    """The files among ``rels`` whose text is not the one the map describes."""
    stored = cmap.get("files", {})
    out = set()
    for rel in rels:
        data = (root / rel).read_bytes()
        if stored.get(rel) != hashlib.sha256(data).hexdigest():
            out.add(rel)
    return out


def gaps(paths, cmap, root: Path):
    """(rows per file {path: Counter of classes}, never-run groups, stale files)."""
    files = []
    for raw in paths:
        path = Path(raw).resolve()
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    rels = [str(f.relative_to(root)) for f in files]
    stale = stale_files(cmap, root, rels)
    per_file, groups = {}, defaultdict(list)
    for f, rel in zip(files, rels):
        if rel in stale:
            continue
        owner = _owners(ast.parse(f.read_text()))
        counts = Counter()
        for m in mutate.mutants_of(f, root):
            kind = classify(m, cmap)
            counts[kind] += 1
            if kind == "never":
                groups[(rel, owner.get(m.line, "<module>"))].append(m)
        per_file[rel] = counts
    return per_file, groups, stale


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+", help="files or directories under src/")
    p.add_argument("--covmap", default=".mutate/covmap.json", help="the line map to read")
    p.add_argument("--top", type=int, default=None, help="list only the N largest groups")
    p.add_argument("--files", action="store_true", help="print the per-file table too")
    p.add_argument("--json", default=None, help="also write the groups here")
    p.add_argument(
        "--base",
        default=None,
        help="the commit the map describes: src files edited since are counted with their "
        "lines moved (the edited lines count as run by no map test)",
    )
    p.add_argument(
        "--with-tests",
        nargs="+",
        default=(),
        metavar="TEST",
        help="test files or node ids added since the map was built: run them once under "
        "coverage and count what they run too",
    )
    args = p.parse_args(argv)
    root = Path.cwd()
    cmap = json.loads(Path(args.covmap).read_text())
    if args.base:
        moved = rebase(cmap, root, args.base)
        if moved:
            print(f"lines moved to the current text: {', '.join(sorted(moved))}")
    if args.with_tests:
        print(f"{overlay(cmap, root, args.with_tests)} more tests run under coverage")
    per_file, groups, stale = gaps(args.paths, cmap, root)

    total = Counter()
    for c in per_file.values():
        total.update(c)
    n = sum(total.values())
    print(
        f"{n} mutants in {len(per_file)} files: {total['never']} on statements no test runs "
        f"({100.0 * total['never'] / max(n, 1):.1f}%), {total['tests']} run by tests, "
        f"{total['import']} import-time"
    )
    if stale:
        print(f"left out, changed since the map: {', '.join(sorted(stale))}")
    areas = defaultdict(Counter)
    for rel, c in per_file.items():
        parts = Path(rel).parts
        areas["/".join(parts[2:4]) if parts[2] == "jit" else parts[2]].update(c)
    print("\n| area | mutants | never run | import-time |\n|---|---|---|---|")
    for area, c in sorted(areas.items()):
        print(f"| {area} | {sum(c.values())} | {c['never']} | {c['import']} |")
    if args.files:
        print("\n| file | mutants | never run | import-time |\n|---|---|---|---|")
        for rel, c in sorted(per_file.items(), key=lambda kv: -kv[1]["never"]):
            if c["never"]:
                print(f"| `{rel}` | {sum(c.values())} | {c['never']} | {c['import']} |")
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    print(f"\n{len(ranked)} functions hold never-run mutants (largest first):")
    for (rel, name), ms in ranked[: args.top]:
        lines = sorted({m.line for m in ms})
        shown = ",".join(map(str, lines[:12])) + (",..." if len(lines) > 12 else "")
        print(f"{len(ms):4d}  {rel}:{name}  lines {shown}")
    if args.json:
        out = [
            {"file": rel, "function": name, "mutants": [m.label() for m in ms]}
            for (rel, name), ms in ranked
        ]
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
