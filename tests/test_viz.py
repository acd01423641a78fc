"""Graph pictures: DOT text that parses, and a clear message when Graphviz is missing."""

import importlib.util
import re
import shutil
import sys
import types

import pytest

import tapegrad as tg


def _graph():
    x = tg.ones(2, 3, requires_grad=True)
    w = tg.ones(3, 4, requires_grad=True)
    y = ((x @ w).tanh() * 2.0).sum()
    return x, w, y


def _structure(dot):
    assert dot.count("{") == dot.count("}") == 1
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    declared = set(re.findall(r"^\s*(\w+) \[label=", dot, re.M))
    edges = re.findall(r"^\s*(\w+) -> (\w+);$", dot, re.M)
    for a, b in edges:
        assert a in declared and b in declared, (a, b)
    labels = re.findall(r'label="((?:[^"\\]|\\.)*)"', dot)
    return declared, edges, labels


def test_dot_structure_and_content():
    x, w, y = _graph()
    dot = tg.viz.to_dot(y, params={"x": x, "w": w})
    declared, edges, labels = _structure(dot)
    text = "\n".join(labels)
    for name in ("SumBackward", "MulBackward", "TanhBackward", "MatmulBackward"):
        assert name in text
    assert "x\\n(2, 3) float32" in text and "w\\n(3, 4) float32" in text
    assert "saved: (2, 3), (3, 4)" in text  # matmul saved both operands
    assert "output 0\\n() float32" in text
    assert len(declared) == 7 and len(edges) == 6


def test_dot_escapes_and_several_roots():
    x = tg.ones(2, requires_grad=True)
    a, b = x.exp(), x * 3.0
    dot = tg.viz.to_dot([a, b], params={'we"ird': x})
    _, edges, labels = _structure(dot)
    assert any('we\\"ird' in lab for lab in labels)
    assert ("n0", "out0") in edges or any(e[1] == "out0" for e in edges)
    assert any(e[1] == "out1" for e in edges)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' is not installed")
def test_dot_program_accepts_it(tmp_path):
    import subprocess

    _, _, y = _graph()
    src = tmp_path / "g.dot"
    src.write_text(tg.viz.to_dot(y))
    subprocess.run(["dot", "-Tsvg", str(src), "-o", str(tmp_path / "g.svg")], check=True)


def test_render_without_graphviz_says_what_to_install(tmp_path, monkeypatch):
    """No graphviz package and no 'dot': a RuntimeError naming both, in any environment."""
    _, _, y = _graph()
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz raises ImportError
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match=r"pip install graphviz.*'dot' program.*to_dot"):
        tg.viz.render(y, tmp_path / "graph.png")


def test_render_passes_the_dot_text_to_graphviz(tmp_path, monkeypatch):
    """The rendering path runs in CI too: a stand-in graphviz module records the call."""
    calls = []

    class Source:
        def __init__(self, text):
            self.text = text

        def render(self, filename, format, cleanup):
            calls.append((self.text, filename, format, cleanup))
            return f"{filename}.{format}"

    monkeypatch.setitem(sys.modules, "graphviz", types.SimpleNamespace(Source=Source))
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    _, _, y = _graph()
    out = tg.viz.render(y, tmp_path / "graph.svg")
    assert out == str(tmp_path / "graph.svg")
    ((text, filename, fmt, cleanup),) = calls
    assert text == tg.viz.to_dot(y) and filename == str(tmp_path / "graph")
    assert fmt == "svg" and cleanup is True


@pytest.mark.skipif(
    shutil.which("dot") is None or importlib.util.find_spec("graphviz") is None,
    reason="the graphviz package and Graphviz's 'dot' are not installed",
)
def test_render_with_graphviz(tmp_path):
    _, _, y = _graph()
    out = tg.viz.render(y, tmp_path / "graph.png")
    assert out.endswith("graph.png") and (tmp_path / "graph.png").stat().st_size > 0
