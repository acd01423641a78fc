"""tools/weakmut.py: which condition mutants a run flips, checked on a small module."""

import sys
import textwrap
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[1] / "tools"

SOURCE = textwrap.dedent(
    """\
    def sign(n):
        return 1 if n > 0 else -1

    def either(a, b):
        if a or b:
            return "yes"
        return "no"

    def odd_ones(xs):
        return [x for x in xs if x % 2 == 1]

    def step(self, other):
        if other is None and fast_path(self, other):
            return 1
        return 0

    class K:
        if len("ab") == 2:
            two = True
    """
)


@pytest.fixture
def tool(tmp_path):
    sys.path.insert(0, str(TOOLS))
    try:
        import weakmut
        import weakmut_plugin

        path = tmp_path / "mod.py"
        path.write_text(SOURCE)
        state = (weakmut_plugin._DONE, weakmut_plugin._FLIPPED, weakmut_plugin._RAN)
        saved = [list(state[0]), dict(state[1]), set(state[2])]
        for s in state:
            s.clear()
        yield weakmut, weakmut_plugin, path
        for s, old in zip(state, saved, strict=True):
            s.clear()
            s.extend(old) if isinstance(s, list) else s.update(old)
    finally:
        sys.path.remove(str(TOOLS))


def _load(weakmut, plugin, path):
    code, sites, skipped = weakmut.instrument(path, path.parent, 0)
    plugin._DONE.extend([False] * len(sites))
    env = {"_tgwm_D": plugin._DONE, "_tgwm_f": plugin._tgwm_f, "fast_path": lambda s, o: True}
    exec(code, env)
    return env, {k: (name, labels) for k, name, labels in sites}, skipped


def _never_flipped(weakmut, plugin, sites):
    flipped = {f"{sites[k][0]}#{j}" for k, js in plugin._FLIPPED.items() for j in js}
    ran = {sites[k][0] for k in plugin._RAN}
    return weakmut.summarise(dict(sites.values()), flipped, ran, [])


def test_a_boundary_flips_only_at_the_boundary(tool):
    weakmut, plugin, path = tool
    env, sites, _ = _load(weakmut, plugin, path)
    assert [env["sign"](n) for n in (3, -2)] == [1, -1]  # values unchanged by the probes
    result = _never_flipped(weakmut, plugin, sites)
    assert "mod.py:2 [compare] 'n > 0' -> '(n >= 0)'" in result["never_flipped"]
    assert "mod.py:2 [const] '0' -> '1'" in result["never_flipped"]  # n = 1 never seen
    env["sign"](0)
    env["sign"](1)
    result = _never_flipped(weakmut, plugin, sites)
    assert not [m for m in result["never_flipped"] if m.startswith("mod.py:2 ")]


def test_or_and_and_flip_only_where_the_operands_differ_in_truth(tool):
    weakmut, plugin, path = tool
    env, sites, _ = _load(weakmut, plugin, path)
    assert env["either"](1, 1) == "yes" and env["either"](0, 0) == "no"
    result = _never_flipped(weakmut, plugin, sites)
    assert "mod.py:5 [boolop] 'a or b' -> '(a and b)'" in result["never_flipped"]
    assert [m for m in result["never_ran"] if m.startswith("mod.py:10 ")] == [  # not called
        "mod.py:10 [binop] 'x % 2' -> '(x // 2)'",
        "mod.py:10 [compare] 'x % 2 == 1' -> '(x % 2 != 1)'",
        "mod.py:10 [const] '2' -> '3'",
        "mod.py:10 [const] '1' -> '2'",
    ]
    env["either"](0, 1)
    assert env["odd_ones"]([1, 2, 3]) == [1, 3]
    result = _never_flipped(weakmut, plugin, sites)
    assert "mod.py:5 [boolop] 'a or b' -> '(a and b)'" not in result["never_flipped"]
    # 1 % 2 == 1 and 1 // 2 == 0: the binop flips; 3 % 3 == 0 != 1: so does the const
    assert not [m for m in result["never_flipped"] if m.startswith("mod.py:10 ")]


def test_conditions_that_change_state_or_sit_in_a_class_body_are_left_alone(tool):
    weakmut, plugin, path = tool
    env, sites, skipped = _load(weakmut, plugin, path)
    assert env["step"](None, None) == 1 and env["K"].two
    assert all(name.split(":")[1] not in ("13", "18") for name, _ in sites.values())
    assert "mod.py:13 [compare] 'other is None' -> '(other is not None)'" in skipped
    assert "mod.py:18 [const] '2' -> '3'" in skipped
