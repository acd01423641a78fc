"""Tests for list D of the never-flipped condition mutants (tools/weakmut.py), continued
from tests/test_weak_d.py: orthogonal without trivialization (a difference from torch,
fixed). Each test that names a mutant was seen to fail on it."""

import numpy as np
import pytest

import tapegrad as tg


@pytest.mark.parametrize(
    "shape, orthogonal_map",
    [
        ((3, 3), "matrix_exp"),
        ((3, 3), "cayley"),
        ((3, 4), "householder"),
        ((4, 3), "householder"),
        ((3, 3), "householder"),
        ("triangular", "householder"),
    ],
)
def test_orthogonal_without_trivialization_matches_torch(torch_mod, shape, orthogonal_map):
    """utils/parametrizations.py:200 (the three mutants of 'self.base is not None or "base"
    in self._buffers'): without trivialization there is no base, and torch's forward skips
    it (``hasattr(self, "base")``). tapegrad failed at registration (fixed): torch takes a
    right_inverse that raises NotImplementedError (matrix_exp, cayley) as the identity, and
    inverts householder with geqrf (R's diagonal signs, -1 where tau is 0); the forward then
    read the missing ``self.base``."""
    if shape == "triangular":  # geqrf skips every reflection (tau 0), R's first pivot is 0
        shape, w = (3, 3), np.array([[0, 1, 2], [0, -3, 4], [0, 0, 5]], np.float32)
    else:
        w = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    q = np.linalg.qr(np.random.default_rng(6).standard_normal((4, 4)))[0][: shape[0], : shape[1]]
    outs = []
    for lib in (torch_mod, tg):
        lin = lib.nn.Linear(shape[1], shape[0], bias=False)
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(w))
        lib.nn.utils.parametrizations.orthogonal(
            lin, orthogonal_map=orthogonal_map, use_trivialization=False
        )
        assert "base" not in dict(lin.named_buffers())
        outs.append(lin.weight.detach().numpy())
        outs.append(lin.parametrizations.weight.original.detach().numpy())
        if orthogonal_map == "householder":
            lin.weight = lib.tensor(q.astype(np.float32))
            outs.append(lin.weight.detach().numpy())
        else:
            with pytest.raises(NotImplementedError, match="not possible to assign"):
                lin.weight = lib.tensor(q.astype(np.float32))
    n = len(outs) // 2
    for got, want in zip(outs[n:], outs[:n]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
