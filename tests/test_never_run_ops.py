"""ops/ statements that no test ran (tools/mutation_gaps.py on the line map of main 13cab2e),
each now run and its value, dtype or error compared with torch.

A statement no test runs is a sure survivor of every mutant on it; these tests run the
largest groups of them. Bugs they found are marked; each was a value or error type that
differed from torch's.
"""

import numpy as np
import pytest

import tapegrad as tg


def _same(ours, theirs, rtol=1e-7, atol=1e-12):
    theirs = theirs.detach().numpy() if hasattr(theirs, "detach") else np.asarray(theirs)
    ours = ours.detach().numpy() if hasattr(ours, "detach") else np.asarray(ours)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


def _raises_like(torch, call):
    """Run ``call(lib)`` on both libraries: the same exception type, ours naming the op."""
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(Exception) as ours:
        call(tg)
    assert type(ours.value) is type(theirs.value), (ours.value, theirs.value)
    return ours.value, theirs.value


# -- bugs: an integer, bool or half matrix ----------------------------------------------

NOT_FLOAT = ["int64", "int32", "uint8", "bool", "float16", "bfloat16"]


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("dtype", NOT_FLOAT)
@pytest.mark.parametrize("fn", ["eig", "eigvals"])
def test_eig_of_an_integer_or_half_matrix_raises_like_torch(torch_mod, fn, dtype):
    # bug: tapegrad cast ints, bools and bfloat16 to float and returned eigenvalues (torch
    # raises RuntimeError "Unknown Complex ScalarType for Long"), and raised RuntimeError
    # for float16 (torch: NotImplementedError)
    def call(lib):
        a = lib.tensor([[1, 2], [3, 4]]).to(getattr(lib, dtype))
        return getattr(lib.linalg, fn)(a)

    ours, _ = _raises_like(torch_mod, call)
    assert "linalg.eig" in str(
        ours
    ) and f"dtype {tg.ones(1, dtype=getattr(tg, dtype)).numpy().dtype}" in str(ours)


@pytest.mark.parametrize("dtype", NOT_FLOAT)
@pytest.mark.parametrize("fn", ["svd_lowrank", "pca_lowrank"])
def test_lowrank_of_a_non_float_matrix_raises_like_torch(torch_mod, fn, dtype):
    # bug: tapegrad cast the input to float32 and returned a factorization (torch raises
    # RuntimeError, NotImplementedError for float16)
    def call(lib):
        a = lib.tensor(np.arange(12).reshape(4, 3)).to(getattr(lib, dtype))
        return getattr(lib, fn)(a, q=2)

    ours, _ = _raises_like(torch_mod, call)
    assert fn in str(ours) and "[4, 3]" in str(ours)


@pytest.mark.parametrize("fn", ["svd_lowrank", "pca_lowrank"])
def test_lowrank_keeps_float_dtypes_like_torch(torch_mod, fn):
    torch = torch_mod
    for dtype in ("float32", "float64"):
        a = np.arange(12.0).reshape(4, 3) ** 1.5
        ours = getattr(tg, fn)(tg.tensor(a).to(getattr(tg, dtype)), q=3, niter=4)[1]
        theirs = getattr(torch, fn)(torch.tensor(a).to(getattr(torch, dtype)), q=3, niter=4)[1]
        _same(ours, theirs, rtol=1e-4, atol=1e-4)


# -- paths no test reached ----------------------------------------------------------------


@pytest.mark.parametrize("fn", ["trapezoid", "cumulative_trapezoid"])
def test_trapezoid_with_sample_points_of_fewer_dims_matches_torch(torch_mod, fn):
    torch = torch_mod
    y = np.arange(24.0).reshape(2, 3, 4) ** 1.3
    x = np.cumsum(np.arange(1.0, 13.0).reshape(3, 4) ** 0.5, axis=-1)  # (3, 4): broadcast
    for dim in (-1, 2):
        outs = []
        for lib in (tg, torch):
            yt, xt = lib.tensor(y, requires_grad=True), lib.tensor(x, requires_grad=True)
            out = getattr(lib, fn)(yt, xt, dim=dim)
            out.backward(lib.ones_like(out) * 0.5)
            outs.append((out, yt.grad, xt.grad))
        for a, b in zip(*outs):
            _same(a, b)


