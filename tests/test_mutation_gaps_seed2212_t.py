"""Tests for survivors of the seed-2212 mutation sample (list t, the second half): each is
seen to fail on its mutant.

Covers nn/_fold.py:85.
"""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F


@pytest.mark.parametrize("padding", [(1, 2), (2, 0)])
def test_fold_with_a_different_padding_per_dim_matches_torch(torch_mod, padding):
    """_fold.py:85 [const] ``p[0]`` -> ``p[1]`` (either of the two): fold pads the height by
    padding[0] on both sides; with padding (1, 2) or (2, 0) the columns land where torch
    puts them, and the gradient is unfold's, as torch."""
    size, k, stride = (5, 4), (2, 3), (2, 1)
    tf = torch_mod.nn.functional
    blocks = tf.unfold(torch_mod.zeros(1, 2, *size), k, padding=padding, stride=stride).shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal(blocks).astype(np.float32)
    w = rng.standard_normal((1, 2) + size).astype(np.float32)
    tx = torch_mod.tensor(x, requires_grad=True)
    gx = tg.tensor(x, requires_grad=True)
    to = tf.fold(tx, size, k, padding=padding, stride=stride)
    go = F.fold(gx, size, k, padding=padding, stride=stride)
    (to * torch_mod.tensor(w)).sum().backward()
    (go * tg.tensor(w)).sum().backward()
    np.testing.assert_allclose(go.detach().numpy(), to.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)
