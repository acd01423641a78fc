"""Issue 10, point 3: results that used to differ silently from PyTorch's, and point 4: errors.

Each test states the expected value itself (what PyTorch 2.13 gives) and, where PyTorch is
installed, also checks it against torch.
"""

import numpy as np
import pytest

import tapegrad as tg

from ._message_check import check_message

NAN, INF = float("nan"), float("inf")


def _both(torch_mod, fn, *values, dtype="float64"):
    """fn applied in tapegrad and torch to tensors that require grad; (out, grads) of each."""
    res = []
    for m in (tg, torch_mod):
        xs = [m.tensor(v, dtype=getattr(m, dtype), requires_grad=True) for v in values]
        out = fn(m, *xs)
        out.sum().backward()
        res.append((out.detach().numpy(), [x.grad.numpy() for x in xs]))
    return res


def _assert_same(res):
    (o1, g1), (o2, g2) = res
    np.testing.assert_allclose(o1, o2, equal_nan=True)
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(a, b, equal_nan=True)


def test_int_index_then_slice_then_list_keeps_torch_layout(torch_mod):
    x = tg.randn(2, 5, 6, requires_grad=True)
    y = x[1, :, [0, 1]]
    assert y.shape == (5, 2)
    np.testing.assert_array_equal(y.detach().numpy(), x.detach().numpy()[1][:, [0, 1]])
    y.sum().backward()
    assert x.grad.numpy()[1, :, :2].sum() == 10 and x.grad.numpy().sum() == 10
    xt = torch_mod.tensor(x.detach().numpy())
    for key in [(1, slice(None), [0, 1]), ([0, 1], slice(None), 1), (Ellipsis, 1, [1])]:
        assert x[key].shape == tuple(xt[key].shape)
        np.testing.assert_array_equal(x[key].detach().numpy(), xt[key].numpy())