@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_number_floor_divided_by_a_tensor_matches_torch(torch_mod, dtype):
    torch = torch_mod
    d = [2, -3, 5, -7]
    _same(7 // tg.tensor(d).to(getattr(tg, dtype)), 7 // torch.tensor(d).to(getattr(torch, dtype)))
    _same(
        -7.5 // tg.tensor(d).to(getattr(tg, dtype)),
        -7.5 // torch.tensor(d).to(getattr(torch, dtype)),
    )


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_of_a_zero_dim_tensor_along_dim_match_torch(torch_mod, name, keepdim):
    torch = torch_mod
    ours = getattr(tg.tensor(3.5), name)(dim=0, keepdim=keepdim)
    theirs = getattr(torch.tensor(3.5), name)(dim=0, keepdim=keepdim)
    _same(ours.values, theirs.values)
    _same(ours.indices, theirs.indices)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(2, 3, 0, 4), (2, 3, 4, 0)])
def test_spatial_mean_of_an_empty_image_is_nan_like_torch(torch_mod, dtype, shape):
    torch = torch_mod
    ours = tg.zeros(*shape, dtype=getattr(tg, dtype)).mean(dim=(2, 3))
    theirs = torch.zeros(*shape, dtype=getattr(torch, dtype)).mean(dim=(2, 3))
    _same(ours, theirs)


def test_matrix_norm_with_a_dtype_matches_torch(torch_mod):
    torch = torch_mod
    a = np.arange(1.0, 7.0).reshape(2, 3).astype(np.float32) ** 1.1
    for ord_ in ("fro", "nuc", 1, -1, np.inf):
        outs = []
        for lib in (tg, torch):
            t = lib.tensor(a, requires_grad=True)
            out = lib.linalg.matrix_norm(t, ord=ord_, dtype=lib.float64)
            out.backward()
            outs.append((out, t.grad))
        _same(outs[0][0], outs[1][0], rtol=1e-6)
        _same(outs[0][1], outs[1][1], rtol=1e-5, atol=1e-6)


def test_polynomials_of_integer_points_and_degrees_match_torch(torch_mod):
    torch = torch_mod
    x, n = [1, 2, -1, 0], [3, 2, 1, 4]
    for name in ("chebyshev_polynomial_t", "hermite_polynomial_h", "laguerre_polynomial_l"):
        ours = getattr(tg.special, name)(tg.tensor(x), tg.tensor(n))
        theirs = getattr(torch.special, name)(torch.tensor(x), torch.tensor(n))
        _same(ours, theirs)


def test_scatter_without_src_or_value_raises_type_error_like_torch(torch_mod):
    ours, _ = _raises_like(torch_mod, lambda L: L.zeros(3).scatter(0, L.tensor([0])))
    assert "scatter" in str(ours)


@pytest.mark.parametrize("fn", ["cat", "stack"])
def test_double_backward_of_cat_and_stack_with_a_constant_input_matches_torch(torch_mod, fn):
    # the Tensor rule (create_graph) skips inputs that need no gradient
    torch = torch_mod
    a, b, c = np.arange(1.0, 7.0).reshape(2, 3), np.ones((2, 3)) * 0.5, np.arange(6.0).reshape(2, 3)
    outs = []
    for lib in (tg, torch):
        ta, tb, tc = (
            lib.tensor(a, requires_grad=True),
            lib.tensor(b),
            lib.tensor(c, requires_grad=True),
        )
        out = getattr(lib, fn)([ta, tb, tc])
        (g,) = lib.autograd.grad((out**3).sum(), [ta], create_graph=True)
        (g2,) = lib.autograd.grad((g * g).sum(), [ta])
        gc = lib.autograd.grad((out**3).sum(), [tc], create_graph=True)[0]
        outs.append((g, g2, gc))
    for x, y in zip(*outs):
        _same(x, y)


# -- bugs: the error for a dtype an op has no kernel for ---------------------------------
# torch's dispatch stubs raise NotImplementedError ("bitwise_and_cpu" not implemented for
# 'Float'); tapegrad raised RuntimeError, or NumPy's TypeError ("ufunc 'hypot' not supported
# for the input types") for complex inputs and for `&`, `|`, `^` of floats.


def _kernel_rows():
    from tapegrad.ops import binary_table, unary_table

    rows = [(r.name, 2) for r in binary_table.BINARY if r.float_only or r.kind == "int" or r.check]
    rows += [(r.name, 1) for r in unary_table.UNARY if r.float_only or r.kind == "int" or r.check]
    return rows


