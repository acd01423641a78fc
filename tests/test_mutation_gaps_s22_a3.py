"""Tests for lines of ops/ that no in-process test ran (session 22, list a, part 3), and
regressions for the differences from torch fixed on the way (the docstrings say which)."""

import numpy as np
import pytest

import tapegrad as tg


def _same(got, want):
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def _error(call):
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return type(exc)
    return None


# -- ops/_registry.py, broadcasting.py -------------------------------------------------------


def test_vmap_hooked_fn_keeps_a_plain_attribute_error(torch_mod):
    """_registry.py:153 [drop] ``raise`` (vmap_hooked): group_norm handed None for its input
    raises AttributeError, as torch, not a vmap dispatch of an unbatched call."""
    with pytest.raises(AttributeError):
        torch_mod.nn.functional.group_norm(None, 2)
    with pytest.raises(AttributeError, match="NoneType"):
        tg.nn.functional.group_norm(None, 2)


def test_broadcast_shapes_as_torch(torch_mod):
    """A bug fixed (broadcasting.py:59, the old fallback message, now gone): a negative size
    is torch's ValueError (was a RuntimeError about mismatching sizes), and shapes of more
    than NumPy's 64 dims broadcast (np.broadcast_shapes refused them)."""
    for args in [(-1, 3), ((-2,),), ((2, -1), (2, 3))]:
        with pytest.raises(ValueError, match="negative length"):
            torch_mod.broadcast_shapes(*args)
        with pytest.raises(ValueError, match="negative length"):
            tg.broadcast_shapes(*args)
    for args in [((1,) * 70, (2,)), ((2, 1), (3,)), ((), ()), (3, (2, 1)), ((2, 0), (1,))]:
        assert tg.broadcast_shapes(*args) == tuple(torch_mod.broadcast_shapes(*args))
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError):
            lib.broadcast_shapes((2, 1), (3, 4, 1), (5,))
        with pytest.raises(TypeError):
            lib.broadcast_shapes((2.0,), (2,))


# -- ops/arithmetic.py: pow ------------------------------------------------------------------


def test_integer_pow_to_negative_tensor_exponents_as_torch(torch_mod):
    """A bug fixed (arithmetic.pow): an integer tensor (or number) to an integer tensor with
    negative entries raised a RuntimeError; torch computes it (1 and -1 keep a value, by the
    exponent's parity for -1; any other base truncates to 0, 0 included). A negative number
    as exponent is still torch's RuntimeError."""
    base = [[0, 1, -1, 2], [-2, 3, -3, 5]]
    for exp in ([-1], [-2], [-3, 2, -4, 1]):
        want = torch_mod.tensor(base) ** torch_mod.tensor(exp)
        _same(tg.tensor(base) ** tg.tensor(exp), want)
    i8 = {"dtype": torch_mod.int8}
    want = torch_mod.pow(
        torch_mod.tensor([2, 3], dtype=torch_mod.uint8), torch_mod.tensor([-1, 2], **i8)
    )
    got = tg.pow(tg.tensor([2, 3], dtype=tg.uint8), tg.tensor([-1, 2], dtype=tg.int8))
    _same(got, want)
    _same((-1) ** tg.tensor([-1, -2]), (-1) ** torch_mod.tensor([-1, -2]))
    _same(2 ** tg.tensor([-1, 2]), 2 ** torch_mod.tensor([-1, 2]))
    _same(
        tg.tensor([2, 3]).pow_(tg.tensor(-1)), torch_mod.tensor([2, 3]).pow_(torch_mod.tensor(-1))
    )
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="negative integer powers"):
            lib.tensor([2, 3]) ** -1


