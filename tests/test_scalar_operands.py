"""Python scalars next to tensors (Note [Scalar operands as 0-d arrays]): same values,
dtypes and gradients as PyTorch, whatever the scalar (signed zeros, NaN, inf, big ints)."""

import numpy as np
import pytest

import tapegrad as tg

SCALARS = [0.99, -0.0, 2, 1e300, float("nan"), float("inf"), 2**40, True]


FNS = {
    "add": lambda x, s: x + s,
    "sub": lambda x, s: x - s,
    "mul": lambda x, s: x * s,
    "div": lambda x, s: x / s,
    "rsub": lambda x, s: s - x,
    "radd": lambda x, s: s + x,
    "rmul": lambda x, s: s * x,
    "rdiv": lambda x, s: s / x,
}
VALUES = np.array([-1.5, -0.0, 0.0, 0.25, 3.0])


def _same(got, want):
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # signs of zeros too


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int64"])
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
@pytest.mark.parametrize("op", sorted(FNS))
def test_scalar_operand_is_numpys_weak_scalar(op, scalar, dtype):
    """The 0-d array stands in for NumPy's weak Python scalar exactly (values, dtype)."""
    if op in ("sub", "rsub") and scalar is True:
        return  # torch refuses a bool in a subtraction (tests/test_int_numbers.py)
    if dtype == "float16" and op in ("mul", "rmul", "div", "rdiv"):
        return  # torch's float32 opmath rule, not NumPy's (tests/test_half_numbers.py)
    arr = VALUES.astype(dtype)
    with np.errstate(all="ignore"):
        try:
            want = FNS[op](arr, scalar)
        except TypeError:  # bool - array
            return
        got = FNS[op](tg.tensor(arr), scalar).numpy()
    if want.dtype == np.float64 and arr.dtype.kind != "f":
        want = want.astype(np.float32)  # PyTorch's default dtype for int / float
    assert got.dtype == want.dtype
    _same(got, want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
@pytest.mark.parametrize("op", sorted(set(FNS) - {"rdiv"}))  # torch: reciprocal(x) * s
def test_scalar_operand_matches_torch(torch_mod, op, scalar, dtype):
    with np.errstate(all="ignore"):
        try:
            want = FNS[op](torch_mod.tensor(VALUES, dtype=getattr(torch_mod, dtype)), scalar)
        except RuntimeError:  # bool - tensor
            return
        got = FNS[op](tg.tensor(VALUES, dtype=getattr(tg, dtype)), scalar)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    _same(got.numpy(), want.numpy())


@pytest.mark.parametrize("scalar", [0.99, -0.0, 2, 0.1], ids=repr)
def test_scalar_operand_gradients_match_torch(torch_mod, scalar):
    values = np.array([-1.5, 0.5, 3.0], dtype=np.float32)
    x = tg.tensor(values, requires_grad=True)
    t = torch_mod.tensor(values, requires_grad=True)
    for v in (x, t):
        ((v * scalar + scalar) / (scalar + 1.0) - scalar * v).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_cached_scalar_arrays_stay_constant():
    """The cached 0-d arrays are read-only: no op result ever is one of them."""
    x = tg.ones(3)
    y = x * 0.5
    y.mul_(4.0)
    y += 1.0
    np.testing.assert_array_equal((x * 0.5).numpy(), np.full(3, 0.5, np.float32))
