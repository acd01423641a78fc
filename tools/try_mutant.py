"""Run some tests on one mutant of tools/mutate.py: does a new test kill it?

Usage (from the repository root)::

    python tools/try_mutant.py "src/tapegrad/ops/clamp.py:40 [compare] 'a < b' -> '(a <= b)'" \\
        tests/test_clamp.py -k boundary

The mutant is named by its label (as tools/mutate.py and tools/weakmut.py print it).
Its file is edited in place, the tests run on the mutant (``pytest -x -q`` with the
arguments given, ``PYTHONPATH=src``) and then on the original, and the file is restored
whatever happens. Prints ``killed`` when the tests fail on the mutant and pass on the
original, ``survived`` when they pass on both (a line for each mutant with that label);
exit status 0 when all are killed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import mutate  # noqa: E402


def find(label: str, root: Path):
    """The file and the mutants with this label (two edits of a line can share one: the
    ``1`` of ``-1`` and of ``shape[1]``); each is tried."""
    path = root / label.split(":", 1)[0]
    found = [m for m in mutate.mutants_of(path, root) if m.label() == label]
    if not found:
        raise SystemExit(f"no mutant with the label {label!r} in {path}")
    return path, found


def run(root: Path, tests) -> int:
    env = dict(os.environ, PYTHONPATH=str(root / "src"), PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True).returncode


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        print(__doc__)
        return 2
    root = Path.cwd()
    path, found = find(argv[0], root)
    original = path.read_text()
    on_mutant = []
    try:
        for m in found:
            path.write_text(mutate.apply(original, m))
            on_mutant.append(run(root, argv[1:]))
    finally:
        path.write_text(original)
    on_original = run(root, argv[1:])
    if on_original != 0:
        print(f"the tests fail on the original too (exit {on_original})")
        return 2
    for m, rc in zip(found, on_mutant, strict=True):
        where = f" (the one at column {m.span[1]})" if len(found) > 1 else ""
        print(("killed" if rc != 0 else "survived") + where)
    return 0 if all(on_mutant) else 1


if __name__ == "__main__":
    sys.exit(main())
