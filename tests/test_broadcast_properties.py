"""Property tests: broadcasting binary ops (+ * where maximum matmul) agree with PyTorch.

Hypothesis draws mutually broadcastable shapes (including size-1, 0-d and empty dims);
values and the gradients of both operands under random upstream weights must match.
"""

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra.numpy import mutually_broadcastable_shapes  # noqa: E402

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True)

OPS = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "where": (lambda a, b: tg.where(a > b, a, b), lambda a, b: torch.where(a > b, a, b)),
    "maximum": (tg.maximum, torch.maximum),
}


def _check(f_ours, f_torch, arrays, seed):
    ours = [tg.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = f_ours(*ours), f_torch(*theirs)
    assert out.shape == tuple(ref.shape)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    w = np.random.default_rng(seed).uniform(-1, 1, size=tuple(ref.shape))
    (out * tg.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for a, b in zip(ours, theirs, strict=True):
        assert a.grad.shape == a.shape
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


def _arrays(shapes, seed, ties=False):
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-2, 2, size=s) for s in shapes]
    if ties:  # round to a coarse grid so that equal values (ties) occur
        arrays = [np.round(a) for a in arrays]
    return arrays


@pytest.mark.parametrize("op", sorted(OPS))
@SETTINGS
@given(
    shapes=mutually_broadcastable_shapes(
        num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=3
    ),
    seed=st.integers(0, 2**16),
    ties=st.booleans(),
)
def test_broadcasting_binary_ops_match_torch(op, shapes, seed, ties):
    f_ours, f_torch = OPS[op]
    _check(f_ours, f_torch, _arrays(shapes.input_shapes, seed, ties), seed)


@SETTINGS
@given(
    shapes=mutually_broadcastable_shapes(
        signature=np.matmul.signature, max_dims=2, min_side=1, max_side=3
    ),
    seed=st.integers(0, 2**16),
)
def test_matmul_broadcasting_matches_torch(shapes, seed):
    _check(lambda a, b: a @ b, lambda a, b: a @ b, _arrays(shapes.input_shapes, seed), seed)
