"""Vectorized Jacobians run every op table row in one batched backward.

Note [Batched gradients] (autograd/graph.py) lets ``jacobian(vectorize=True)`` push B
rows through the graph at once, falling back to one backward per row for a rule that
cannot. This test keeps the fallback an exception: every row of the op table must run
batched, except the few listed in ALLOWED_FALLBACK with the reason.
"""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import batched

from .optable import ALL_CASES

# op name -> why its batched backward falls back to the row loop
ALLOWED_FALLBACK: dict = {}


def _runs_batched(case) -> bool:
    xs = [tg.tensor(a, dtype=tg.float64, requires_grad=True) for a in case.make_inputs()]
    out = case.fn(tg, *xs)
    outs = out if isinstance(out, tuple) else (out,)
    outs = tuple(o for o in outs if isinstance(o, tg.Tensor) and o.requires_grad)
    if not outs:
        return True
    rng = np.random.default_rng(0)
    rows = [tg.tensor(rng.standard_normal((3,) + tuple(o.shape))) for o in outs]
    return batched._try_batched(outs, tuple(xs), rows, 3, False) is not None


CASES = [c for c in ALL_CASES if c.op not in ALLOWED_FALLBACK]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_row_runs_in_one_batched_backward(case):
    assert _runs_batched(case), (
        f"{case.id}: its backward rule does not follow Note [Batched gradients], so "
        "vectorized Jacobians through it fall back to one backward per row"
    )
