"""Tests for session-21 mutation survivors (list o3) in src/tapegrad/ops.

Covers: _table.py:182 (a Unary row whose derivative is NOT_IMPLEMENTED), binary_table.py:62
(xlogy / xlog1py gradient in x at x == 0: a bug, fixed), broadcasting.py:56 (the mismatch
message), calculus.py:113 (gradient of an integer input: a bug, fixed; the cast is gone),
complex_guard.py:134 (the snake-case op name in the complex-autograd error), indexing.py:223
(index_grad's basic-key path in a batched backward), lowrank.py:45 (svd_lowrank's M broadcast),
lu.py:239 (lu_solve of mixed dtypes: a bug, fixed: torch raises), scan.py:110 (cumprod's grad
dtype with dtype=), view_scatter.py:44 (select_scatter's src grad dtype). inplace.py:484 was
dead code (Tensor.clamp always exists when clamp_ runs) and is deleted.
"""

import numpy as np
import pytest
import torch

import tapegrad as tg
from tapegrad.ops import _table, indexing

NAN = float("nan")


def test_unary_row_with_not_implemented_grad_raises_in_backward():
    """_table.py:182 [drop] 'return make_result(out, (x,), rule, node)' -> 'pass'.

    A row with grad=NOT_IMPLEMENTED records the op (like torch's zeta) and raises torch's
    NotImplementedError in backward (without the return, the string is called as a rule)."""
    op = _table.make_unary(_table.Unary("o3_square", np.square, _table.NOT_IMPLEMENTED))
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = op(x)
    np.testing.assert_array_equal(y.detach().numpy(), [1.0, 4.0])
    assert y.requires_grad
    with pytest.raises(NotImplementedError, match="the derivative for 'o3_square' is not"):
        y.sum().backward()


@pytest.mark.parametrize("name", ["xlogy", "special.xlog1py"])
def test_xlogy_grad_in_x_matches_torch_at_zero(name):
    """binary_table.py:62 [const] '0' -> '1' (and the line's other mutants).

    torch: d/dx = xlogy(g, y) (xlog1py(g, y)), 0 where x == 0 and y <= 0 (-1): so log(y) at
    x == 0 < y (tapegrad gave 0 there: fixed)."""
    a = [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, -2.0, 1.0, 0.0, 2.0]
    b = [2.0, 0.0, -1.0, NAN, -0.5, 0.0, -1.0, 3.0, -2.0, -2.0, 0.5]
    out = []
    for lib in (torch, tg):
        fn = lib.xlogy if name == "xlogy" else lib.special.xlog1py
        x = lib.tensor(a, dtype=lib.float64, requires_grad=True)
        y = lib.tensor(b, dtype=lib.float64, requires_grad=True)
        gx, gy = lib.autograd.grad(fn(x, y).sum(), (x, y))
        out.append((np.asarray(gx.tolist()), np.asarray(gy.tolist())))
    for want, got in zip(out[0], out[1], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)


def test_broadcast_mismatch_message_names_both_sizes():
    """broadcasting.py:56 [const] '0' -> '1' (sizes[0] -> sizes[1] in the message)."""
    for shapes in [((3,), (4,)), ((3, 1), (1, 4), (5, 1))]:
        with pytest.raises(RuntimeError) as want:
            torch.broadcast_tensors(*[torch.zeros(s) for s in shapes])
        with pytest.raises(RuntimeError) as got:
            tg.broadcast_tensors(*[tg.zeros(s) for s in shapes])
        assert str(got.value) == str(want.value)


