"""Differences from PyTorch 2.13 found in review, each checked against torch (issue 10/11
follow-up): NaN gradients of zero-weight losses, the overwritten history of copy_, max
pooling and p=1/inf norms under create_graph, NumPy warnings, mixed-dtype products."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import tapegrad as tg


def _both(torch, fn):
    return fn(tg), fn(torch)


def _np(t):
    if t is None:
        return None
    if getattr(t, "_is_zerotensor", lambda: False)():  # torch's lazily zero gradient
        return np.zeros(tuple(t.shape))
    return t.detach().numpy()


# -- 1. mean-reduced NLL / cross entropy where every kept class weighs 0 --------------------


@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize(
    "target", [[1, -100, 2], [1, 1, 2], [-100, -100, -100], [0, 1, 3]], ids=str
)
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_zero_class_weights_give_torchs_nan_gradient(torch_mod, loss, target, smoothing, reduction):
    if smoothing and loss == "nll_loss":
        pytest.skip("nll_loss has no label_smoothing")
    x = np.random.default_rng(0).standard_normal((3, 4))

    def run(lib):
        xt = lib.tensor(x, requires_grad=True)
        kw = dict(weight=lib.tensor([1.0, 0.0, 0.0, 1.0], dtype=lib.float64), reduction=reduction)
        if smoothing:
            kw["label_smoothing"] = smoothing
        out = getattr(lib.nn.functional, loss)(xt, lib.tensor(target), **kw)
        out.backward()
        return out.item(), xt.grad.numpy()

    (lo, go), (lt, gt) = run(tg), run(torch_mod)
    np.testing.assert_allclose(lo, lt, rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(go, gt, rtol=1e-12, atol=1e-15, equal_nan=True)


def test_zero_class_weights_nan_pattern_on_3d_input(torch_mod):
    x = np.random.default_rng(1).standard_normal((2, 4, 3))
    t = [[1, 1, 2], [2, -100, 1]]

    def run(lib, loss):
        xt = lib.tensor(x, requires_grad=True)
        w = lib.tensor([1.0, 0.0, 0.0, 1.0], dtype=lib.float64)
        getattr(lib.nn.functional, loss)(xt, lib.tensor(t), weight=w).backward()
        return xt.grad.numpy()

    for loss in ("nll_loss", "cross_entropy"):
        np.testing.assert_array_equal(np.isnan(run(tg, loss)), np.isnan(run(torch_mod, loss)))


# -- 2. copy_ / fill_ / zero_ / x[...] = v over a tensor with history ------------------------

_OVERWRITES = {
    "copy_": lambda lib, b: b.copy_(lib.tensor([4.0, 5.0, 6.0])),
    "copy_grad_src": lambda lib, b: b.copy_(lib.tensor([4.0, 5.0, 6.0], requires_grad=True)),
    "copy_broadcast": lambda lib, b: b.copy_(lib.tensor(1.0)),
    "copy_float64": lambda lib, b: b.copy_(lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)),
    "fill_": lambda lib, b: b.fill_(2.0),
    "zero_": lambda lib, b: b.zero_(),
    "setitem_all": lambda lib, b: b.__setitem__(Ellipsis, 1.0),
    "setitem_slice": lambda lib, b: b.__setitem__(slice(None), lib.tensor([1.0, 2.0, 3.0])),
    "view_copy_part": lambda lib, b: b[:2].copy_(lib.tensor([7.0, 8.0])),
    "view_copy_all": lambda lib, b: b[:].copy_(lib.tensor([7.0, 8.0, 9.0])),
}


@pytest.mark.parametrize("name", sorted(_OVERWRITES))
def test_overwritten_history_gets_zero_gradient_like_torch(torch_mod, name):
    def run(lib):
        a = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        b = a * 2
        _OVERWRITES[name](lib, b)
        (gb,) = lib.autograd.grad((b * lib.tensor([1.0, 10.0, 100.0])).sum(), a)
        return gb.numpy()

    np.testing.assert_array_equal(*_both(torch_mod, run))


def test_overwritten_places_stay_zero_when_the_gradient_is_nan(torch_mod):
    def run(lib):
        a = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        b = a * 2
        b[:2] = lib.tensor([7.0, 8.0])
        b.backward(lib.tensor([math.nan, math.inf, 1.0]))
        return a.grad.numpy()

    np.testing.assert_array_equal(*_both(torch_mod, run))


# -- 3. max pooling under create_graph: the input gradient is a function of the input ---------


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("stride", [None, 1], ids=["tiled", "overlapping"])
@pytest.mark.parametrize("size", [4, 5])
def test_max_pool_input_gradient_requires_grad_like_torch(torch_mod, k, stride, size):
    x = np.random.default_rng(k).standard_normal([2, 3] + [size] * k)

    def run(lib):
        pool = getattr(lib.nn.functional, f"max_pool{k}d")
        xt = lib.tensor(x, requires_grad=True)
        y = pool(xt, 2, stride)
        w = lib.tensor(np.linspace(-1, 1, y.numel()).reshape(y.shape))
        g = lib.ones_like(y, requires_grad=True)
        (gx,) = lib.autograd.grad(y, xt, g, create_graph=True)
        (gx2,) = lib.autograd.grad((y * w).sum(), xt, create_graph=True)
        assert gx.requires_grad and gx2.requires_grad
        gg, gxx = lib.autograd.grad((gx * gx2).sum(), (g, xt), allow_unused=True)
        return gx2.detach().numpy(), gg.numpy(), _np(gxx)

    for ours, theirs in zip(run(tg), run(torch_mod), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


# -- 4. p = 1 / inf norms: a create_graph gradient depends on the input ----------------------

_NORMS = {
    "norm": lambda lib, x, p: x.norm(p=p),
    "vector_norm": lambda lib, x, p: lib.linalg.vector_norm(x, ord=p),
    "linalg.norm": lambda lib, x, p: lib.linalg.norm(x.flatten(), ord=p),
    "matrix_norm": lambda lib, x, p: lib.linalg.matrix_norm(x, ord=p),
    "abs": lambda lib, x, p: x.abs().sum(),
    "l1_loss": lambda lib, x, p: lib.nn.functional.l1_loss(x, lib.zeros_like(x)),
}


@pytest.mark.parametrize("name", sorted(_NORMS))
@pytest.mark.parametrize("p", [1, math.inf, 0, 2], ids=["1", "inf", "0", "2"])
def test_second_derivative_through_sign_based_norms_is_zero_not_missing(torch_mod, name, p):
    if name == "matrix_norm" and p in (0, 2):
        pytest.skip("matrix_norm: ord 0 does not exist; 2 is the SVD's")

    def run(lib):
        x = lib.tensor([[1.0, -2.0, 0.5], [3.0, 0.0, -4.0]], dtype=lib.float64, requires_grad=True)
        (gx,) = lib.autograd.grad(_NORMS[name](lib, x, p), x, create_graph=True, allow_unused=True)
        if gx is None:  # torch: an ord-0 norm has no gradient at all
            return None, None
        assert gx.requires_grad
        (gxx,) = lib.autograd.grad((gx * gx).sum(), x, allow_unused=True)
        return gx.detach().numpy(), _np(gxx)

    for ours, theirs in zip(run(tg), run(torch_mod), strict=True):
        if theirs is None:
            assert ours is None
        else:
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


# -- 6. products of mixed dtypes raise torch's RuntimeError (elementwise ops promote) ----------


def _r(lib, shape, dtype="float32"):
    n = int(np.prod(shape))
    return lib.tensor(np.linspace(-1, 1, n).reshape(shape)).to(getattr(lib, dtype))


_F, _D = "float32", "float64"
_MIXED = {
    "mm": lambda m, F: m.mm(_r(m, (2, 3)), _r(m, (3, 2), _D)),
    "bmm": lambda m, F: m.bmm(_r(m, (1, 2, 3)), _r(m, (1, 3, 2), _D)),
    "dot": lambda m, F: m.dot(_r(m, (3,)), _r(m, (3,), _D)),
    "vdot": lambda m, F: m.vdot(_r(m, (3,), _D), _r(m, (3,))),
    "mv": lambda m, F: m.mv(_r(m, (2, 3)), _r(m, (3,), _D)),
    "inner": lambda m, F: m.inner(_r(m, (2, 3), _D), _r(m, (2, 3))),
    "tensordot": lambda m, F: m.tensordot(_r(m, (2, 3), _D), _r(m, (3, 2)), dims=1),
    "addmm_self": lambda m, F: m.addmm(_r(m, (2, 2), _D), _r(m, (2, 3)), _r(m, (3, 2))),
    "addmm_mat1": lambda m, F: m.addmm(_r(m, (2, 2)), _r(m, (2, 3), _D), _r(m, (3, 2))),
    "addmm_mat2": lambda m, F: m.addmm(_r(m, (2, 2)), _r(m, (2, 3)), _r(m, (3, 2), _D)),
    "addmv": lambda m, F: m.addmv(_r(m, (2,), _D), _r(m, (2, 3)), _r(m, (3,))),
    "addmv_vec": lambda m, F: m.addmv(_r(m, (2,)), _r(m, (2, 3)), _r(m, (3,), _D)),
    "baddbmm": lambda m, F: m.baddbmm(_r(m, (1, 2, 2)), _r(m, (1, 2, 3), _D), _r(m, (1, 3, 2))),
    "addbmm": lambda m, F: m.addbmm(_r(m, (2, 2)), _r(m, (1, 2, 3)), _r(m, (1, 3, 2), _D)),
    "multi_dot": lambda m, F: m.linalg.multi_dot([_r(m, (2, 3)), _r(m, (3, 2)), _r(m, (2, 2), _D)]),
    "einsum_contract": lambda m, F: m.einsum("ij,jk->ik", _r(m, (2, 3), _D), _r(m, (3, 2))),
    "einsum_dot": lambda m, F: m.einsum("i,i->", _r(m, (2,)), _r(m, (2,), _D)),
    "linear": lambda m, F: F.linear(_r(m, (2, 3), _D), _r(m, (4, 3))),
    "linear_3d": lambda m, F: F.linear(_r(m, (5, 2, 3)), _r(m, (4, 3), _D)),
    "linear_bias": lambda m, F: F.linear(_r(m, (2, 3)), _r(m, (4, 3)), _r(m, (4,), _D)),
    "linear_weight_bias": lambda m, F: F.linear(_r(m, (2, 3)), _r(m, (4, 3), _D), _r(m, (4,), _D)),
    "conv1d": lambda m, F: F.conv1d(_r(m, (1, 1, 4)), _r(m, (1, 1, 2), _D)),
    "conv2d_input": lambda m, F: F.conv2d(_r(m, (1, 1, 4, 4), _D), _r(m, (1, 1, 2, 2))),
    "conv2d_bias": lambda m, F: F.conv2d(_r(m, (1, 1, 4, 4)), _r(m, (1, 1, 2, 2)), _r(m, (1,), _D)),
    "conv3d_bias": lambda m, F: F.conv3d(
        _r(m, (1, 1, 3, 3, 3)), _r(m, (1, 1, 2, 2, 2)), _r(m, (1,), _D)
    ),
    "conv2d_int": lambda m, F: F.conv2d(_r(m, (1, 1, 4, 4)), _r(m, (1, 1, 2, 2), "int64")),
    "conv_transpose2d": lambda m, F: F.conv_transpose2d(
        _r(m, (1, 1, 3, 3)), _r(m, (1, 1, 2, 2), _D)
    ),
    "bilinear": lambda m, F: F.bilinear(_r(m, (2, 3)), _r(m, (2, 3), _D), _r(m, (4, 3, 3))),
    "bilinear_bias": lambda m, F: F.bilinear(
        _r(m, (2, 3)), _r(m, (2, 3)), _r(m, (4, 3, 3)), _r(m, (4,), _D)
    ),
    "cdist": lambda m, F: m.cdist(_r(m, (2, 3)), _r(m, (2, 3), _D)),
    "vecdot": lambda m, F: m.linalg.vecdot(_r(m, (2, 3)), _r(m, (2, 3), _D)),
    "sdpa": lambda m, F: F.scaled_dot_product_attention(
        _r(m, (1, 2, 3)), _r(m, (1, 2, 3), _D), _r(m, (1, 2, 3))
    ),
}
_SHAPES = [(3,), (2, 3), (2, 2, 3), (1, 2, 2, 3)]
for _a in _SHAPES:
    for _b in [(3,), (3, 2), (2, 3, 2), (1, 2, 3, 2)]:
        for _da, _db in ((_F, _D), ("int64", _F), ("float16", _F), ("int32", "int64")):
            _MIXED[f"matmul_{len(_a)}d_{len(_b)}d_{_da}_{_db}"] = (
                lambda m, F, a=_a, b=_b, da=_da, db=_db: _r(m, a, da) @ _r(m, b, db)
            )


@pytest.mark.parametrize("name", sorted(_MIXED))
def test_mixed_dtype_products_raise_torchs_error(torch_mod, name):
    with pytest.raises(RuntimeError) as theirs:
        _MIXED[name](torch_mod, torch_mod.nn.functional)
    with pytest.raises(RuntimeError) as ours:
        _MIXED[name](tg, tg.nn.functional)
    assert str(ours.value) == str(theirs.value).splitlines()[0]


_PROMOTING = {
    "outer": lambda m, F: m.outer(_r(m, (2,)), _r(m, (3,), _D)),
    "einsum_elementwise": lambda m, F: m.einsum("i,i->i", _r(m, (2,)), _r(m, (2,), _D)),
    "einsum_outer": lambda m, F: m.einsum("i,j->ij", _r(m, (2,)), _r(m, (2,), _D)),
    "kron": lambda m, F: m.kron(_r(m, (2, 2)), _r(m, (2, 2), _D)),
    "addr": lambda m, F: m.addr(_r(m, (2, 2)), _r(m, (2,)), _r(m, (2,), _D)),
    "conv_transpose2d_bias": lambda m, F: F.conv_transpose2d(
        _r(m, (1, 1, 3, 3)), _r(m, (1, 1, 2, 2)), _r(m, (1,), _D)
    ),
    "matmul_int": lambda m, F: _r(m, (2, 3), "int64") @ _r(m, (3, 2), "int64"),
}


@pytest.mark.parametrize("name", sorted(_PROMOTING))
def test_mixed_dtype_ops_torch_accepts_still_run(torch_mod, name):
    ours = _PROMOTING[name](tg, tg.nn.functional)
    theirs = _PROMOTING[name](torch_mod, torch_mod.nn.functional)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


# -- 5. no NumPy floating-point warnings (torch is silent: inf / NaN results) ----------------

_INF = math.inf
_SILENT = {
    "div_by_zero": (lambda m, x: x / m.zeros_like(x), [0.0, 1.0, -1.0]),
    "div_scalar_zero": (lambda m, x: x / 0.0, [0.0, 1.0]),
    "rdiv_zero": (lambda m, x: 1.0 / x, [0.0, -0.0]),
    "div_inplace": (lambda m, x: x.clone().div_(m.zeros_like(x)), [0.0, 1.0]),
    "true_divide": (lambda m, x: m.true_divide(x, x), [0.0]),
    "div_floor": (lambda m, x: m.div(x, m.zeros_like(x), rounding_mode="floor"), [0.0, 1.0]),
    "remainder": (lambda m, x: m.remainder(x, m.zeros_like(x)), [1.0]),
    "log": (lambda m, x: m.log(x), [0.0, -1.0]),
    "log2": (lambda m, x: m.log2(x), [0.0, -1.0]),
    "log1p": (lambda m, x: m.log1p(x), [-1.0, -2.0]),
    "sqrt": (lambda m, x: m.sqrt(x), [0.0, -1.0]),
    "rsqrt": (lambda m, x: m.rsqrt(x), [0.0, -1.0]),
    "pow_neg": (lambda m, x: x**-1, [0.0]),
    "pow_half": (lambda m, x: x**0.5, [-1.0, 0.0]),
    "pow_overflow": (lambda m, x: x**40, [1e30]),
    "pow_tensor": (lambda m, x: m.pow(x, x), [0.0, -0.5]),
    "acosh": (lambda m, x: m.acosh(x), [0.0, 1.0]),
    "asin": (lambda m, x: m.asin(x), [2.0, 1.0]),
    "atanh": (lambda m, x: m.atanh(x), [1.0, 2.0]),
    "exp_overflow": (lambda m, x: m.exp(x), [1e4]),
    "expm1_overflow": (lambda m, x: m.expm1(x), [1e4]),
    "cosh_overflow": (lambda m, x: m.cosh(x), [1e4]),
    "tan_inf": (lambda m, x: m.tan(x), [_INF]),
    "sin_inf": (lambda m, x: m.sin(x), [_INF]),
    "cos_inf": (lambda m, x: m.cos(x), [_INF]),
    "reciprocal": (lambda m, x: m.reciprocal(x), [0.0]),
    "logit": (lambda m, x: m.logit(x), [0.0, 1.0]),
    "xlogy": (lambda m, x: m.xlogy(x, x), [0.0]),
    "log_softmax_all_-inf": (lambda m, x: m.log_softmax(x, 0), [-_INF, -_INF]),
    "softmax_inf": (lambda m, x: m.softmax(x, 0), [_INF, 0.0]),
    "layer_norm_inf": (lambda m, x: m.nn.functional.layer_norm(x, (2,)), [_INF, 1.0]),
    "var_one": (lambda m, x: x.var(), [1.0]),
    "float16_overflow": (lambda m, x: x.half().double(), [1e6]),
    "norm_zero": (lambda m, x: m.linalg.vector_norm(x), [0.0, 0.0]),
    "cdist_zero": (lambda m, x: m.cdist(x.reshape(1, -1), x.reshape(1, -1)), [0.0, 0.0]),
}


@pytest.mark.parametrize("name", sorted(_SILENT))
def test_no_numpy_floating_point_warning_forward_or_backward(torch_mod, name):
    fn, values = _SILENT[name]

    def run(lib):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        y = fn(lib, x)
        (g,) = lib.autograd.grad(y.sum(), x, allow_unused=True)
        return y.detach().numpy(), _np(g)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = run(tg)
    theirs = run(torch_mod)
    for a, b in zip(ours, theirs, strict=True):
        if b is None:
            assert a is None or not np.any(a)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-7, equal_nan=True)


def test_nan_and_overflow_casts_are_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tg.tensor([math.nan, math.inf]).long()
        tg.tensor([math.inf]).to(tg.int32)
        tg.tensor([1e6]).half()


def test_users_numpy_error_state_is_untouched():
    before = np.geterr()
    x = tg.tensor([0.0, 1.0], requires_grad=True)
    (x / 0.0).sum().backward()
    tg.jit.cache(lambda t: t / 0.0)(tg.tensor([1.0]))
    assert np.geterr() == before
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning):  # the user's own NumPy still warns
            np.divide(np.ones(1), np.zeros(1))


def test_graph_cache_replays_are_silent():
    step = tg.jit.cache(lambda t: (t / t.sum() + t.log()).exp())
    x = tg.tensor([0.0, 0.0])
    step(x)
    step(x)  # recorded
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = step(x)  # a replay
    assert step.cache_info().hits >= 1
    assert np.isnan(out.numpy()).all()


# -- 7. Tensor.shape / size() are Sizes (torch.Size: a tuple with numel) ---------------------


def test_shape_is_a_size_like_torchs(torch_mod):
    x, t = tg.zeros(2, 3), torch_mod.zeros(2, 3)
    for ours, theirs in ((x.shape, t.shape), (x.size(), t.size())):
        assert isinstance(ours, tg.Size) and isinstance(ours, tuple)
        assert ours == theirs == (2, 3) and ours.numel() == theirs.numel() == 6
        assert repr(ours).replace("tapegrad", "torch") == repr(theirs)
    assert x.size(1) == 3 and type(x.size(1)) is int and type(x.shape[0]) is int
    assert tg.zeros(()).shape == () and tg.zeros(()).shape.numel() == 1
    assert x.shape is x.shape  # made once (Note [Size cache])


def test_shape_follows_every_change_of_the_data():
    x = tg.zeros(2, 3)
    assert x.shape == (2, 3)
    x.resize_(6)
    assert x.shape == (6,) and x.size() == (6,)
    x.data = tg.zeros(4, 1)
    assert x.shape == (4, 1)
    m = tg.nn.Linear(2, 3)
    assert m.weight.shape == (3, 2)
    m.double()  # Module._apply swaps the arrays
    assert m.weight.shape == (3, 2) and m.weight.shape.numel() == 6
    p = tg.nn.Parameter(tg.zeros(5))
    assert p.shape == (5,) and isinstance(p.shape, tg.Size)


def test_shape_survives_copy_and_pickle():
    import copy
    import pickle

    x = tg.zeros(2, 3)
    _ = x.shape
    for y in (copy.copy(x), copy.deepcopy(x), pickle.loads(pickle.dumps(x))):
        assert y.shape == (2, 3) and isinstance(y.shape, tg.Size)
    s = pickle.loads(pickle.dumps(x.shape))
    assert s == (2, 3) and isinstance(s, tg.Size)


def test_linalg_solve_refuses_mixed_dtypes_like_torch(torch_mod):
    def run(lib):
        a = lib.tensor([[2.0, 1.0], [1.0, 3.0]])
        lib.linalg.solve(a, a.double())

    with pytest.raises(RuntimeError) as theirs:
        run(torch_mod)
    with pytest.raises(RuntimeError) as ours:
        run(tg)
    assert str(ours.value) == str(theirs.value)


# -- tensors print as torch's do (tapegrad/_tensor_repr.py) ----------------------------------

_REPRS = {
    "floats": lambda m: m.tensor([1.5, 2.0]),
    "scalar": lambda m: m.tensor(0.125),
    "bools": lambda m: m.tensor([True, False]),
    "ints": lambda m: m.tensor([1, -20, 300]),
    "int32": lambda m: m.tensor([2, 3], dtype=m.int32),
    "summarized": lambda m: m.arange(2000.0),
    "matrix": lambda m: m.arange(12.0).reshape(3, 4) / 7,
    "sci_small": lambda m: m.tensor([1e-5, 1.0]),
    "sci_large": lambda m: m.tensor([1e9, 1.0]),
    "nonfinite": lambda m: m.tensor([math.nan, math.inf, -math.inf, 1.5]),
    "empty": lambda m: m.zeros(0),
    "empty_2d": lambda m: m.zeros(0, 3),
    "empty_int": lambda m: m.zeros(0, dtype=m.int64),
    "3d": lambda m: m.ones(2, 3, 4) / 3,
    "summarized_2d": lambda m: m.arange(1100).reshape(11, 100),
    "requires_grad": lambda m: m.tensor([1.0, 2.0], requires_grad=True),
    "float64": lambda m: m.tensor([0.1, 0.2], dtype=m.float64),
    "float16": lambda m: m.tensor([0.1, 0.2], dtype=m.float16),
    "signed_zero": lambda m: m.tensor([[-0.0, 0.0]]),
    "wrapped": lambda m: m.linspace(-1, 1, 30),
    "long_suffix": lambda m: m.linspace(0, 1, 25, dtype=m.float64).reshape(5, 5),
    "parameter": lambda m: m.nn.Parameter(m.ones(2)),
}


@pytest.mark.parametrize("name", sorted(_REPRS))
def test_tensors_print_like_torch(torch_mod, name):
    ours = repr(_REPRS[name](tg)).replace("tapegrad.", "torch.")
    assert ours == repr(_REPRS[name](torch_mod))


# -- gaps the programs of tests/programs/ hit ----------------------------------------------


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_vmap_of_nll_loss_has_a_batching_rule_like_torch(torch_mod, reduction, weighted):
    # torch.func's per-sample-gradients tutorial: vmap over nll_loss warned (a Python loop).
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    t = rng.integers(0, 5, (4, 3))
    t[0, 1] = -100
    w = np.array([1.0, 2.0, 0.5, 1.0, 3.0], np.float32) if weighted else None

    def run(lib):
        def f(xx, tt):
            weight = None if w is None else lib.tensor(w)
            return lib.nn.functional.nll_loss(
                xx.log_softmax(-1), tt, weight=weight, reduction=reduction
            )

        return lib.func.vmap(f)(lib.tensor(x), lib.tensor(t)).numpy()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = run(tg)
    np.testing.assert_allclose(ours, run(torch_mod), rtol=1e-5, atol=1e-6)


def test_meta_device_like_torch(torch_mod):
    # torch.func's model-ensembling tutorial: copy.deepcopy(model).to("meta").
    for lib in (tg, torch_mod):
        m = lib.nn.Linear(2, 3).to("meta")
        assert str(m.weight.device) == "meta" and m.weight.is_meta and m.weight.requires_grad
        assert m.weight.shape == (3, 2) and not m.weight.is_cuda
        x = lib.zeros(2, dtype=lib.float64).to("meta")
        assert str((x + 1).device) == "meta"
        with pytest.raises(NotImplementedError, match="meta"):
            x.to("cpu")
    ours = repr(tg.nn.Linear(2, 3).to("meta").weight).replace("tapegrad", "torch")
    assert ours == repr(torch_mod.nn.Linear(2, 3).to("meta").weight)
    ours = repr(tg.zeros(2, dtype=tg.float64).to("meta")).replace("tapegrad", "torch")
    assert ours == repr(torch_mod.zeros(2, dtype=torch_mod.float64).to("meta"))


def test_as_torch_keeps_tapegrads_own_module_specs():
    # The alias set ``torch.func``'s spec on tapegrad.func: every function-level relative
    # import inside it then raised ImportWarning("__package__ != __spec__.parent").
    import subprocess
    import sys

    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "import tapegrad.as_torch as a; a.install()\n"
        "import tapegrad.func, torch.func, torch.nn.functional\n"
        "assert tapegrad.func.__spec__.name == 'tapegrad.func', tapegrad.func.__spec__\n"
        "assert torch.nn.functional.__spec__.name == 'tapegrad.nn.functional'\n"
        "assert torch.func is tapegrad.func\n"
        "import torch.nn as nn\n"
        "m = nn.Linear(3, 2)\n"
        "torch.func.vmap(lambda x: torch.func.functional_call(m, dict(m.named_parameters()), (x,)))"
        "(torch.ones(4, 3))\n"
    )
    env = {**__import__("os").environ, "PYTHONPATH": str(Path(tg.__file__).parents[1])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss"])
def test_pointwise_loss_warns_on_a_broadcast_target(name):
    # torch warns "Using a target size ... different to the input size" (a (N, 1) output
    # against an (N,) target broadcasts to (N, N): a classic silent bug in user code).
    fn = getattr(tg.nn.functional, name)
    with pytest.warns(UserWarning, match="Using a target size"):
        fn(tg.zeros(3, 1), tg.zeros(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fn(tg.zeros(3), tg.zeros(3))