@pytest.mark.parametrize("dtype", ["float32", "float16", "bool", "int64", "uint8", "complex64"])
@pytest.mark.parametrize("name,arity", _kernel_rows())
def test_a_dtype_without_a_kernel_raises_like_torch(torch_mod, name, arity, dtype):
    torch = torch_mod
    outs = []
    for lib in (torch, tg):
        x = lib.ones(2, dtype=getattr(lib, dtype))
        try:
            outs.append(getattr(lib, name)(*[x] * arity))
        except Exception as exc:  # noqa: BLE001 - the type is compared below
            outs.append(exc)
    theirs, ours = outs
    if isinstance(theirs, Exception):
        assert type(ours) is type(theirs), (ours, theirs)
        assert name in str(ours)
    else:  # float32 values to float32 rounding (igamma's series)
        _same(ours, theirs, rtol=1e-6 if dtype != "float16" else 1e-3)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
@pytest.mark.parametrize("op", ["__and__", "__or__", "__xor__"])
def test_bitwise_operators_of_floats_raise_like_torch(torch_mod, op, dtype):
    def call(lib):
        x = lib.ones(2, dtype=getattr(lib, dtype))
        return getattr(x, op)(x)

    ours, _ = _raises_like(torch_mod, call)
    assert f"bitwise_{op.strip('_')}" in str(ours)


@pytest.mark.parametrize("fn", ["svd_lowrank", "pca_lowrank"])
def test_lowrank_refuses_complex_rather_than_answer_wrong(fn):
    # torch factors complex matrices; the code here transposes with .mT where complex
    # needs .mH (U S Vᴴ would miss A), so it refuses instead of a silent wrong answer
    a = tg.tensor(np.arange(12.0).reshape(4, 3) + 1j * np.arange(12.0)[::-1].reshape(4, 3))
    with pytest.raises(RuntimeError, match=f"{fn}: complex inputs are not supported"):
        getattr(tg, fn)(a, q=2)


@pytest.mark.parametrize("op", ["add", "sub"])
def test_half_add_with_alpha_off_its_fast_path_matches_torch(torch_mod, op):
    # the fused half-precision a + alpha * b declines other dtypes, a NumPy scalar alpha
    # and shapes that do not broadcast; the general path takes them
    torch = torch_mod

    def h(lib, n, dtype="float16"):
        return lib.tensor(np.linspace(-2, 3, n)).to(getattr(lib, dtype))

    cases = [
        lambda L: getattr(L, op)(h(L, 3), h(L, 3, "float32"), alpha=3),
        lambda L: getattr(L, op)(h(L, 3), h(L, 3, "bfloat16"), alpha=2),
        lambda L: getattr(L, op)(h(L, 3), h(L, 3), alpha=np.float32(0.1)),
        lambda L: getattr(L, op)(h(L, 3), h(L, 1), alpha=0.1),
    ]
    for call in cases:
        _same(call(tg), call(torch), rtol=1e-3)
    with pytest.raises(RuntimeError, match=op):  # torch: RuntimeError, sizes 3 and 4
        getattr(tg, op)(h(tg, 3), h(tg, 4), alpha=3)


ALPHAS = [
    ("int64", 2.0),
    ("int64", np.float32(2)),
    ("int64", np.int64(2)),
    ("float32", np.float64(0.5)),
    ("float32", np.int32(3)),
    ("float16", np.float32(0.5)),
    ("float64", np.float16(0.5)),
    ("bool", 2),
    ("bool", 0),
    ("float64", False),
    ("bool", False),
    ("float32", 1.5 + 0j),
    ("complex64", 1.5 + 0.5j),
]


@pytest.mark.parametrize("op", ["add", "sub"])
@pytest.mark.parametrize("dtype,alpha", ALPHAS, ids=[f"{d}-{a!r}" for d, a in ALPHAS])
def test_alpha_of_add_and_sub_is_taken_like_torch(torch_mod, op, dtype, alpha):
    # bugs: a NumPy scalar alpha promoted the result (float32 -> float64, float16 ->
    # float32), a float alpha of integer tensors and a complex alpha of real ones gave a
    # float64 or complex result (torch raises), bools with an int alpha gave int64
    torch = torch_mod
    if op == "sub" and dtype == "bool":
        pytest.skip("sub of bools is refused before alpha (test_uncovered_errors)")
    outs = []
    for lib in (torch, tg):
        a = lib.tensor([1, 2, 0]).to(getattr(lib, dtype))
        b = lib.tensor([3, 0, 1]).to(getattr(lib, dtype))
        try:
            outs.append(getattr(lib, op)(a, b, alpha=alpha))
        except Exception as exc:  # noqa: BLE001 - the type is compared below
            outs.append(exc)
    theirs, ours = outs
    if isinstance(theirs, Exception):
        assert type(ours) is type(theirs), (ours, theirs)
        assert str(ours) == f"{op}: {theirs}"
    else:
        _same(ours, theirs)
