"""Tests for surviving mutants in src/tapegrad/ops (session 21, list o), each seen to fail on
its mutant: complex_ops.py:274 (sgn_of's zero mask), indexing.py:579 (scatter without src or
value), linalg.py:135 (_gemm_rows' block size), activation_rows.py:143 (the positional-argument
count in the TypeError), lu.py:220 (lu_solve of a non-square LU) and calculus.py:215
(cumulative_trapezoid of an empty complex tensor, a bug fixed). binary_table.py:44 '1.0' ->
'1.01' is equivalent (the denominator replaced where a == 0 is discarded by the outer where)."""

import types

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.ops import linalg


def test_abs_of_complex_backward_at_zero_and_one_matches_torch(torch_mod):
    """complex_ops.py:274 [const] '0' -> '1': the mask of z == 0 in sgn_of (d|z|/dz = z/|z|,
    0 at z = 0); masking z == 1 instead gives 0 at z = 1 and NaN at z = 0."""
    z = np.array([1 + 0j, 0j, 3 + 4j, -1 + 0j, 1j, 0.5 - 2j])
    ours = tg.tensor(z, requires_grad=True)
    ours.abs().sum().backward()
    ref = torch_mod.tensor(z, requires_grad=True)
    ref.abs().sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), ref.grad.numpy(), rtol=1e-15, atol=0)


@pytest.mark.parametrize("call", ["function", "method"])
def test_scatter_without_src_or_value_raises_type_error_like_torch(torch_mod, call):
    """indexing.py:579 [drop] 'raise TypeError("scatter: pass src (a tensor) or value (a
    number)")' -> 'pass': scatter(input, dim, index) names neither src nor value."""
    for lib in (torch_mod, tg):
        x, index = lib.zeros(3), lib.tensor([0])
        with pytest.raises(TypeError):
            lib.scatter(x, 0, index) if call == "function" else x.scatter(0, index)
    with pytest.raises(TypeError, match="pass src"):
        tg.zeros(3).scatter(0, tg.tensor([0]))


def _record_gemm_blocks(monkeypatch):
    """Make linalg's np.matmul record the row count of each call's first operand."""
    rows = []

    def matmul(a, b, **kwargs):
        rows.append(a.shape[0])
        return np.matmul(a, b, **kwargs)

    proxy = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
    proxy.matmul = matmul
    monkeypatch.setattr(linalg, "np", proxy)
    return rows


@pytest.mark.parametrize(
    ("a_shape", "k_n", "blocks"),
    [
        # m·k·n <= 2^18 allows 2^18 // (k·n) = 1 row a block, and a block is never smaller
        # than a matrix (1 row): 4 GEMMs of one row
        ((4, 1, 1), (1, (1 << 17) + 1), [1, 1, 1, 1]),
        # k·n = 1: 2^18 rows a block, so all 2^17 + 2 rows in one GEMM
        ((2, (1 << 16) + 1, 1), (1, 1), [(1 << 17) + 2]),
    ],
)
def test_matmul_by_a_stride_0_stack_runs_gemms_of_the_documented_row_blocks(
    monkeypatch, a_shape, k_n, blocks
):
    """linalg.py:135 [const] '1' -> '2' (every 1 of
    'step = max(rows, 1, (1 << 18) // max(1, b2.shape[0] * b2.shape[1]))'): the block size of
    _gemm_rows, seen only as speed (the blocks give the same values), so checked as the row
    counts of its GEMMs. max(rows, 2, ...) gives [2, 2], 2 << 18 gives [3, 1], max(2, ...) gives
    [2^17, 2] and b2.shape[2] raises IndexError."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(a_shape).astype(np.float32)
    w = rng.standard_normal(k_n).astype(np.float32)
    b = tg.tensor(w).expand(a_shape[0], *k_n)
    assert not any(b._data.strides[:-2])  # the stride-0 stack _gemm_rows serves
    rows = _record_gemm_blocks(monkeypatch)
    got = tg.matmul(tg.tensor(a), b)
    assert rows == blocks
    np.testing.assert_array_equal(got.numpy(), np.matmul(a, w))


@pytest.mark.parametrize(("name", "args"), [("selu", (1.0,)), ("threshold", (0.0, 0.0, 1))])
def test_an_activation_op_given_too_many_positional_arguments_says_how_many_it_takes(
    torch_mod, name, args
):
    """activation_rows.py:143 [const] '1' -> '2' (f"... takes at most {len(keys) + 1}
    positional arguments"): the count includes input, as torch's (selu takes 1, threshold 3)."""
    with pytest.raises(TypeError, match=f"takes {len(args)} positional argument"):
        getattr(torch_mod, name)(torch_mod.tensor([1.0]), *args)
    with pytest.raises(TypeError, match=f"{name}\\(\\) takes at most {len(args)} positional"):
        getattr(tg, name)(tg.tensor([1.0]), *args)


@pytest.mark.parametrize(("lu_shape", "b_shape"), [((2, 3), (3, 1)), ((3, 2), (2, 1))])
def test_lu_solve_of_a_non_square_lu_raises_like_torch(torch_mod, lu_shape, b_shape):
    """lu.py:220 [drop] 'raise RuntimeError(f"linalg.lu_solve: LU must be a batch of square
    matrices, ...")' -> 'pass': B's rows fit LU's columns, so no later check catches it."""
    rng = np.random.default_rng(1)
    lu, b = rng.standard_normal(lu_shape), rng.standard_normal(b_shape)
    pivots = np.arange(1, min(lu_shape) + 1, dtype=np.int32)
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="square matrices"):
            lib.linalg.lu_solve(lib.tensor(lu), lib.tensor(pivots), lib.tensor(b))


@pytest.mark.parametrize(
    ("op", "dtype"),
    [
        (op, dtype)
        for op in ("trapezoid", "cumulative_trapezoid")
        for dtype in ("complex64", "complex128", "float16", "int64", "bool")
        if (op, dtype) != ("cumulative_trapezoid", "bool")  # torch raises, tapegrad does not
    ],
)
def test_trapezoid_rules_over_an_empty_dim_keep_torchs_dtype(torch_mod, op, dtype):
    """calculus.py:215 (cumulative_trapezoid's empty case) and _zeros_without (trapezoid's):
    a bug fixed: a complex y raised ("cannot cast a complex tensor") and trapezoid gave float32
    for int and bool. torch keeps y's dtype (cumulative: int becomes the default float).
    The mutant 'y * 1' -> 'y * 2' there is equivalent: y is empty."""
    want = getattr(torch_mod, op)(torch_mod.zeros(3, 0, dtype=getattr(torch_mod, dtype)))
    got = getattr(tg, op)(tg.zeros(3, 0, dtype=getattr(tg, dtype)))
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
