"""Second order against PyTorch for every op-table row (issue 18).

For each row with ``torch`` and ``gradgrad`` set, both libraries compute, from the
same float64 inputs x, upstream gradients v (tensors that require grad) and
directions u:

    g = d(Σ v ⊙ f(x))/dx          (create_graph=True)
    d(Σ u ⊙ g)/d(x, v)            (one Hessian-vector product, and the double
                                   backward with respect to the upstream gradient)

and the results must agree to rtol 1e-6. New rows in tests/optable get this test
for free. The inputs are the rows' small samples, so a row costs a few milliseconds.
The 0-d and empty rows of tests/test_edge_shapes.py get the same comparison.
"""

import numpy as np
import pytest

import tapegrad as tg

from ._second_order import as_array, check_against_torch
from .optable import ALL_CASES
from .test_edge_shapes import CHECKED, _arrays

SECOND = [c for c in ALL_CASES if c.torch and c.gradgrad]

_SP_IDX = [[0, 2, 1, 2, 0], [1, 0, 3, 0, 3]]  # tests/optable/linalg.py's, uncoalesced


def _dense(m, v):
    """The (3, 4) sparse matrix of the spmm rows, built densely (index_put accumulates)."""
    rows, cols = (m.tensor(i) for i in _SP_IDX)
    return m.zeros(3, 4, dtype=v.dtype).index_put((rows, cols), v, accumulate=True)


def _attention_gqa(m, q, k, v):
    rep = q.shape[-3] // k.shape[-3]
    k, v = k.repeat_interleave(rep, dim=-3), v.repeat_interleave(rep, dim=-3)
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    return scores.softmax(-1) @ v


# Rows whose torch op cannot serve as the second-order reference; torch computes the
# same function from ops it differentiates twice instead (id -> (why, reference)).
TORCH_REFERENCE = {
    "hardsigmoid": (
        "torch: 'derivative for aten::hardsigmoid_backward is not implemented'",
        lambda m, x: (x / 6 + 0.5).clamp(0, 1),
    ),
    "cdist": (
        "torch: 'the derivative for _cdist_backward is not implemented'",
        lambda m, x, y: ((x.unsqueeze(-2) - y.unsqueeze(-3)) ** 2).sum(-1).sqrt(),
    ),
    "_scaled_dot_product_attention-gqa": (
        "torch's CPU kernel (_scaled_dot_product_flash_attention_for_cpu) has no double backward",
        _attention_gqa,
    ),
    # torch's sparse.mm backward gives grad(values) by sparse masking that it does not
    # record wrt the dense operand: its d(Σ u ⊙ grad_values)/d(dense) is 0, not u·v-terms.
    "spmm": (
        "torch's sparse.mm double backward wrt the dense operand is 0",
        lambda m, v, d: _dense(m, v) @ d,
    ),
    "spmm-spmm": (
        "torch's sparse.mm double backward wrt the dense operand is 0",
        lambda m, v, d: _dense(m, v) @ d,
    ),
    "spmm-composed": (
        "torch's sparse.mm double backward wrt the dense operand is 0",
        lambda m, v, d: (_dense(m, v * v) @ d.transpose(0, 1)).transpose(0, 1),
    ),
    "spmm-transposed": (
        "torch's sparse.mm double backward wrt the dense operand is 0",
        lambda m, v, d: _dense(m, v).t() @ d,
    ),
}


def _masked_logaddexp(m, a, b):
    """tests/optable/issue10m.py's masked.logaddexp row without −inf operands (its masks
    never mask both operands of one element)."""
    from .optable.issue10m import MASK  # noqa: PLC0415

    a_in, b_in = m.tensor(MASK), m.tensor(~MASK | MASK[::-1])
    return m.where(a_in & b_in, m.logaddexp(a, b), m.where(a_in, a, b))


TORCH_REFERENCE["masked.logaddexp"] = (
    "torch's logaddexp double backward is NaN where the other operand is −inf (masked out)",
    _masked_logaddexp,
)


def _reference(row_id):
    return TORCH_REFERENCE[row_id][1] if row_id in TORCH_REFERENCE else None


@pytest.mark.parametrize("case", SECOND, ids=[c.id for c in SECOND])
def test_second_order_matches_torch(case, torch_mod):
    ref = _reference(case.id)
    check_against_torch(case.fn, case.make_inputs(seed=4), torch_mod, reference=ref)


EDGE = [(r, k, v) for r, k, v in CHECKED if r.gradgrad]

# Variants where PyTorch's double backward with respect to the upstream gradient is NaN
# although the first-order gradient is identically 0 (so the exact value is 0, which
# tapegrad gives): there only torch's finite entries are compared.
TORCH_NAN = {
    "var-dim-empty0": "var of (0, 3) over dim 0: the gradient is empty, torch's d/dv is NaN",
    "std-correction0-0d": "std of one value is 0: torch masks dx to 0 but d/dv is NaN",
    "cdist-empty1": "cdist of (2, 0) and (3, 0): the gradient is empty, the reference's"
    " sqrt'(0) makes its d/dv NaN",
    "var_mean-empty0": "var_mean of a (2, 0) input: the gradient is empty, torch's d/dv is NaN",
}


@pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0")
@pytest.mark.filterwarnings("ignore:invalid value encountered")
@pytest.mark.parametrize(("row", "kind", "variant"), EDGE, ids=[f"{r.id}-{k}" for r, k, _ in EDGE])
def test_edge_second_order_matches_torch(row, kind, variant, torch_mod):
    nan = f"{row.id}-{kind}" in TORCH_NAN
    arrays = _arrays(row, variant, seed=4)
    # The empty spmm variants have other shapes than _dense's; torch's own op passes there.
    ref = _reference(row.id) if row.id in ("hardsigmoid", "cdist") else None
    check_against_torch(row.fn, arrays, torch_mod, nan, reference=ref)


def test_grad_output_of_another_dtype_keeps_its_graph(torch_mod):
    """A float64 grad_output for a float32 output: the cast is recorded (double backward)."""
    got = []
    for m in (tg, torch_mod):
        x = m.tensor([0.7, -0.2], dtype=m.float32, requires_grad=True)
        v = m.tensor([0.3, 0.5], dtype=m.float64, requires_grad=True)
        (g,) = m.autograd.grad([x.sin()], [x], [v], create_graph=True)
        assert g.dtype == m.float32
        got.append(as_array(m.autograd.grad((g * g).sum(), v)[0]))
    np.testing.assert_allclose(got[0], got[1], rtol=1e-6)
