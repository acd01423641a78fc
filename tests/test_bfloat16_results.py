"""Every op-table row on bfloat16 and float16 inputs gives torch's result dtype, shape and
values, and its gradients torch's dtype and values (tests/half_harness.py does the work;
Note [bfloat16 opmath] in _dtypes.py). Rows torch does not compute in the dtype are skipped;
the rows listed in KNOWN differ from torch today and are strict xfails, so a fix shows."""

import numpy as np
import pytest

import tapegrad as tg

from .half_harness import HalfMismatch, check_row
from .optable import ALL_CASES

_SPARSE = "scipy.sparse has no half-precision dtypes"
_MASKED = "masked reductions: no identity / dtype rule for half inputs"
KNOWN = {
    "bfloat16": {
        "det-empty": "linalg.det: float32 result (torch: bfloat16)",
        **dict.fromkeys(("spmm", "spmm-spmm", "spmm-composed", "spmm-transposed"), _SPARSE),
        "frexp": "frexp refuses bfloat16",
        **dict.fromkeys(
            (
                "_scaled_dot_product_attention",
                "_scaled_dot_product_attention-causal",
                "_scaled_dot_product_attention-bool-mask-dead-row",
                "_scaled_dot_product_attention-float-mask-grad",
                "_scaled_dot_product_attention-gqa",
            ),
            "scaled_dot_product_attention refuses bfloat16",
        ),
        "grid_sampler_2d-bicubic-border": "the grid's gradient is rounded in more steps",
        "native_group_norm": "mean/rstd outputs: torch's rounding differs by ~1 ulp",
        "nanmedian": "NaN handling of bfloat16 (kind V) in nanmedian",
        "nanmedian-all": "NaN handling of bfloat16 (kind V) in nanmedian",
        "nansum": "NaN handling of bfloat16 (kind V) in nansum",
        "nansum-all": "NaN handling of bfloat16 (kind V) in nansum",
        "nanmean": "nanmean refuses bfloat16",
        "logcumsumexp-large": "torch's bfloat16 backward rounds each step",
        "scatter_reduce-amin": "amin/amax identity for kind V",
        "index_reduce-amax": "amin/amax identity for kind V",
        **dict.fromkeys(
            (
                "masked.amax",
                "masked.amin",
                "masked.logsumexp",
                "masked.softmax",
                "masked.log_softmax",
                "masked.softmin",
                "masked.mean",
                "masked.var",
                "masked.std",
                "masked.logaddexp",
            ),
            _MASKED,
        ),
        "cov-weights": "cov refuses bfloat16 aweights",
        "renorm": "renorm refuses bfloat16",
        "renorm_-twin-58": "renorm refuses bfloat16",
        "matrix_exp": "matrix_exp refuses bfloat16",
        "matrix_exp-batch-big": "matrix_exp refuses bfloat16",
    },
    "float16": {
        **dict.fromkeys(
            ("det-empty", "solve-empty", "cholesky-empty-batch"), "NumPy's linalg has no float16"
        ),
        **dict.fromkeys(("spmm", "spmm-spmm", "spmm-composed", "spmm-transposed"), _SPARSE),
        **dict.fromkeys(("i0", "i0_", "i0-0d"), "i0 computed in float16 steps"),
        "grid_sampler_2d-bicubic-border": "the grid's gradient is rounded in more steps",
        "logcumsumexp-large": "torch's float16 backward rounds each step",
        "masked.mean": "float32 result (torch: float16)",
        "cov-weights": "float32 result (torch: float16)",
        "matrix_exp": "overflows in float16 (torch computes in float32)",
        "matrix_exp-batch-big": "overflows in float16 (torch computes in float32)",
        **dict.fromkeys(
            ("complex", "imag", "view_as_real", "view_as_complex"), "no complex32 in NumPy"
        ),
    },
}

ROWS = [c for c in ALL_CASES if c.torch]
PARAMS = [
    pytest.param(
        dtype,
        case,
        id=f"{dtype}-{case.id}",
        marks=[pytest.mark.xfail(raises=HalfMismatch, strict=True, reason=KNOWN[dtype][case.id])]
        if case.id in KNOWN[dtype]
        else [],
    )
    for dtype in ("bfloat16", "float16")
    for case in ROWS
]


@pytest.mark.parametrize(("dtype", "case"), PARAMS)
def test_half_row_matches_torch(torch_mod, dtype, case):
    if check_row(case, torch_mod, dtype) is None:
        pytest.skip(f"torch has no {dtype} kernel for this row")


def test_known_mismatches_name_rows():
    ids = {c.id for c in ROWS}
    for dtype, known in KNOWN.items():
        assert not set(known) - ids, f"{dtype}: KNOWN names no row: {set(known) - ids}"


X = np.random.default_rng(5).standard_normal((6, 40)).astype(np.float32) * 3 + 20


@pytest.mark.parametrize("op", ["var", "std", "var_mean", "std_mean"])
@pytest.mark.parametrize(
    "kw", [{}, {"dim": 1}, {"dim": 0, "correction": 0}, {"dim": 1, "keepdim": True}]
)
def test_bfloat16_var_std_as_torch(torch_mod, op, kw):
    """var/std of bfloat16 compute in float32 and round once (they raised before)."""
    res = []
    for m in (tg, torch_mod):
        x = m.tensor(X).to(m.bfloat16).requires_grad_()
        out = getattr(m, op)(x, **kw)
        outs = out if isinstance(out, tuple) else (out,)
        assert all(str(o.dtype).endswith("bfloat16") for o in outs)
        (outs[0] * 1.0).sum().backward()
        assert str(x.grad.dtype).endswith("bfloat16")
        res.append(([o.float().detach().numpy() for o in outs], x.grad.float().numpy()))
    for a, b in zip(res[0][0], res[1][0]):
        np.testing.assert_allclose(a, b, rtol=1.6e-2, atol=1e-2)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=4e-2, atol=2e-2)


@pytest.mark.parametrize("op", ["exp", "tanh", "sigmoid", "matmul", "softmax", "gelu"])
def test_float32_results_stay_plain_arrays(op):
    """The float32 path is untouched: no Opmath class and float32 results."""
    x = tg.randn(3, 3)
    fns = {"matmul": lambda t: t @ t, "softmax": lambda t: t.softmax(-1)}
    out = fns.get(op, lambda t: getattr(tg.nn.functional if op == "gelu" else tg, op)(t))(x)
    assert type(out._data) is np.ndarray and out.dtype == tg.float32
