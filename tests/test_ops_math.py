"""Targeted checks of the math ops beyond the op table: PyTorch's conventions at kinks and
ties, (values, indices) results, numerical stability, dtypes and error messages."""

import math
import sys

import numpy as np
import pytest

import tapegrad as tg


def _pair(data, dtype="float64"):
    """The same leaf in tapegrad and torch."""
    torch = pytest.importorskip("torch")
    a = np.asarray(data, dtype=dtype)
    return tg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _grads_match(f_ours, f_torch, *datas, weights=None):
    """Values and gradients of f on the same inputs agree with PyTorch."""
    torch = pytest.importorskip("torch")
    ours = [tg.tensor(np.asarray(d, dtype=np.float64), requires_grad=True) for d in datas]
    theirs = [torch.tensor(np.asarray(d, dtype=np.float64), requires_grad=True) for d in datas]
    o, r = f_ours(*ours), f_torch(*theirs)
    np.testing.assert_allclose(o.detach().numpy(), r.detach().numpy(), rtol=1e-7)
    w = np.ones(tuple(r.shape)) if weights is None else weights
    (o * tg.tensor(w)).sum().backward()
    (r * torch.tensor(w)).sum().backward()
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-7, atol=1e-12)


# -- kinks and ties: the subgradient PyTorch picks -----------------------------------------

KINKS = [0.0, -0.0, 1.0, -1.0, 0.5]


@pytest.mark.parametrize(
    "name, ours, theirs",
    [
        ("relu", lambda x: x.relu(), lambda x: x.relu()),
        ("abs", lambda x: x.abs(), lambda x: x.abs()),
        ("clamp", lambda x: x.clamp(-1.0, 1.0), lambda x: x.clamp(-1.0, 1.0)),
        ("clamp-min", lambda x: x.clamp(min=0.5), lambda x: x.clamp(min=0.5)),
        ("sign", lambda x: x.sign(), lambda x: x.sign()),
        ("round", lambda x: x.round(), lambda x: x.round()),
        ("norm-2", lambda x: (x * 0).norm(), lambda x: (x * 0).norm()),
        ("norm-3", lambda x: (x * 0).norm(p=3), lambda x: (x * 0).norm(p=3)),
        (
            "vector_norm-1.5",
            lambda x: tg.linalg.vector_norm(x * 0, 1.5),
            lambda x: __import__("torch").linalg.vector_norm(x * 0, 1.5),
        ),
        ("std-constant", lambda x: (x * 0).std(), lambda x: (x * 0).std()),
        ("max-ties", lambda x: x.max(), lambda x: x.max()),
        ("amax-ties", lambda x: x.reshape(1, 5).amax(1), lambda x: x.reshape(1, 5).amax(1)),
        ("min-ties", lambda x: x.min(), lambda x: x.min()),
        ("inf-norm-ties", lambda x: x.norm(p=float("inf")), lambda x: x.norm(p=float("inf"))),
    ],
)
def test_kink_gradients_match_torch(name, ours, theirs):
    _grads_match(ours, theirs, KINKS)


def test_clamp_tensor_bounds_at_the_bounds():
    x, lo, hi = [0.0, 1.0, 2.0, 3.0], [1.0, 1.0, 1.0, 4.0], [2.0, 2.0, 2.0, 3.5]
    _grads_match(lambda *a: a[0].clamp(a[1], a[2]), lambda *a: a[0].clamp(a[1], a[2]), x, lo, hi)


def test_maximum_minimum_split_ties_half_and_half():
    a, b = [1.0, 2.0, 3.0], [1.0, 5.0, 3.0]
    _grads_match(lambda x, y: tg.maximum(x, y), lambda x, y: x.maximum(y), a, b)
    _grads_match(lambda x, y: tg.minimum(x, y), lambda x, y: x.minimum(y), a, b)
    x, y = tg.tensor([2.0], requires_grad=True), tg.tensor([2.0], requires_grad=True)
    tg.maximum(x, y).sum().backward()
    assert x.grad.item() == y.grad.item() == 0.5


