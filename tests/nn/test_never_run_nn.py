"""nn/ statements that no test ran (tools/mutation_gaps.py on the line map of main 13cab2e),
each now run and its value, dtype or error compared with torch.

Bugs they found are marked: error types that differed from torch's.
"""

import copy

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
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(Exception) as ours:
        call(tg)
    assert type(ours.value) is type(theirs.value), (ours.value, theirs.value)
    return ours.value


# -- bugs: a weight, bias or mask that is not a Tensor ------------------------------------

# (op, call): the non-Tensor argument is the last one named; torch raises TypeError
NOT_TENSORS = [
    ("linear", "weight", lambda L, F: F.linear(L.ones(2, 3), [[1.0, 2.0, 3.0]])),
    ("linear", "bias", lambda L, F: F.linear(L.ones(2, 3), L.ones(2, 3), [1.0, 2.0])),
    ("conv2d", "weight", lambda L, F: F.conv2d(L.ones(1, 1, 3, 3), [[[[1.0]]]])),
    ("conv2d", "bias", lambda L, F: F.conv2d(L.ones(1, 1, 3, 3), L.ones(1, 1, 1, 1), [1.0])),
    ("conv1d", "weight", lambda L, F: F.conv1d(L.ones(1, 1, 3), [[[1.0]]])),
    ("conv1d", "bias", lambda L, F: F.conv1d(L.ones(1, 1, 3), L.ones(1, 1, 1), [1.0])),
    ("conv3d", "weight", lambda L, F: F.conv3d(L.ones(1, 1, 2, 2, 2), [[[[[1.0]]]]])),
    ("conv_transpose1d", "weight", lambda L, F: F.conv_transpose1d(L.ones(1, 1, 3), [[[1.0]]])),
    (
        "conv_transpose2d",
        "weight",
        lambda L, F: F.conv_transpose2d(L.ones(1, 1, 3, 3), [[[[1.0]]]]),
    ),
    (
        "conv_transpose3d",
        "weight",
        lambda L, F: F.conv_transpose3d(L.ones(1, 1, 2, 2, 2), [[[[[1.0]]]]]),
    ),
    ("bilinear", "weight", lambda L, F: F.bilinear(L.ones(2, 3), L.ones(2, 3), [[[1.0] * 3] * 3])),
    (
        "bilinear",
        "bias",
        lambda L, F: F.bilinear(L.ones(2, 3), L.ones(2, 3), L.ones(1, 3, 3), [1.0]),
    ),
]


@pytest.mark.parametrize(
    "op,name,call", NOT_TENSORS, ids=[f"{op}-{name}" for op, name, _ in NOT_TENSORS]
)
def test_a_weight_or_bias_that_is_not_a_tensor_raises_type_error_like_torch(
    torch_mod, op, name, call
):
    # bug: tapegrad raised AttributeError ('list' object has no attribute 'ndim')
    ours = _raises_like(torch_mod, lambda L: call(L, L.nn.functional))
    assert isinstance(ours, TypeError)
    assert op in str(ours) and name in str(ours) and "list" in str(ours)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("which", ["attn_mask", "key_padding_mask"])
def test_attention_masks_of_another_kind_raise_like_torch(torch_mod, which, need_weights):
    # bugs: a list mask was converted (torch: TypeError), a float64 mask of a float32
    # query raised AssertionError (torch: RuntimeError, from its matmul or attention)
    shapes = {"attn_mask": (3, 3), "key_padding_mask": (2, 3)}

    def call(L, mask):
        q = L.ones(3, 2, 4)
        return L.nn.MultiheadAttention(4, 2)(q, q, q, need_weights=need_weights, **{which: mask})

    ours = _raises_like(torch_mod, lambda L: call(L, np.zeros(shapes[which], bool).tolist()))
    assert which in str(ours)
    ours = _raises_like(torch_mod, lambda L: call(L, L.zeros(*shapes[which], dtype=L.float64)))
    assert which in str(ours) and "float64" in str(ours)


# -- paths no test reached ----------------------------------------------------------------


def test_deepcopy_of_a_model_with_a_tied_parameter_keeps_it_tied_like_torch(torch_mod):
    for lib in (tg, torch_mod):
        m = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Linear(2, 2))
        m[1].weight = m[0].weight
        c = copy.deepcopy(m)
        assert c[0].weight is c[1].weight and c[0].weight is not m[0].weight
        assert len(list(c.parameters())) == 3


def test_embedding_from_a_weight_frozen_or_not_matches_torch(torch_mod):
    w = np.arange(6.0).reshape(3, 2)
    for freeze in (True, False):
        ours = tg.nn.Embedding(3, 2, _weight=tg.tensor(w), _freeze=freeze)
        theirs = torch_mod.nn.Embedding(3, 2, _weight=torch_mod.tensor(w), _freeze=freeze)
        assert ours.weight.requires_grad == theirs.weight.requires_grad == (not freeze)
        _same(ours.weight, theirs.weight)


def test_rms_norm_reset_parameters_matches_torch(torch_mod):
    for lib in (tg, torch_mod):
        m = lib.nn.RMSNorm(3)
        with lib.no_grad():
            m.weight.mul_(3.0)
        m.reset_parameters()
        assert m.weight.detach().numpy().tolist() == [1.0, 1.0, 1.0]
        bare = lib.nn.RMSNorm(3, elementwise_affine=False)
        bare.reset_parameters()
        assert bare.weight is None


