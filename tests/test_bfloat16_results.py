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
_EXPM = "torch's half-precision matrix_exp gives inf/NaN here; tapegrad's matches float64"
KNOWN = {
    "bfloat16": {
        "det-empty": "linalg.det: float32 result (torch: bfloat16)",
        **dict.fromkeys(("spmm", "spmm-spmm", "spmm-composed", "spmm-transposed"), _SPARSE),
        "grid_sampler_2d-bicubic-border": "the grid's gradient is rounded in more steps",
        "native_group_norm": "mean/rstd outputs: torch's rounding differs by ~1 ulp",
        "logcumsumexp-large": "torch's bfloat16 backward rounds each step",
        **dict.fromkeys(("matrix_exp", "matrix_exp-batch-big"), _EXPM),
    },
    "float16": {
        **dict.fromkeys(
            ("det-empty", "solve-empty", "cholesky-empty-batch"), "NumPy's linalg has no float16"
        ),
        **dict.fromkeys(("spmm", "spmm-spmm", "spmm-composed", "spmm-transposed"), _SPARSE),
        **dict.fromkeys(("i0", "i0_", "i0-0d"), "i0 computed in float16 steps"),
        "grid_sampler_2d-bicubic-border": "the grid's gradient is rounded in more steps",
        "logcumsumexp-large": "torch's float16 backward rounds each step",
        **dict.fromkeys(("matrix_exp", "matrix_exp-batch-big"), _EXPM),
        **dict.fromkeys(
            ("complex", "imag", "view_as_real", "view_as_complex", "view_as_real_copy"),
            "no complex32 in NumPy",
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


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", ["add", "mul", "truediv", "sub"])
def test_integer_tensor_with_half_tensor_keeps_half(torch_mod, dtype, op):
    """int64 tensor (op) half tensor is the half dtype, as torch (it was float32)."""
    import operator  # noqa: PLC0415

    fn = getattr(operator, op)
    res = []
    for m in (tg, torch_mod):
        i, h = m.tensor([1, 2, 3]), m.tensor([0.5, 1.5, 2.5], dtype=getattr(m, dtype))
        outs = (fn(i, h), fn(h, i))
        assert [str(o.dtype).rsplit(".", 1)[-1] for o in outs] == [dtype, dtype]
        res.append([o.float().numpy() for o in outs])
    np.testing.assert_allclose(res[0], res[1], rtol=1e-2)


_R = np.random.default_rng(7)
_CONVS = {
    "conv3d": ((2, 3, 4, 5, 5), (4, 3, 2, 3, 3), {"stride": 2}),
    "conv_transpose1d": ((2, 4, 7), (4, 3, 3), {"stride": 2, "output_padding": 1}),
    "conv_transpose2d": ((1, 4, 5, 5), (4, 2, 3, 3), {"groups": 2, "dilation": 2}),
    "conv_transpose3d": ((1, 2, 3, 4, 4), (2, 3, 2, 2, 2), {"stride": 2}),
}


@pytest.mark.parametrize("name", sorted(_CONVS) + ["unfold-empty"])
def test_bfloat16_convolutions_round_once(torch_mod, name):
    """bfloat16 convolutions compute in float32 and round once, as torch's dtype says: the
    result is bfloat16 and within half an ulp of the exact value (torch's own rounds more
    often: it is not the oracle for the values here)."""
    if name == "unfold-empty":
        fname, xs, ws, kw = "unfold", (0, 1, 5, 5), None, {"kernel_size": 2}
    else:
        fname, (xs, ws, kw) = name, _CONVS[name]
    x = (_R.standard_normal(xs) * 4).astype(np.float32)
    args = [x] if ws is None else [x, (_R.standard_normal(ws) * 4).astype(np.float32)]
    ours = getattr(tg.nn.functional, fname)(*(tg.tensor(a).to(tg.bfloat16) for a in args), **kw)
    tt = [torch_mod.tensor(a).to(torch_mod.bfloat16) for a in args]
    ref = getattr(torch_mod.nn.functional, fname)(*tt, **kw)
    exact = getattr(torch_mod.nn.functional, fname)(*(t.double() for t in tt), **kw).numpy()
    assert str(ours.dtype).endswith("bfloat16") and str(ref.dtype).endswith("bfloat16")
    assert type(ours._data) is np.ndarray and tuple(ours.shape) == exact.shape
    err = np.abs(ours.float().numpy().astype(np.float64) - exact)
    assert np.all(err <= np.abs(exact) * 2.0**-8 * 1.01 + 1e-6)