def test_max_with_dim_sends_the_gradient_to_the_returned_index():
    data = [[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]
    x, tx = _pair(data)
    ours, theirs = x.max(dim=1), tx.max(dim=1)
    np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
    ours.values.sum().backward()
    theirs.values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    assert type(ours).__name__ == "max" and ours._fields == ("values", "indices")
    assert ours.indices.dtype == tg.int64 and ours.indices.grad_fn is None


@pytest.mark.parametrize("dim, keepdim", [(0, False), (1, True), (-1, False), (-2, True)])
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_dim_return_values_and_indices_like_torch(op, dim, keepdim):
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(0).normal(size=(3, 4))
    ours = getattr(tg.tensor(data), op)(dim, keepdim=keepdim)
    theirs = getattr(torch.tensor(data), op)(dim, keepdim=keepdim)
    values, indices = ours
    np.testing.assert_array_equal(values.numpy(), theirs.values.numpy())
    np.testing.assert_array_equal(indices.numpy(), theirs.indices.numpy())
    arg = getattr(tg, "arg" + op)(tg.tensor(data), dim, keepdim=keepdim)
    np.testing.assert_array_equal(
        arg.numpy(), getattr(torch, "arg" + op)(torch.tensor(data), dim, keepdim=keepdim).numpy()
    )


def test_argmax_without_dim_and_binary_max():
    torch = pytest.importorskip("torch")
    data = np.array([[1.0, 5.0], [7.0, 2.0]])
    assert tg.argmax(tg.tensor(data)).item() == 2
    assert tg.tensor(data).argmin(keepdim=True).shape == tuple(
        torch.tensor(data).argmin(keepdim=True).shape
    )
    np.testing.assert_array_equal(
        tg.max(tg.tensor(data), tg.tensor(data.T)).numpy(), np.maximum(data, data.T)
    )


@pytest.mark.parametrize("zeros", [[1], [0, 3], [0, 1, 2, 3]])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_prod_and_cumprod_gradients_with_zeros(zeros, dtype):
    torch = pytest.importorskip("torch")
    data = np.array([1.5, -2.0, 0.5, 3.0, 0.75], dtype=dtype)
    data[zeros] = 0
    for f in (lambda x: x.prod(), lambda x: x.cumprod(0), lambda x: x.reshape(5, 1).prod(0)):
        x = tg.tensor(data, requires_grad=True)
        tx = torch.tensor(data, requires_grad=True)
        w = np.linspace(-1, 1, 5).astype(dtype)[: f(tx).numel()].reshape(tuple(f(tx).shape))
        (f(x) * tg.tensor(w)).sum().backward()
        (f(tx) * torch.tensor(w)).sum().backward()
        assert x.grad.dtype == x.dtype
        assert np.isfinite(x.grad.numpy()).all()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5)


def test_cumprod_second_derivative_with_zeros_matches_torch():
    torch = pytest.importorskip("torch")
    data = [2.0, 0.0, 3.0, 0.0, 1.5]
    x, tx = _pair(data)
    (g,) = tg.autograd.grad(x.cumprod(0).sum(), x, create_graph=True)
    (tg_,) = torch.autograd.grad(tx.cumprod(0).sum(), tx, create_graph=True)
    (h,) = tg.autograd.grad((g * g).sum(), x)
    (th,) = torch.autograd.grad((tg_ * tg_).sum(), tx)
    np.testing.assert_allclose(h.numpy(), th.numpy())


# -- numerical stability ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_family_is_stable_at_large_logits(dtype):
    torch = pytest.importorskip("torch")
    data = np.array([[1e4, 1e4 - 1.0, -1e4], [-1e4, -1e4, -1e4 + 2.0]], dtype=dtype)
    for name in ("softmax", "log_softmax"):
        x = tg.tensor(data, requires_grad=True)
        tx = torch.tensor(data, requires_grad=True)
        out, ref = getattr(x, name)(1), getattr(tx, name)(1)
        assert out.dtype == x.dtype
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-6)
        w = np.array([[1.0, -2.0, 0.5], [0.3, 0.0, -1.0]], dtype=dtype)
        (out * tg.tensor(w)).sum().backward()
        (ref * torch.tensor(w)).sum().backward()
        assert np.isfinite(x.grad.numpy()).all()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    lse = tg.tensor(data).logsumexp(1)
    np.testing.assert_allclose(lse.numpy(), torch.tensor(data).logsumexp(1).numpy(), rtol=1e-6)