@pytest.mark.parametrize("fn", ["kaiming_normal_", "kaiming_uniform_"])
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 3)])
def test_kaiming_init_of_an_empty_tensor_warns_and_returns_it_like_torch(torch_mod, fn, shape):
    # bug: tapegrad returned without torch's warning, and refused a bad mode first
    for lib in (tg, torch_mod):
        t = lib.empty(*shape)
        with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
            assert getattr(lib.nn.init, fn)(t) is t
        with pytest.warns(UserWarning, match="zero-element"):
            assert getattr(lib.nn.init, fn)(t, mode="fan_avg") is t


def test_total_norm_of_gradients_of_mixed_dtypes_matches_torch(torch_mod):
    for norm_type in (2.0, 1.0, float("inf")):
        ours = tg.nn.utils.get_total_norm(
            [tg.ones(2) * 3, tg.ones(3, dtype=tg.float64) * 2], norm_type
        )
        theirs = torch_mod.nn.utils.get_total_norm(
            [torch_mod.ones(2) * 3, torch_mod.ones(3, dtype=torch_mod.float64) * 2], norm_type
        )
        _same(ours, theirs)


@pytest.mark.parametrize("align_corners", [True, False])
def test_grid_sample_reflection_over_a_dim_of_size_one_matches_torch(torch_mod, align_corners):
    outs = []
    for lib in (tg, torch_mod):
        x = lib.tensor(np.arange(6.0).reshape(1, 1, 1, 6), requires_grad=True)
        g = lib.tensor(np.array([[[[-0.7, 0.3], [1.4, -1.9], [0.2, 2.5]]]]), requires_grad=True)
        out = lib.nn.functional.grid_sample(
            x, g, padding_mode="reflection", align_corners=align_corners
        )
        (out * lib.tensor([[[[1.0, -2.0, 0.5]]]], dtype=lib.float64)).sum().backward()
        outs.append((out, x.grad, g.grad))
    for a, b in zip(*outs):
        _same(a, b)


def test_spectral_norm_over_dim_one_divides_by_that_matrix_norm(torch_mod):
    # spectral_norm of a transposed convolution works on weight.permute(1, 0, ...)
    # (torch's default dim=1 there): after enough power iterations the weight is
    # weight_orig / sigma_max of that matrix, as torch's
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3, 2, 2))
    got = []
    for lib in (tg, torch_mod):
        m = lib.nn.ConvTranspose2d(4, 3, 2, dtype=lib.float64)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(w))
        m = lib.nn.utils.spectral_norm(m, n_power_iterations=60)
        m(lib.ones(1, 4, 2, 2, dtype=lib.float64))
        got.append(m.weight)
    sigma = np.linalg.svd(w.transpose(1, 0, 2, 3).reshape(3, -1), compute_uv=False)[0]
    _same(got[0], w / sigma, rtol=1e-6)
    _same(got[0], got[1], rtol=1e-6)


@pytest.mark.parametrize("kernel", [2, 3])
def test_max_pool_third_derivative_matches_torch(torch_mod, kernel):
    # the double backward gathers the upstream gradient at the maxima; its own backward
    # (a third derivative, w.r.t. that gradient's gradient) scatters it back
    x = np.random.default_rng(1).standard_normal((1, 2, 6, 6))
    outs = []
    for lib in (tg, torch_mod):
        xt = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.max_pool2d(xt, kernel)
        v = lib.tensor(np.linspace(-1, 1, y.numel()).reshape(y.shape), requires_grad=True)
        (g,) = lib.autograd.grad(y, xt, v, create_graph=True)
        w = lib.tensor(np.linspace(0.5, 2, g.numel()).reshape(g.shape), requires_grad=True)
        (gv,) = lib.autograd.grad(g, v, w, create_graph=True)
        (gw,) = lib.autograd.grad((gv * gv).sum(), w)
        outs.append((g, gv, gw))
    for a, b in zip(*outs):
        _same(a, b)


def test_max_pool_gradient_of_an_infinite_upstream_gradient_matches_torch(torch_mod):
    # inf · 0 would put NaN off the maxima: the gradient is inf at the maxima, 0 elsewhere
    x = np.random.default_rng(2).standard_normal((1, 1, 6, 6))
    grads = []
    for lib in (tg, torch_mod):
        xt = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.max_pool2d(xt, 3)
        up = np.ones(tuple(y.shape))
        up[0, 0, 0, 1] = np.inf
        y.backward(lib.tensor(up))
        grads.append(xt.grad)
    _same(*grads)


def test_cross_entropy_over_many_shapes_matches_torch(torch_mod):
    # more (rows, classes) pairs than the row-offset cache keeps (64): it starts afresh
    rng = np.random.default_rng(3)
    for n in range(1, 14):
        for c in range(2, 8):
            x, t = rng.standard_normal((n, c)), rng.integers(0, c, n)
            outs = []
            for lib in (tg, torch_mod):
                xt = lib.tensor(x, requires_grad=True)
                loss = lib.nn.functional.cross_entropy(xt, lib.tensor(t))
                loss.backward()
                outs.append((loss, xt.grad))
            for a, b in zip(*outs):
                _same(a, b, rtol=1e-6)