def test_python_float_to_int_tensor_power_is_float():
    y = 0.7 ** tg.tensor([0, 1, 2])
    assert y.dtype == tg.float32
    np.testing.assert_allclose(y.numpy(), [1.0, 0.7, 0.49], rtol=1e-6)
    assert (2 ** tg.tensor([1, 2])).dtype == tg.int64


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_floor_division_is_pythons(dtype):
    a = tg.tensor(1.0, dtype=dtype)
    assert (a // 0.001).item() == 999.0
    assert tg.div(a, 0.001, rounding_mode="floor").item() == 999.0
    assert tg.floor_divide(tg.tensor([-7.0, 7.0]), tg.tensor([2.0, -2.0])).tolist() == [-4, -4]
    assert tg.div(tg.tensor([-7, 7]), 2, rounding_mode="trunc").tolist() == [-3, 3]


def test_remainder_and_fmod_values_and_gradients(torch_mod):
    a, b = [1.0, -7.0, 7.0, -0.3], [0.001, 2.0, -2.0, 0.1]
    _assert_same(_both(torch_mod, lambda m, x, y: m.remainder(x, y), a, b))
    _assert_same(_both(torch_mod, lambda m, x, y: m.fmod(x, y), a, b))
    x, y = tg.tensor(1.0, dtype=tg.float64), tg.tensor(0.001, dtype=tg.float64, requires_grad=True)
    tg.remainder(x, y).backward()
    assert y.grad.item() == -999.0  # -floor(a/b), with Python's floor division


@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod"])
def test_integer_division_by_zero_raises(op):
    fn = getattr(tg, op)
    with pytest.raises(ZeroDivisionError):
        fn(tg.tensor([1, 2]), tg.tensor([1, 0]))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(tg.tensor([1, 2]), 0)
    assert np.isinf(fn(tg.tensor([1.0]), 0.0).numpy()).any() or op != "floor_divide"


def test_sum_with_dtype_backward_casts_back():
    x = tg.ones(3, requires_grad=True)
    y = x.sum(dtype=tg.float64)
    assert y.dtype == tg.float64
    y.backward()
    assert x.grad.dtype == tg.float32
    np.testing.assert_array_equal(x.grad.numpy(), [1, 1, 1])
    x.grad = None
    x.mean(dtype=tg.float64).backward()
    assert x.grad.dtype == tg.float32


def test_int_linspace_truncates_from_both_ends(torch_mod):
    got = tg.linspace(5, -5, 20, dtype=tg.int32)
    assert got.tolist()[8:13] == [0, 0, 0, 0, -1]
    want = torch_mod.linspace(5, -5, 20, dtype=torch_mod.int32)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    for args in [(0, 10, 7), (-3, 4, 5), (10, 0, 3), (1, 1, 1), (0, 5, 0)]:
        np.testing.assert_array_equal(
            tg.linspace(*args, dtype=tg.int64).numpy(),
            torch_mod.linspace(*args, dtype=torch_mod.int64).numpy(),
        )


def test_where_with_two_python_floats_is_default_dtype():
    cond = tg.tensor([True, False])
    assert tg.where(cond, 8.5, -3.9).dtype == tg.float32
    assert tg.where(cond, tg.tensor([1, 2]), 2.5).dtype == tg.float32
    assert tg.where(cond, tg.tensor([1, 2]), 2).dtype == tg.int64
    assert tg.where(cond, tg.tensor([1.0], dtype=tg.float64), 2).dtype == tg.float64


def test_gather_of_0d_input_with_1d_index():
    x = tg.tensor(3.0, requires_grad=True)
    y = tg.gather(x, 0, tg.tensor([0]))
    assert y.shape == (1,)
    y.sum().backward()
    assert x.grad.item() == 1.0
    assert tg.gather(x, 0, tg.tensor(0)).shape == ()


def test_float16_mean_over_more_than_65504_elements_has_a_gradient():
    n = 70000
    x = tg.ones(n, dtype=tg.float16, requires_grad=True)
    x.mean().backward()
    np.testing.assert_allclose(x.grad.numpy()[:3].astype(float), 1 / n, rtol=1e-2)
    x.grad = None
    tg.nn.functional.mse_loss(x, tg.zeros(n, dtype=tg.float16)).backward()
    np.testing.assert_allclose(x.grad.numpy()[:3].astype(float), 2 / n, rtol=1e-2)


def test_pow_gradient_edges(torch_mod):
    _assert_same(
        _both(
            torch_mod, lambda m, a, p: m.pow(a, p), [0.0, 0.0, -2.0, -2.0, 2.0], [0, 2, 2, 0.5, 0]
        )
    )
    _assert_same(_both(torch_mod, lambda m, p: 0.0**p, [0.0, 1.0, -1.0]))
    _assert_same(_both(torch_mod, lambda m, a: a**0, [0.0, -1.0]))
    a = tg.tensor([0.0], requires_grad=True)
    p = tg.tensor([0.0], requires_grad=True)
    (a**p).backward()
    assert a.grad.item() == 0.0 and p.grad.item() == 0.0  # not NaN (0 * 0^-1)


@pytest.mark.parametrize(
    "name,fn,values",
    [
        ("abs", lambda m, x: x.abs(), [[NAN, 0.0, -1.0]]),
        ("relu", lambda m, x: m.relu(x), [[NAN, 0.0, -1.0, 1.0]]),
        ("sign", lambda m, x: m.sign(x), [[NAN, 0.0, -2.0]]),
        ("maximum", lambda m, a, b: m.maximum(a, b), [[NAN, 1.0, 2.0, 1], [0, NAN, 2.0, NAN]]),
        ("minimum", lambda m, a, b: m.minimum(a, b), [[NAN, 1.0, 2.0, 1], [0, NAN, 2.0, NAN]]),
        ("max", lambda m, x: x.max(), [[NAN, 1.0, 2.0]]),
        ("min-dim", lambda m, x: x.min(0)[0], [[1.0, NAN, 2.0]]),
        ("softmax", lambda m, x: m.softmax(x, 0), [[INF, 0.0]]),
        ("log_softmax", lambda m, x: m.log_softmax(x, 0), [[INF, 0.0]]),
    ],
)
def test_nan_and_inf_edges_match_torch(torch_mod, name, fn, values):
    _assert_same(_both(torch_mod, fn, *values))


def test_sign_of_nan_is_zero():
    assert tg.tensor([NAN]).sign().item() == 0.0


def test_cat_of_repeated_empty_tensor_backward():
    e = tg.zeros(0, requires_grad=True)
    tg.cat([e, e, e]).sum().backward()
    assert e.grad.shape == (0,)
    x = tg.ones(2, requires_grad=True)
    tg.cat([e, x, e, x]).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2, 2])


def test_int_tensor_to_negative_int_power_raises_torchs_error():
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        tg.tensor([1, 2]) ** -2
    # a tensor of negative exponents is computed, as torch: 2 ** -1 truncates to 0
    assert (tg.tensor([1, 2]) ** tg.tensor([1, -1])).tolist() == [1, 0]
    assert (tg.tensor([1, 2]) ** 2).tolist() == [1, 4]
    assert (tg.tensor([1, 2]) ** -2.0).dtype == tg.float32