def test_softmax_dtype_argument_casts_first_and_the_gradient_comes_back_float32():
    x = tg.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    y = tg.softmax(x, 1, dtype=tg.float64)
    assert y.dtype == tg.float64
    (y * tg.tensor([[1.0, 0.0, 0.0]], dtype=tg.float64)).sum().backward()
    assert x.grad.dtype == tg.float32
    z = x.log_softmax(-1, dtype=tg.float64)
    assert z.dtype == tg.float64


def test_amax_with_empty_dim_reduces_everything():
    x = tg.tensor([[1.0, 4.0], [3.0, 2.0]])
    assert x.amax(dim=[]).item() == 4.0 and x.amin(()).item() == 1.0
    assert x.amax(0).tolist() == [3.0, 4.0]


def test_logsumexp_with_infinities():
    x = tg.tensor([[-math.inf, -math.inf], [0.0, -math.inf], [math.inf, 1.0]])
    out = x.logsumexp(1).numpy()
    assert out[0] == -math.inf and out[1] == 0.0 and out[2] == math.inf


def test_softplus_is_linear_above_threshold_and_stable_below():
    x = tg.tensor([-1000.0, 0.0, 30.0, 1000.0], requires_grad=True)
    y = tg.softplus(x)
    np.testing.assert_allclose(y.detach().numpy(), [0.0, math.log(2), 30.0, 1000.0], rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.5, 1.0, 1.0])


def test_det_gradient_of_a_singular_matrix_is_the_adjugate():
    # det is a polynomial, so central differences are exact: the gradient is the cofactor
    # matrix (PyTorch 2.x returns zeros here, which is not the derivative).
    a = tg.tensor(
        [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], dtype=tg.float64, requires_grad=True
    )
    assert tg.autograd.gradcheck(tg.linalg.det, (a,), atol=1e-8, rtol=1e-7)
    tg.linalg.det(a).backward()
    np.testing.assert_allclose(a.grad.numpy()[0], [4.0, 4.0, -4.0], atol=1e-12)


# -- dtypes ----------------------------------------------------------------------------------

FLOAT_UNARY = [
    "abs",
    "log1p",
    "expm1",
    "rsqrt",
    "sin",
    "cos",
    "tan",
    "erf",
    "gelu",
    "silu",
    "softplus",
    "floor",
    "ceil",
    "round",
    "sign",
]


@pytest.mark.parametrize("name", FLOAT_UNARY)
def test_unary_ops_keep_float32_and_float64(name):
    for dtype in (tg.float32, tg.float64):
        x = tg.tensor([0.5, 1.5], dtype=dtype, requires_grad=True)
        y = getattr(tg, name)(x)
        assert y.dtype == dtype
        y.sum().backward()
        assert x.grad.dtype == dtype


@pytest.mark.parametrize(
    "name",
    [
        "log1p",
        "expm1",
        "rsqrt",
        "sin",
        "cos",
        "tan",
        "erf",
        "gelu",
        "silu",
        "softplus",
        "logsumexp",
        "softmax",
        "log_softmax",
    ],
)
def test_integer_inputs_to_float_ops_give_float32(name):
    x = tg.tensor([1, 2, 3])
    y = (
        getattr(tg, name)(x, 0)
        if name in ("logsumexp", "softmax", "log_softmax")
        else getattr(tg, name)(x)
    )
    assert y.dtype == tg.float32


