"""The mutation tools' selection rules (tools/mutate.py, tools/covmap.py): the pieces that
decide which tests a mutant gets, checked on small sources."""

import ast
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[1] / "tools"


@pytest.fixture(scope="module")
def tools():
    sys.path.insert(0, str(TOOLS))
    try:
        import covmap
        import mutate

        yield mutate, covmap
    finally:
        sys.path.remove(str(TOOLS))


SOURCE = textwrap.dedent(
    """\
    import functools

    @functools.cache
    def f(x, k=1, *, eps=-1e-3, name=None):
        return x + k

    def g(x, k=len("ab") + 1):
        return x

    def gen(x, k=2):
        yield x + k

    def outer():
        def inner(x, k=3):
            return x
        return inner

    def h(x, lower=1.0 / 8, n=-(4 * 5), scale=1 / (3 - 2)):
        return x

    row = lambda x, alpha=1.0: x
    """
)


def test_literal_defaults_of_module_level_functions_are_found(tools, tmp_path):
    mutate, _ = tools
    path = tmp_path / "mod.py"
    path.write_text(SOURCE)
    found = {(m.line, m.before, m.after): m.default for m in mutate.mutants_of(path, tmp_path)}
    # f's defaults: the def starts at its decorator (line 3); body lines 5-5
    assert found[(4, "1", "2")] == (3, "k", 5, 5)
    assert found[(4, "-1e-3", "(0.001)")] == (3, "eps", 5, 5)  # `-x` -> `x`
    assert found[(4, "1e-3", "0.00101")] == (3, "eps", 5, 5)
    on_g = [d for (ln, *_), d in found.items() if ln == 7]
    assert on_g and not any(on_g)  # not a literal (a call): whole suite as before
    # a generator binds without running its body, but only its body reads the value
    assert found[(10, "2", "3")] == (10, "k", 11, 11)
    assert found[(14, "3", "4")] == ()  # a def inside a body: an ordinary in-body mutant
    # operators over constants: computed once at def time, read like a literal
    h = (18, "lower", 19, 19)
    assert found[(18, "1.0 / 8", "(1.0 * 8)")] == h
    assert found[(18, "8", "9")] == h
    assert found[(18, "-(4 * 5)", "(4 * 5)")] == (18, "n", 19, 19)
    assert found[(18, "3 - 2", "(3 + 2)")] == (18, "scale", 19, 19)
    # ... unless the mutant fails to evaluate: the import fails, which every test sees
    assert found[(18, "2", "3")] == ()  # 1 / (3 - 3)
    assert found[(21, "1.0", "1.01")] == ()  # a lambda's default: see Note [Default arguments]


