"""Tests for the gaps the fresh mutation sample of seed 1804 found (docs/mutation-run-seed1804.md).

Each was seen to fail with its mutant applied and to pass without it.
"""

import numpy as np
import pytest

import tapegrad as tg


@pytest.mark.parametrize("p", [0.0, 2.0, float("inf")])
def test_pdist_of_a_single_row_is_empty_with_a_zero_gradient_like_torch(torch_mod, p):
    # nn/_distance.py:85: fewer than two rows have no pairs; the result is empty but
    # still connected to the input (a zero gradient, as torch), for every p
    res = []
    for lib in (torch_mod, tg):
        x = lib.tensor(np.arange(3.0).reshape(1, 3), dtype=lib.float64, requires_grad=True)
        y = lib.nn.functional.pdist(x, p)
        y.sum().backward()
        res.append((tuple(y.shape), str(y.dtype).split(".")[-1], y.requires_grad, x.grad.tolist()))
    assert res[1] == res[0] == ((0,), "float64", True, [[0.0, 0.0, 0.0]])