def test_integer_inputs_stay_integer_where_torch_keeps_them():
    x = tg.tensor([-2, 0, 3])
    for y in (
        x.abs(),
        x.sign(),
        x.floor(),
        x.round(),
        x.clamp(-1, 1),
        tg.maximum(x, x),
        x.max(),
        x.amax(),
        x.max(0).values,
        x.cumsum(0),
        x.cumprod(0),
        x.prod(),
    ):
        assert y.dtype == tg.int64, y
    assert x.clamp(min=0.5).dtype == tg.float32


def test_mixed_float32_float64_promotes_to_float64():
    a = tg.tensor([[1.0, 2.0], [3.0, 5.0]], dtype=tg.float32, requires_grad=True)
    b = tg.tensor([[2.0, 0.5], [1.0, 4.0]], dtype=tg.float64, requires_grad=True)
    for y in (  # (einsum contracting, solve, matmul: torch raises; tests/test_parity_gaps.py)
        tg.maximum(a, b),
        a.clamp(max=b),
        tg.einsum("ij,jk->ijk", a, b),
        tg.outer(a.reshape(-1), b.reshape(-1)),
    ):
        assert y.dtype == tg.float64
        a.grad = b.grad = None
        y.sum().backward()
        assert a.grad.dtype == tg.float32 and b.grad.dtype == tg.float64
    assert (a * 2.0).clamp(0.0, 1.0).dtype == tg.float32
    assert a.var().dtype == tg.float32 and a.norm().dtype == tg.float32


def test_erf_falls_back_to_math_erf_without_scipy(monkeypatch):
    from tapegrad.ops import activation

    monkeypatch.setattr(activation, "_erf_impl", None)
    monkeypatch.setitem(sys.modules, "scipy.special", None)  # makes the import fail
    x = np.array([-2.0, -0.3, 0.0, 0.7, 3.0], dtype=np.float32)
    out = tg.erf(tg.tensor(x))
    assert out.dtype == tg.float32
    np.testing.assert_allclose(out.numpy(), [math.erf(v) for v in x], rtol=1e-6)
    monkeypatch.setattr(activation, "_erf_impl", None)  # the next call finds scipy again


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, op",
    [
        (lambda x: x.var(2), "var"),
        (lambda x: x.std(dim=(0, 5)), "std"),
        (lambda x: x.softmax(2), "softmax"),
        (lambda x: x.log_softmax(-3), "log_softmax"),
        (lambda x: x.logsumexp(3), "logsumexp"),
        (lambda x: x.max(2), "max"),
        (lambda x: x.amin(dim=(1, 7)), "amin"),
        (lambda x: x.argmax(4), "argmax"),
        (lambda x: x.cumsum(2), "cumsum"),
        (lambda x: x.cumprod(-3), "cumprod"),
        (lambda x: x.prod(2), "prod"),
        (lambda x: x.norm(dim=3), "vector_norm"),
    ],
)
def test_a_wrong_dim_raises_index_error_naming_the_op(call, op):
    with pytest.raises(IndexError, match=op):
        call(tg.ones(2, 3))


@pytest.mark.parametrize(
    "equation, shapes, pattern",
    [
        ("ij,jk->ik", [(2, 3), (4, 5)], "'j' has size 4"),
        ("ij,jk->ik", [(2, 3)], "2 operand"),
        ("ijk->i", [(2, 3)], "3 subscript"),
        ("ij->ik", [(2, 3)], "'k' does not appear"),
        ("ii->i", [(2, 3)], "different sizes"),
        ("i1->i", [(2, 3)], "invalid subscript"),
        ("ij->ii", [(2, 2)], "more than once"),
    ],
)
def test_einsum_errors_name_the_equation_and_shapes(equation, shapes, pattern):
    with pytest.raises(RuntimeError, match="einsum") as info:
        tg.einsum(equation, *[tg.ones(*s) for s in shapes])
    message = str(info.value)
    assert repr(equation) in message and str(list(shapes[0])) in message
    assert pattern in message