def test_default_reads_are_recorded_per_context(tmp_path):
    pkg = tmp_path / "src" / "tapegrad"
    pkg.mkdir(parents=True)
    (pkg / "m.py").write_text("def f(x, k=1, *, j=2.5):\n    return x + k\n")
    script = textwrap.dedent(
        f"""\
        import functools, importlib.util, inspect, json, sys
        sys.path.insert(0, {str(TOOLS / "covmap_child")!r})
        import _covmap_default_reads as d
        ctx = ["<outside>"]
        d.install({str(tmp_path)!r}, lambda: ctx[0])
        spec = importlib.util.spec_from_file_location("m", {str(pkg / "m.py")!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        sig = functools.cache(inspect.signature)
        sig(m.f)  # built at "import": only the construction read the defaults
        ctx[0] = "bind"
        b = sig(m.f).bind(1); b.apply_defaults()  # a cached Signature, read again
        ctx[0] = "str"
        str(sig(m.f))
        ctx[0] = "kind"
        sig(m.f).parameters["k"].kind  # not the default
        print(json.dumps(d.snapshot()))
        """
    )
    # -S: no site, so no sitecustomize either: while the line map is built, a test's child
    # gets tools/covmap_child's sitecustomize, which installs the recorder itself.
    out = subprocess.run([sys.executable, "-S", "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    reads = __import__("json").loads(out.stdout)
    keys = ["src/tapegrad/m.py:1:j", "src/tapegrad/m.py:1:k"]
    assert reads == {"bind": keys, "str": keys}


def test_an_edit_within_one_statement_reruns_that_statements_tests(tools):
    _, covmap = tools
    old = "def f(x):\n    y = x\n    if y < 0:\n        raise ValueError('a')\n    return y\n"
    new = old.replace("raise ValueError('a')", "top = 1\n        raise ValueError(f'b {top}')")
    tree = ast.parse(old)
    (_, hunks) = covmap._src_hunks(old, new)
    assert [(a, b) for a, b, _ in hunks] == [(4, 4)]
    assert covmap._holding_statement(tree, 4, 4, (2, 5)) == (4, 4)  # the raise alone
    assert covmap._holding_statement(tree, 3, 4, (2, 5)) == (3, 4)  # the if
    assert covmap._holding_statement(tree, 2, 3, (2, 5)) is None  # two statements
    assert covmap._scopes_kept(old, new)  # `top` is new and named nowhere before
    shadow = old.replace("y = x", "y = top")  # `top` read as a global before the edit
    assert not covmap._scopes_kept(shadow, new.replace("y = x", "y = top"))


def test_a_helper_file_reruns_the_tests_that_name_it_or_list_files(tools, tmp_path):
    _, covmap = tools
    t = tmp_path / "tests"
    t.mkdir()
    (t / "_helper.py").write_text("X = 1\n")
    (t / "_uses_helper.py").write_text("from ._helper import X\n")
    (t / "test_a.py").write_text("from ._uses_helper import X\n")
    (t / "test_b.py").write_text("import os\nprint(os.listdir('.'))\n")
    (t / "test_c.py").write_text("def test(): pass\n")
    users = covmap._helper_users(tmp_path, ["tests/_helper.py"])
    assert users == {"tests/test_a.py", "tests/test_b.py"}


def test_mutation_gaps_classifies_mutants_by_the_line_map(tools, tmp_path):
    mutate, covmap = tools
    sys.path.insert(0, str(TOOLS))
    try:
        import mutation_gaps
    finally:
        sys.path.remove(str(TOOLS))
    src = tmp_path / "src" / "m.py"
    src.parent.mkdir()
    src.write_text(
        "K = 2\n\ndef f(x, k=3):\n    if x:\n        return x + 1\n    return x - K\n\n"
        "def g(x):\n    return x * 2\n"
    )
    cmap = {  # a test ran f's lines 4 and 5; nothing ran line 6 or g
        "lines": {"src/m.py": {"4": [0], "5": [0]}},
        "outside": {"src/m.py": [1, 3, 8]},
        "default_reads": {},
        "default_reads_outside": [],
    }
    got = {
        (m.line, m.before): mutation_gaps.classify(m, cmap)
        for m in mutate.mutants_of(src, tmp_path)
    }
    assert got[(1, "2")] == "import"  # module level: the whole suite
    assert got[(3, "3")] == "tests"  # a literal default: f's body ran
    assert got[(5, "x + 1")] == "tests"
    assert got[(6, "x - K")] == "never"
    assert got[(9, "x * 2")] == "never"
    owners = mutation_gaps._owners(__import__("ast").parse(src.read_text()))
    assert owners[6] == "f" and owners[9] == "g" and 1 not in owners


PATCHED = textwrap.dedent(
    """\
    import functools

    def make(k):
        def inner(x):
            return x + k
        return inner

    add2 = make(2)
    table = {"twice": lambda x: x * 2, "neg": lambda x: -x}

    class C:
        def method(self, x):
            return x + 1

    @functools.lru_cache
    def cached(x):
        return x + 10
    """
)


def _load(path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("patched_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "old, new, check",
    [
        ("return x + k", "return x - k", lambda m: m.add2(5) == 3),  # a closure made at import
        ("lambda x: x * 2", "lambda x: x / 2", lambda m: m.table["twice"](4) == 2),
        ("return x + 1", "return x * 1", lambda m: m.C().method(5) == 5),
        (
            "return x + 10",
            "return x - 10",
            lambda m: m.cached.cache_clear() or m.cached(20) == 10,
        ),  # behind a cache
    ],
    ids=["closure", "lambda-in-a-table", "method", "lru-cached"],
)
def test_the_fork_server_puts_a_mutant_into_every_live_function(tools, tmp_path, old, new, check):
    """Note [Fork server]: the live functions of the file run the mutated code."""
    import forkserver

    path = tmp_path / "patched_module.py"
    path.write_text(PATCHED)
    module = _load(path)
    assert not check(module)
    functions = [f for f in vars(module).values() if isinstance(f, types.FunctionType)]
    functions += [module.C.method, module.cached.__wrapped__, *module.table.values()]
    assert forkserver.patch(str(path), PATCHED, PATCHED.replace(old, new), functions) >= 1
    assert check(module)


def test_the_fork_server_refuses_a_mutant_it_cannot_put_in_place(tools, tmp_path):
    """A dropped statement that held a lambda, or one that drops a free variable's last
    use: the caller then runs the mutant in a fresh interpreter."""
    import forkserver

    path = tmp_path / "patched_module.py"
    path.write_text(PATCHED)
    module = _load(path)
    functions = [f for f in vars(module).values() if isinstance(f, types.FunctionType)]
    no_lambda = PATCHED.replace('"neg": lambda x: -x', '"neg": None')
    assert forkserver.patch(str(path), PATCHED, no_lambda, functions) == 0
    no_free = PATCHED.replace("return x + k", "return x")
    assert forkserver.patch(str(path), PATCHED, no_free, [module.add2]) == 0
    assert forkserver.patch(str(path), PATCHED, PATCHED, functions) == 0  # nothing changed


def test_a_forks_cpu_limit_counts_its_own_tests_not_the_spawners(tools, tmp_path):
    """A looping mutant must end in minutes: the fork's CPU limit is 60 s plus six times the
    mapped time of its in-process tests; the spawners (their work is in other processes)
    lengthen only the wall-clock limit (seed 2212's counting.py:116 looped for 936 s under
    the old ``120 + 10 x`` all tests' time)."""
    mutate, _ = tools
    (tmp_path / "m.py").write_text("def f(x):\n    return x + 1\n")
    m = mutate.mutants_of(tmp_path / "m.py", tmp_path)[0]
    cmap = {
        "tests": ["t.py::a", "t.py::b", "t.py::spawn"],
        "seconds": [2.0, 3.0, 40.0],
        "spawners": ["t.py::spawn"],
        "lines": {"m.py": {"2": [0, 1]}},
        "outside": {},
        "collected": {},
    }
    seen = {}

    class Server:
        def run(self, path, original, mutated, tests, cpu, wall, files=()):
            seen.update(tests=tests, cpu=cpu, wall=wall)
            return {"status": "killed", "secs": 1.0, "why": "FAILED"}

    status, _, _, mode = mutate.run_forked(Server(), tmp_path, m, cmap, timeout=900)
    assert status == "killed" and mode == "2+1 fork"
    assert seen["tests"] == ["t.py::a", "t.py::b", "t.py::spawn"]
    assert seen["cpu"] == 60 + 6 * (2.0 + 3.0)
    assert seen["wall"] == 4 * (120 + 10 * 45.0)
