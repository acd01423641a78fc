"""The ``_`` twins of the hand-written ops and the Tensor methods of issue 10's gap, against
PyTorch (rows: tests/optable/inplace_twins.py; Note [Generated in-place twins])."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg

from .optable.inplace_twins import TWINS, Twin, run

IDS = [f"{t.name}-{i}" for i, t in enumerate(TWINS)]
FLOAT64 = [t for t in TWINS if t.dtype == "float64"]
FLOAT64_IDS = [i for t, i in zip(TWINS, IDS) if t.dtype == "float64"]
# floor_divide_: torch raises "derivative for aten::floor_divide_ is not implemented"
GRAD = [t for t in FLOAT64 if t.name != "floor_divide_"]
GRAD_IDS = [i for t, i in zip(FLOAT64, FLOAT64_IDS) if t.name != "floor_divide_"]


def _input(twin: Twin, seed=0):
    x = twin.inputs(np.random.default_rng(seed))
    if twin.dtype == "int64":
        return np.random.default_rng(seed).integers(-12, 12, twin.shape)
    return x.astype(twin.dtype)


def _pair(m, a, **kw):
    return m.tensor(a.copy(), **kw)


@pytest.mark.parametrize("twin", TWINS, ids=IDS)
def test_value_identity_and_version(twin, torch_mod):
    a = _input(twin)
    x, xt = _pair(tg, a), _pair(torch_mod, a)
    before = x._version
    y = run(twin, tg, x)
    assert run(twin, torch_mod, xt) is xt
    assert y is x
    assert x._version == before + 1
    assert tuple(x.shape) == tuple(xt.shape)
    assert str(x.dtype).split(".")[-1] == str(xt.dtype).split(".")[-1]
    tol = 1e-5 if twin.dtype == "float32" else 1e-12
    np.testing.assert_allclose(x.numpy(), xt.numpy(), rtol=tol, atol=tol)
    if twin.name.rstrip("_") in ("t", "transpose", "swapaxes", "swapdims", "squeeze", "unsqueeze"):
        assert x.stride() == xt.stride()


@pytest.mark.parametrize("twin", GRAD, ids=GRAD_IDS)
def test_gradient_through_a_non_leaf(twin, torch_mod):
    a = _input(twin)
    grads = []
    for m in (tg, torch_mod):
        x = m.tensor(a, requires_grad=True)
        y = x * 1.0
        run(twin, m, y)
        w = np.random.default_rng(1).uniform(-1, 1, tuple(y.shape))
        loss = (y * m.tensor(w)).sum()
        if not loss.requires_grad:  # torch: comparisons keep a zero-gradient node
            assert m is tg
            continue
        loss.backward()
        grads.append(x.grad.numpy())
    assert len(grads) == 2, "one library kept the graph and the other did not"
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("twin", FLOAT64, ids=FLOAT64_IDS)
def test_leaf_that_requires_grad_raises_as_torch(twin, torch_mod):
    a = _input(twin)
    errors = []
    for m in (tg, torch_mod):
        x = m.tensor(a, requires_grad=True)
        with pytest.raises(Exception) as info:
            run(twin, m, x)
        errors.append(type(info.value))
    assert errors[0] is errors[1] is RuntimeError


@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.exp_(),
        lambda x: x.sqrt_(),
        lambda x: x.sin_(),
        lambda x: x.sigmoid_(),
        lambda x: x.pow_(0.5),
        lambda x: x.remainder_(1.5),
        lambda x: x.tanh_(),
    ],
    ids=["exp_", "sqrt_", "sin_", "sigmoid_", "pow_", "remainder_", "tanh_"],
)
def test_result_type_that_cannot_be_cast_raises_torchs_error(call, torch_mod):
    for m in (tg, torch_mod):
        x = m.tensor([1, 2])
        with pytest.raises(RuntimeError, match="result type .* can't be cast to the desired"):
            call(x)
    with pytest.raises(RuntimeError) as ours:
        call(tg.tensor([1, 2]))
    with pytest.raises(RuntimeError) as theirs:
        call(torch_mod.tensor([1, 2]))
    if "Float" in str(theirs.value):
        assert str(ours.value) == str(theirs.value)


def test_bool_result_into_float_is_cast_as_torch(torch_mod):
    for m in (tg, torch_mod):
        x = m.tensor([0.5, 1.0, 2.0])
        x.gt_(0.7)
        assert x.tolist() == [0.0, 1.0, 1.0]
        assert x.dtype == m.float32


def test_write_through_a_view_of_a_graph_tensor_rebases(torch_mod):
    a = np.random.default_rng(2).uniform(0.5, 2.0, (3, 4))
    grads = []
    for m in (tg, torch_mod):
        x = m.tensor(a, requires_grad=True)
        y = x * 2.0
        y[:, 0].neg_()
        y[2:, 1:].t_().clip_(1.5, 3.0)  # a view's view op is metadata only
        y[1].exp_()
        (y * y).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_view_twins_are_metadata_only(torch_mod):
    for m in (tg, torch_mod):
        x = m.arange(6.0).reshape(2, 3)
        alias = x.view(6)
        x.t_()
        assert tuple(x.shape) == (3, 2)
        x[0, 1] = 100.0  # writes through to the original memory
        assert alias[3].item() == 100.0
        x.unsqueeze_(0).squeeze_(0).transpose_(0, 1)
        assert tuple(x.shape) == (2, 3)


def test_relu_inplace_module_and_method(torch_mod):
    a = np.array([-1.0, 0.5, 2.0])
    for m in (tg, torch_mod):
        x = m.tensor(a)
        y = m.nn.ReLU(inplace=True)(x)
        assert y.tolist() == [0.0, 0.5, 2.0]
        z = m.tensor(a)
        assert z.relu_() is z and z.tolist() == [0.0, 0.5, 2.0]


# -- the methods and properties that are not in-place --


def test_gcd_lcm_match_torch(torch_mod):
    a, b = [4, 6, -9, 0, 7], [6, -4, 6, 5, 0]
    for op in ("gcd", "lcm"):
        ours = getattr(tg, op)(tg.tensor(a), tg.tensor(b))
        theirs = getattr(torch_mod, op)(torch_mod.tensor(a), torch_mod.tensor(b))
        assert ours.tolist() == theirs.tolist()
        assert getattr(tg.tensor(a), op)(tg.tensor(b)).tolist() == theirs.tolist()
    with pytest.raises(RuntimeError, match="gcd"):
        tg.gcd(tg.tensor([1.0]), tg.tensor([2.0]))


@pytest.mark.parametrize(
    "dtype", ["float32", "float64", "float16", "int64", "int8", "uint8", "bool"]
)
def test_dtype_queries(dtype, torch_mod):
    ours = tg.zeros(2, 3, dtype=getattr(tg, dtype))
    theirs = torch_mod.zeros(2, 3, dtype=getattr(torch_mod, dtype))
    assert ours.is_signed() == theirs.is_signed()
    assert ours.itemsize == theirs.itemsize
    assert ours.nbytes == theirs.nbytes
    assert ours[:, ::2].nbytes == theirs[:, ::2].nbytes
    assert ours.is_complex() is False


def test_shape_queries(torch_mod):
    for m in (tg, torch_mod):
        x = m.zeros(2, 3, 4)
        assert x.ndimension() == 3
        assert x.is_same_size(m.ones(2, 3, 4)) and not x.is_same_size(m.ones(3, 2, 4))
        assert m.tensor([0.0]).is_nonzero() is False and m.tensor(2).is_nonzero() is True
        for bad, msg in ((m.zeros(0), "no values"), (m.zeros(2), "more than one value")):
            with pytest.raises(RuntimeError, match=msg):
                bad.is_nonzero()


def test_output_nr_and_is_inference(torch_mod):
    for m in (tg, torch_mod):
        x = m.randn(2, 3, requires_grad=True)
        assert x.output_nr == 0
        assert [t.output_nr for t in x.split(1)] == [0, 1]
        assert x.is_inference() is False
        with m.inference_mode():
            assert m.zeros(1).is_inference() is True


def test_adjoint_matches_torch(torch_mod):
    a = np.random.default_rng(0).normal(size=(2, 3, 4))
    np.testing.assert_array_equal(
        tg.tensor(a).adjoint().numpy(), torch_mod.tensor(a).adjoint().numpy()
    )
    for m in (tg, torch_mod):
        with pytest.raises(RuntimeError, match="only supported on matrices"):
            m.zeros(3).adjoint()


def test_deprecated_resize_and_resize_as(torch_mod):
    a = np.arange(6.0)
    for m in (tg, torch_mod):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            x = m.tensor(a, requires_grad=True)
            y = x.resize(2, 3)
            z = x.resize_as(m.zeros(3, 2))
        assert tuple(y.shape) == (2, 3) and tuple(z.shape) == (3, 2)
        assert any("non-inplace resize is deprecated" in str(w.message) for w in seen)
        assert any("non-inplace resize_as is deprecated" in str(w.message) for w in seen)
        (y.sum() + z.sum()).backward()
        assert x.grad.tolist() == [2.0] * 6
        with pytest.raises(RuntimeError, match="can only change the shape"):
            x.resize(4)


def test_hardshrink_and_prelu_methods(torch_mod):
    a = np.array([[-1.0, -0.2, 0.3, 2.0]])
    for m in (tg, torch_mod):
        x = m.tensor(a)
        f = m.nn.functional
        assert x.hardshrink(0.25).tolist() == f.hardshrink(x, 0.25).tolist()
        w = m.tensor([0.1], dtype=m.float64)
        assert x.prelu(w).tolist() == f.prelu(x, w).tolist()


# -- the gap: every torch.Tensor name tapegrad lacks is here, with its reason --

_SPARSE = "sparse and compressed layouts: tapegrad has dense tensors only"
_QUANT = "quantized tensors: no quantization in tapegrad"
_DEVICE = "another device or backend: tapegrad runs on the CPU through NumPy"
_STORAGE = "raw storage, pointers or shared memory: a NumPy array has no torch storage"
_DEPRECATED = "removed or deprecated in torch (raises or warns there)"
_NOT_YET = "not done yet (issue 10 continues)"

REVIEWED_GAP = {
    **dict.fromkeys(
        "ccol_indices coalesce col_indices crow_indices dense_dim indices is_coalesced "
        "is_sparse_csr resize_as_sparse_ row_indices smm sparse_dim sparse_mask sparse_resize_ "
        "sparse_resize_and_clear_ sspaddmm to_sparse_bsc to_sparse_bsr to_sparse_coo "
        "to_sparse_csc to_sparse_csr values".split(),
        _SPARSE,
    ),
    **dict.fromkeys(
        "dequantize int_repr is_quantized q_per_channel_axis q_per_channel_scales "
        "q_per_channel_zero_points q_scale q_zero_point qscheme".split(),
        _QUANT,
    ),
    **dict.fromkeys(
        "ipu is_ipu is_maia is_mkldnn is_mps is_mtia is_vulkan is_xla is_xpu mtia xpu "
        "to_mkldnn record_stream is_distributed is_nested to_padded_tensor".split(),
        _DEVICE,
    ),
    **dict.fromkeys(
        "storage_type is_set_to set_ as_strided_ dim_order".split(),
        _STORAGE,
    ),
    **dict.fromkeys("eig lstsq solve symeig reinforce volatile name".split(), _DEPRECATED),
    "grad_dtype": _NOT_YET,
    "index": _NOT_YET,
    "module_load": "torch.nn.Module.load_state_dict's hook for tensor subclasses",
    "slice_inverse": "internal (slice_scatter's inverse for torch.compile)",
}


def test_the_gap_with_torch_tensor_is_reviewed(torch_mod):
    missing = {
        n for n in dir(torch_mod.Tensor) if not n.startswith("_") and not hasattr(tg.Tensor, n)
    }
    unreviewed = sorted(missing - set(REVIEWED_GAP))
    assert not unreviewed, f"torch.Tensor methods tapegrad lacks, not in REVIEWED_GAP: {unreviewed}"
    stale = sorted(n for n in set(REVIEWED_GAP) - missing if hasattr(torch_mod.Tensor, n))
    assert not stale, f"REVIEWED_GAP names tapegrad now has (remove them): {stale}"


_F_INPLACE = [
    ("relu_", ()),
    ("elu_", (0.5,)),
    ("celu_", (0.5,)),
    ("selu_", ()),
    ("leaky_relu_", (0.2,)),
    ("hardtanh_", (-0.5, 0.5)),
    ("threshold_", (0.0, -3.0)),
    ("rrelu_", ()),  # eval mode: a fixed slope
]


@pytest.mark.parametrize("name,args", _F_INPLACE, ids=[n for n, _ in _F_INPLACE])
def test_functional_inplace_activations(name, args, torch_mod):
    a = np.array([-1.0, -0.3, 0.2, 0.7, 2.0])
    values, grads = [], []
    for m in (tg, torch_mod):
        fn = getattr(m.nn.functional, name)
        x = m.tensor(a)
        assert fn(x, *args) is x
        values.append(x.numpy())
        leaf = m.tensor(a, requires_grad=True)
        y = leaf * 1.0
        fn(y, *args)
        (y * m.tensor(a)).sum().backward()
        grads.append(leaf.grad.numpy())
        with pytest.raises(RuntimeError):
            fn(m.tensor(a, requires_grad=True), *args)
    np.testing.assert_allclose(values[0], values[1], rtol=1e-12)
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)