def test_linalg_errors():
    with pytest.raises(tg.linalg.LinAlgError, match="singular"):
        tg.linalg.inv(tg.zeros(2, 2))
    with pytest.raises(RuntimeError, match="positive-definite"):
        tg.linalg.cholesky(-tg.eye(2))
    with pytest.raises(RuntimeError, match=r"linalg.solve: incompatible shapes A \[2, 2\]"):
        tg.linalg.solve(tg.eye(2), tg.ones(3, 1))
    with pytest.raises(RuntimeError, match=r"square.*\[2, 3\]"):
        tg.linalg.det(tg.ones(2, 3))
    with pytest.raises(RuntimeError, match="outer"):
        tg.outer(tg.ones(2, 2), tg.ones(2))
    # The spectral norms exist now (issue 10); see the linalg_svd rows of the op table.
    assert tg.linalg.matrix_norm(tg.eye(2) * 3.0, "nuc").item() == pytest.approx(6.0)


def test_other_bad_arguments():
    with pytest.raises(RuntimeError, match="clamp"):  # torch's type
        tg.ones(2).clamp()
    with pytest.raises(ValueError, match="gelu"):
        tg.gelu(tg.ones(2), approximate="fast")
    with pytest.raises(ValueError, match="clamp.*cannot be broadcast"):
        tg.ones(2, 3).clamp(min=tg.zeros(4))
    with pytest.raises(RuntimeError, match="max.*numel"):
        tg.zeros(0).max()
    with pytest.raises(IndexError, match="amax.*non-zero size"):
        tg.zeros(0, 3).amax(0)
    with pytest.raises(RuntimeError, match="var: expected a floating point"):
        tg.tensor([1, 2]).var()
    with pytest.raises(ValueError, match="either unbiased"):
        tg.ones(3).var(unbiased=True, correction=0)


def test_sigmoid_keeps_relative_precision_in_the_tails(torch_mod):
    x = np.array([-80.0, -40.0, -20.0, -10.0, 0.0, 10.0, 40.0], dtype=np.float32)
    ours = tg.sigmoid(tg.tensor(x)).numpy()
    theirs = torch_mod.sigmoid(torch_mod.tensor(x)).numpy()
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=0)


def test_plain_operands_become_tensors(torch_mod):
    """An extension over torch (which wants Tensors there): Python scalars and NumPy arrays
    are accepted by maximum/clamp/einsum and act as the tensors torch would need."""
    x, a = np.array([1.0, -2.0, 0.25]), np.array([0.5, 0.0, 1.0])
    xt, tt = tg.tensor(x), torch_mod.tensor(x)
    pairs = [
        (tg.maximum(xt, 0.5), torch_mod.maximum(tt, torch_mod.tensor(0.5, dtype=tt.dtype))),
        (tg.minimum(a, xt), torch_mod.minimum(torch_mod.tensor(a), tt)),
        (tg.clamp(a, min=xt), torch_mod.clamp(torch_mod.tensor(a), min=tt)),
        (tg.einsum("i,i->", xt, a), torch_mod.einsum("i,i->", tt, torch_mod.tensor(a))),
    ]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy())


def test_frobenius_norm_over_three_dims_is_an_error(torch_mod):
    with pytest.raises(RuntimeError):
        torch_mod.norm(torch_mod.ones(2, 2, 2), "fro", dim=(0, 1, 2))
    with pytest.raises(RuntimeError, match="norm: 'fro' takes at most 2 dims"):
        tg.norm(tg.ones(2, 2, 2), "fro", dim=(0, 1, 2))


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_with_at_most_one_valid_value_matches_torch(interpolation, torch_mod):
    nan = float("nan")
    q = [0.0, 0.25, 0.9, 1.0]
    for fn, row in (("quantile", [[3.0], [-1.0]]), ("nanquantile", [[nan, 2.0, nan], [nan] * 3])):
        ours = getattr(tg, fn)(tg.tensor(row), tg.tensor(q), dim=1, interpolation=interpolation)
        ref = getattr(torch_mod, fn)(
            torch_mod.tensor(row), torch_mod.tensor(q), dim=1, interpolation=interpolation
        )
        np.testing.assert_array_equal(ours.numpy(), ref.numpy(), err_msg=fn)
