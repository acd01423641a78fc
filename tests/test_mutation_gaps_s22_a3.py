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


def test_logaddexp_of_complex_operands_as_torch(torch_mod):
    """A bug fixed (binary_table._logaddexp_kernel): logaddexp refused complex tensors
    (NumPy has no complex loop); torch computes them, with its edge cases: NaN parts, equal
    infinite real parts (-inf keeps the operand torch takes as the smaller one), big values.
    logaddexp2 stays refused, as torch."""
    inf, nan = float("inf"), float("nan")
    a = [1 + 1j, 2 + 0j, complex(-inf, 0), complex(-inf, 1), complex(inf, 0), complex(inf, 1)]
    a += [complex(nan, 0), complex(1, nan), 0j, 3 - 2j, 1000 + 1j]
    b = [2 + 0j, 1 + 1j, complex(-inf, 0), complex(-inf, 2), complex(inf, 0), 1 + 0j]
    b += [1 + 0j, 2 + 0j, complex(nan, 0), -5 + 0.5j, 999 + 0j]
    for x, y in ((a, b), (b, a)):
        want = torch_mod.logaddexp(torch_mod.tensor(x), torch_mod.tensor(y))
        _same(tg.logaddexp(tg.tensor(x), tg.tensor(y)), want)
    r = [1.0, 2.0]
    want = torch_mod.logaddexp(
        torch_mod.tensor(r), torch_mod.tensor(1j, dtype=torch_mod.complex128)
    )
    _same(tg.logaddexp(tg.tensor(r), tg.tensor(1j, dtype=tg.complex128)), want)
    for m in (torch_mod, tg):
        with pytest.raises(NotImplementedError):
            m.logaddexp2(m.tensor(a), m.tensor(b))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64", "int32"])
def test_dimensioned_real_with_0d_complex_has_the_floats_width_as_torch(torch_mod, dtype):
    """A bug fixed (_zero_dim.zero_dim_operands, _table._result_dtype): a float32 (or
    bfloat16) tensor with a 0-d complex128 tensor gave complex128; torch ranks the 0-d
    operand lower and keeps the float's width: complex64 (an integer tensor takes the 0-d
    tensor's complex dtype)."""
    calls = [
        lambda a, b: a + b,
        lambda a, b: b - a,
        lambda a, b: a * b,
        lambda a, b: b / a,
        lambda a, b: a.logaddexp(b),
    ]
    for call in calls:
        for cdt in ("complex128", "complex64"):
            got, want = (
                call(
                    m.tensor([1.5, 2.0]).to(getattr(m, dtype)),
                    m.tensor(0.25 + 1j, dtype=getattr(m, cdt)),
                )
                for m in (tg, torch_mod)
            )
            _same(got, want)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, c, r: m.fmod(c, c),
        lambda m, c, r: m.fmod(r, 1j),
        lambda m, c, r: m.remainder(c, 2),
        lambda m, c, r: r % c,
        lambda m, c, r: c // 2,
        lambda m, c, r: m.floor_divide(c, c),
        lambda m, c, r: m.div(c, c, rounding_mode="trunc"),
        lambda m, c, r: c.clone().fmod_(2),
        lambda m, c, r: c.clone().__imod__(2),
    ],
)
def test_modulo_and_rounded_division_of_complex_as_torch(torch_mod, call):
    """A bug fixed (arithmetic._no_complex): fmod, remainder, floor_divide and div with a
    rounding mode raised TypeError (NumPy's, naming its ufunc; in place a cast error) for a
    complex operand; torch's dispatch stub raises NotImplementedError."""
    for m in (torch_mod, tg):
        with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
            call(m, m.tensor([1 + 1j, 2 + 0j]), m.tensor([1.0, 2.0]))


# -- ops/clamp.py ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda m, b: m.clamp(b, min=True),
        lambda m, b: b.clamp(max=False),
        lambda m, b: m.clip(b, False, True),
        lambda m, b: m.clamp(b, min=True, max=m.tensor(True)),
        lambda m, b: b.clone().clamp_(min=True),
        lambda m, b: m.clamp_min(b, True),
        lambda m, b: m.clamp(b, min=m.tensor([True, True])),
        lambda m, b: m.clamp(b, max=m.tensor(False)),
        lambda m, b: m.clamp(b, 0, 1),
        lambda m, b: m.clamp(b, 0.5),
        lambda m, b: b.clone().clamp_(min=m.tensor([True, True])),
        lambda m, b: b.clone().clamp_(0, 1),
        lambda m, b: m.clamp(b),
    ],
)
def test_clamp_of_bool_tensors_as_torch(torch_mod, call):
    """A bug fixed (clamp._bool_scalar_bounds): a bool tensor clamped by Python bools (its
    Scalar overload: a 0-d tensor beside them counts as one) was computed; torch has no bool
    kernel there (NotImplementedError). Bool tensor bounds, or numbers that promote, stay
    computed; no bound at all is torch's RuntimeError (was ValueError)."""
    got, want = (_error(lambda: call(m, m.tensor([True, False]))) for m in (tg, torch_mod))  # noqa: B023
    assert got is want
    if want is None:
        _same(call(tg, tg.tensor([True, False])), call(torch_mod, torch_mod.tensor([True, False])))


