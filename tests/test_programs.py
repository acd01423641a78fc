"""Well-known PyTorch programs (tests/programs/) run unchanged under ``import tapegrad as
torch`` print what they print under PyTorch (same random draws: tests/programs/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.programs import _harness

PROGRAMS = sorted(
    p for p in (Path(__file__).parent / "programs").glob("*.py") if not p.name.startswith("_")
)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_program_prints_what_torch_prints(path, torch_mod):
    draws = _harness.Draws()
    theirs = _harness.run(path, torch_mod, draws)
    ours = _harness.run(path, None, draws)
    problem = _harness.compare(ours, theirs)
    assert problem is None, problem
    assert not _harness.extra_warnings(draws), _harness.extra_warnings(draws)


def test_the_comparison_can_fail():
    assert _harness.compare(["loss 0.5"], ["loss 0.5001"]) is None
    assert "numbers differ" in _harness.compare(["loss 0.5"], ["loss 0.51"])
    assert "differ" in _harness.compare(["torch.float32"], ["torch.float64"])
    assert "differs" in _harness.compare(["torch.Size([2])"], ["torch.Tensor([2])"])
    assert "lines" in _harness.compare(["a"], ["a", "b"])


def test_a_draw_out_of_order_is_caught():
    draws = _harness.Draws()
    draws.arrays = [__import__("numpy").zeros((2, 3))]
    with pytest.raises(AssertionError, match="different order"):
        draws.next((3, 2), "randn")