# -- ops/solve.py ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("A", "B", "upper"),
    [
        ([[1.0, 0.0], [2.0, 0.0]], [[1.0], [1.0]], False),
        ([[0.0, 1.0], [0.0, 2.0]], [[1.0], [1.0]], True),
        (
            [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 1.0]],
            [[1.0, 0.0], [1.0, 0.0], [1.0, 1.0]],
            False,
        ),
        (
            [[2.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 1.0]],
            [[0.0, 1.0], [0.0, 1.0], [1.0, 1.0]],
            False,
        ),
    ],
)
def test_solve_triangular_with_a_zero_on_the_diagonal_as_torch(torch_mod, A, B, upper):
    """A bug fixed (solve.solve_triangular): a zero on the diagonal raised LinAlgError; torch
    substitutes through it (trsm): inf and NaN, also batched, on the right, and in the
    gradient, whose entries outside the read triangle are 0 (the mask was a product: NaN)."""
    for left in (True, False):
        b = B if left else np.array(B).T.tolist()
        want = torch_mod.linalg.solve_triangular(
            torch_mod.tensor(A), torch_mod.tensor(b), upper=upper, left=left
        )
        got = tg.linalg.solve_triangular(tg.tensor(A), tg.tensor(b), upper=upper, left=left)
        _same(got, want)
    batch = [A, np.eye(len(A)).tolist()]
    want = torch_mod.linalg.solve_triangular(
        torch_mod.tensor(batch), torch_mod.tensor(B), upper=upper
    )
    _same(tg.linalg.solve_triangular(tg.tensor(batch), tg.tensor(B), upper=upper), want)
    grads = []
    for lib in (torch_mod, tg):
        a, b = lib.tensor(A, requires_grad=True), lib.tensor(B, requires_grad=True)
        lib.linalg.solve_triangular(a, b, upper=upper).sum().backward()
        grads.append((a.grad, b.grad))
    _same(grads[1][0], grads[0][0])
    _same(grads[1][1], grads[0][1])


# -- complex operands of real-only binary ops ------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda m, a, b, r: m.xlogy(a, b),
        lambda m, a, b, r: m.xlogy(r, b),
        lambda m, a, b, r: m.xlogy(r, 1j),
        lambda m, a, b, r: m.special.xlog1py(a, b),
        lambda m, a, b, r: m.maximum(a, b),
        lambda m, a, b, r: m.minimum(r, b),
        lambda m, a, b, r: m.fmax(a, b),
        lambda m, a, b, r: m.fmin(r, a),
        lambda m, a, b, r: m.lt(a, b),
        lambda m, a, b, r: a > b,
        lambda m, a, b, r: m.le(r, a),
        lambda m, a, b, r: r >= 1j,
        lambda m, a, b, r: m.ge(a.to(m.complex128), r),
    ],
)
def test_real_only_binary_ops_refuse_complex_as_torch(torch_mod, call):
    """A bug fixed (_table.make_binary's real_only, clamp._binary_extremum, arithmetic.
    _comparison): xlogy, xlog1py, maximum/minimum, fmax/fmin and the ordered comparisons gave
    complex (or bool) results for complex operands; torch refuses them, with its error type.
    eq stays allowed."""
    results = []
    for lib in (torch_mod, tg):
        a, b = lib.tensor([1 + 1j, 2 + 0j]), lib.tensor([2 + 0j, 1 + 1j])
        r = lib.tensor([1.0, 2.0])
        results.append(_error(lambda: call(lib, a, b, r)))  # noqa: B023
    assert results[0] is not None
    assert results[1] is results[0]
    assert tg.eq(tg.tensor([1j]), 1j).tolist() == [True]


def test_float_power_of_complex_operands_is_complex128_as_torch(torch_mod):
    """A bug fixed (misc_math.float_power): a complex operand (tensor or number, base or
    exponent) raised "cannot cast a complex tensor to float64"; torch computes in complex128.
    float_power_ asks for a complex128 self then, as torch."""
    calls = [
        lambda m, c, r, i: m.float_power(c, m.tensor([2 + 0j, 1 + 1j])),
        lambda m, c, r, i: m.float_power(c, 2),
        lambda m, c, r, i: m.float_power(r, 1j),
        lambda m, c, r, i: m.float_power(i, c),
        lambda m, c, r, i: m.float_power(2, c),
        lambda m, c, r, i: m.float_power(1j, r),
        lambda m, c, r, i: c.to(m.complex128).float_power_(0.5),
        lambda m, c, r, i: m.float_power(r, 2),
    ]
    for call in calls:
        got, want = (
            call(m, m.tensor([1 + 1j, 2 + 0j]), m.tensor([1.0, 2.0]), m.tensor([1, 2]))
            for m in (tg, torch_mod)
        )
        _same(got, want)
    for m in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="float_power_"):
            m.tensor([1.0, 2.0], dtype=m.float64).float_power_(1j)