def test_gradient_of_int_input_takes_exact_differences():
    """calculus.py:113 [drop] 'input = input.to(_dtypes.get_default_dtype())' -> 'pass'.

    torch differences an integer input in its own dtype (exact) and only then divides by the
    spacing; tapegrad cast to float32 first and lost the 1s next to 2**25 (fixed: the cast is
    gone, which made the mutant the code). uint8 torch refuses."""
    big = 2**25
    for kw in [{}, {"spacing": 3}, {"spacing": (np.array([0.0, 1.0, 2.0, 4.0]),)}]:
        res = []
        for lib in (torch, tg):
            x = lib.tensor([big, big + 1, big + 2, big + 3])
            kw_lib = {
                k: tuple(lib.tensor(c) for c in v) if isinstance(v, tuple) else v
                for k, v in kw.items()
            }
            (r,) = lib.gradient(x, **kw_lib)
            res.append((str(r.dtype).split(".")[-1], r.tolist()))
        assert res[1] == res[0], kw
    with pytest.raises(RuntimeError, match="torch.gradient does not support uint8 input"):
        torch.gradient(torch.tensor([5, 3, 1], dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="torch.gradient does not support uint8 input"):
        tg.gradient(tg.tensor([5, 3, 1], dtype=tg.uint8))


def test_complex_autograd_error_names_op_in_snake_case():
    """complex_guard.py:134 [drop] 'out.append("_")' -> 'pass' (LogSoftmax -> log_softmax)."""
    z = tg.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    with pytest.raises(NotImplementedError, match=r"^tg\.log_softmax: autograd for complex"):
        tg.log_softmax(z, 0)


def test_batched_backward_of_basic_key_takes_no_flat_positions(monkeypatch):
    """indexing.py:223 [drop] 'return take_index(g, lead + key, False, name)' -> 'pass'.

    A basic key in a batched backward slices g directly (a view); the flat-positions gather
    is for array keys only. Values match torch either way, so the test checks the path."""
    calls = []
    real = indexing._flat_positions
    monkeypatch.setattr(
        indexing, "_flat_positions", lambda *a: calls.append(a) or real(*a), raising=True
    )
    a_np, b_np = np.arange(6.0).reshape(2, 3), np.arange(3.0).reshape(1, 3) + 10
    go = np.arange(18.0).reshape(2, 3, 3)
    a = tg.tensor(a_np, requires_grad=True)
    b = tg.tensor(b_np, requires_grad=True)
    ga, gb = tg.autograd.grad(
        tg.cat([a * a, b * b], 0), (a, b), tg.tensor(go), is_grads_batched=True
    )
    # torch's values (checked): go sliced along dim 1 (after the batch dim) times 2a, 2b
    np.testing.assert_array_equal(ga.numpy(), go[:, :2] * 2 * a_np)
    np.testing.assert_array_equal(gb.numpy(), go[:, 2:] * 2 * b_np)
    assert calls == []


def test_svd_lowrank_broadcasts_m():
    """lowrank.py:45 [drop] 'M = as_tensor(M, "svd_lowrank").broadcast_to(A._data.shape)'.

    M of shape (1, n) (a column mean) broadcasts to A's shape, as in torch."""
    data = np.arange(12.0).reshape(3, 4) ** 1.5
    res = []
    for lib in (torch, tg):
        a = lib.tensor(data)
        _, s, _ = lib.svd_lowrank(a, q=2, M=a.mean(0, keepdim=True))
        res.append(np.asarray(s.tolist()))
    np.testing.assert_allclose(res[1], res[0], rtol=1e-10)


def test_lu_solve_of_mixed_dtypes_raises_like_torch():
    """lu.py:239 [drop] 'B = B._cast(np.result_type(B._data.dtype, LU._data.dtype))'.

    torch refuses LU and B of two dtypes; tapegrad promoted (float64 LU, float32 B) or failed
    in matmul (fixed: torch's error)."""
    a = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    for lu_dt, b_dt in [("float64", "float32"), ("float32", "float64")]:
        msgs = []
        for lib in (torch, tg):
            LU, piv = lib.linalg.lu_factor(lib.tensor(a, dtype=getattr(lib, lu_dt)))
            with pytest.raises(RuntimeError) as e:
                lib.linalg.lu_solve(LU, piv, lib.ones(3, 1, dtype=getattr(lib, b_dt)))
            msgs.append(str(e.value))
        assert msgs[1] == msgs[0]


@pytest.mark.parametrize("op", ["cumprod", "select_scatter"])
def test_grad_dtype_of_ops_that_change_dtype(op):
    """scan.py:110 [compare] 'gx._data.dtype == src' -> '(gx._data.dtype != src)';
    view_scatter.py:44 [drop] 'grad_src = grad_src._cast(src_dtype)' -> 'pass'.

    cumprod(float32, dtype=float64) and select_scatter(float64 input, float32 src): each
    input's gradient keeps that input's dtype, as torch."""
    res = []
    for lib in (torch, tg):
        if op == "cumprod":
            x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
            (g,) = lib.autograd.grad(lib.cumprod(x, 0, dtype=lib.float64).sum(), x)
        else:
            base = lib.zeros(2, 3, dtype=lib.float64, requires_grad=True)
            x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
            out = lib.select_scatter(base, x * x, 0, 0)
            (g,) = lib.autograd.grad((out * out).sum(), x)
        res.append((str(g.dtype).split(".")[-1], g.tolist()))
    assert res[1] == res[0]