def test_setitem_with_int_slice_list_uses_torch_layout(torch_mod):
    """x[1, :, [0, 1, 2]] = v: a square selection, so NumPy's layout would silently
    write v transposed."""
    x = np.random.default_rng(0).standard_normal((2, 3, 3, 2))
    for key in [(1, slice(None), [0, 1, 2]), (1, slice(None), [0, 2], 1), (Ellipsis, 1, [1, 0])]:
        want = torch_mod.tensor(x)
        v = np.random.default_rng(1).standard_normal(tuple(want[key].shape))
        want[key] = torch_mod.tensor(v)
        got = tg.tensor(x, dtype=tg.float64)
        got[key] = tg.tensor(v, dtype=tg.float64)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    grads = []
    for m in (tg, torch_mod):
        xx = m.tensor(x, requires_grad=True)
        vv = m.tensor(np.arange(6.0).reshape(3, 2), dtype=m.float64, requires_grad=True)
        y = xx * 1.0
        y[1, :, [0, 2], 1] = vv
        w = m.tensor(np.cos(np.arange(36.0)).reshape(2, 3, 3, 2), dtype=m.float64)
        (y * w).sum().backward()
        grads.append((xx.grad.numpy(), vv.grad.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b)


def _five(m):
    return m.tensor([5])


ERRORS = {
    "sort-dim": (IndexError, lambda m: m.sort(m.ones(3), 5)),
    "topk-k": (RuntimeError, lambda m: m.ones(3).topk(5)),
    "mm-shapes": (RuntimeError, lambda m: m.mm(m.ones(2, 3), m.ones(2, 3))),
    "index_add-range": (
        RuntimeError,
        lambda m: m.ones(3, 2).index_add(0, m.tensor([5]), m.ones(1, 2)),
    ),
    "index_copy-range": (
        IndexError,
        lambda m: m.ones(3, 2).index_copy(0, m.tensor([5]), m.ones(1, 2)),
    ),
    "cross-dim": (RuntimeError, lambda m: m.cross(m.ones(2, 3), m.ones(2, 3), dim=0)),
    "tril-1d": (RuntimeError, lambda m: m.tril(m.ones(3))),
    "kthvalue-k": (RuntimeError, lambda m: m.kthvalue(m.ones(3), 4)),
    "unfold-size": (RuntimeError, lambda m: m.ones(2, 3).unfold(1, 4, 1)),
    "quantile-q": (RuntimeError, lambda m: m.quantile(m.ones(3), 1.5)),
    "take-range": (IndexError, lambda m: m.ones(3).take(m.tensor([3]))),
    "bmm-shapes": (RuntimeError, lambda m: m.bmm(m.ones(2, 2, 3), m.ones(3, 3, 2))),
    "dot-sizes": (RuntimeError, lambda m: m.dot(m.ones(2), m.ones(3))),
    "diagonal-dims": (RuntimeError, lambda m: m.ones(2, 2).diagonal(0, 1, 1)),
    "svd-1d": (RuntimeError, lambda m: m.linalg.svd(m.ones(3))),
    "masked_select-mask": (RuntimeError, lambda m: m.ones(3).masked_select(m.ones(3))),
    "bincount-negative": (RuntimeError, lambda m: m.bincount(m.tensor([-1, 2]))),
    "int-div-zero": (RuntimeError, lambda m: m.tensor([1, 2]) // 0),
    "unbind-dim": (IndexError, lambda m: m.unbind(m.ones(2, 3), 2)),
    "vsplit-1d": (RuntimeError, lambda m: m.vsplit(m.ones(3), 1)),
    "select-index": (IndexError, lambda m: m.ones(2, 3).select(1, 3)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_have_torchs_type_and_name_the_op(name, torch_mod):
    error, fn = ERRORS[name]
    with pytest.raises(error):
        fn(torch_mod)
    with pytest.raises(error) as info:
        fn(tg)
    op = name.split("-")[0].split("_")[0] if name != "int-div-zero" else "div"
    assert op in str(info.value) or name in ("dot-sizes",), str(info.value)
    with pytest.raises(error) as theirs:
        fn(torch_mod)
    waive = {"ranks": "torch lists every requirement ('1-d non-negative')"}
    waive = waive if name == "bincount-negative" else ()
    check_message(name, info.value, theirs.value, names=(op,), waive=waive)


def test_gather_with_an_empty_index_of_another_rank(torch_mod):
    x = tg.arange(5.0, requires_grad=True)
    y = tg.gather(x, 0, tg.zeros(2, 0, dtype=tg.int64))
    want = torch_mod.gather(torch_mod.arange(5.0), 0, torch_mod.zeros(2, 0, dtype=torch_mod.int64))
    assert y.shape == tuple(want.shape) == (2, 0)
    y.sum().backward()
    assert x.grad.tolist() == [0.0] * 5