@pytest.mark.parametrize(
    "call",
    [
        lambda m, b: b**b,
        lambda m, b: b**True,
        lambda m, b: b**False,
        lambda m, b: True**b,
        lambda m, b: b ** m.tensor(True),
        lambda m, b: b.clone().pow_(True),
        lambda m, b: b**2,
        lambda m, b: 2**b,
        lambda m, b: b ** m.tensor([1, 2]),
    ],
)
def test_bool_pow_as_torch(torch_mod, call):
    """A bug fixed (arithmetic.pow): a bool tensor to a Python bool was int8 (NumPy's
    power of bools); torch keeps bool (x, or all True). Bool to a bool tensor (or a bool to
    a bool tensor) is torch's NotImplementedError (it was int8 too)."""
    got, want = (_error(lambda: call(m, m.tensor([True, False]))) for m in (tg, torch_mod))  # noqa: B023
    assert got is want
    if want is None:
        _same(call(tg, tg.tensor([True, False])), call(torch_mod, torch_mod.tensor([True, False])))


# -- autograd/function.py with forward_ad ----------------------------------------------------


def _square_function(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.x = x
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

        @staticmethod
        def jvp(ctx, t):
            return 2 * ctx.x * t

    return Square


def test_custom_function_in_a_dual_level_does_not_warn_as_torch(torch_mod):
    """A bug fixed (function.apply runs forward under forward_ad.untracked()): every custom
    Function applied inside a dual level warned "grad mode was turned off inside a dual
    level" (its forward runs under no_grad); torch does not warn. The tangent is torch's;
    a user's own no_grad there still warns."""
    import warnings  # noqa: PLC0415

    tangents = []
    for lib in (torch_mod, tg):
        fwad = lib.autograd.forward_ad
        square = _square_function(lib)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with fwad.dual_level():
                x = fwad.make_dual(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 0.5]))
                tangents.append(fwad.unpack_dual(square.apply(x)).tangent.detach())
        assert not [w for w in caught if "dual level" in str(w.message)]
    _same(tangents[1], tangents[0])
    fwad = tg.autograd.forward_ad
    fwad._WARNED[0] = False
    with pytest.warns(UserWarning, match="grad mode was turned off"):
        with fwad.dual_level():
            fwad.make_dual(tg.tensor([1.0]), tg.tensor([1.0]))
            with tg.no_grad():
                pass


@pytest.mark.parametrize(
    "A",
    [
        [[float("nan")]],
        [[1.0, 0.0], [0.0, float("nan")]],
        [[1.0, float("nan")], [float("nan"), 2.0]],
        [[[4.0, 0.0], [float("nan"), 1.0]], [[1.0, 0.0], [0.0, 1.0]]],
        [[float("inf")]],
    ],
)
def test_cholesky_of_nan_fails_as_torch(torch_mod, A):
    """A bug fixed (solve.cholesky, _cholesky_info): a NaN reached by the factorization gave
    a NaN factor (NumPy passes it on) and cholesky_ex an info of 0; torch's potrf fails
    there: LinAlgError naming the leading minor, and that order as info. inf stays a
    result, as torch."""
    want = _error(lambda: torch_mod.linalg.cholesky(torch_mod.tensor(A, dtype=torch_mod.float64)))
    got = _error(lambda: tg.linalg.cholesky(tg.tensor(A, dtype=tg.float64)))
    assert (got is None) == (want is None)
    if want is not None:
        assert issubclass(got, tg.linalg.LinAlgError)
        with pytest.raises(tg.linalg.LinAlgError) as mine:
            tg.linalg.cholesky(tg.tensor(A, dtype=tg.float64))
        with pytest.raises(torch_mod.linalg.LinAlgError) as theirs:
            torch_mod.linalg.cholesky(torch_mod.tensor(A, dtype=torch_mod.float64))
        assert str(mine.value).split(": ", 1)[1] == str(theirs.value).split(": ", 1)[1]
    infos = (m.linalg.cholesky_ex(m.tensor(A, dtype=m.float64)).info for m in (tg, torch_mod))
    _same(*infos)
