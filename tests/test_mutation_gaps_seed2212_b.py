"""Tests for survivors of the seed-2212 mutation sample (continued): each is seen to fail
on its mutant, or is the regression test of a bug found beside one.

Covers nn/_linear_split.py:57, nn/layers_ext.py:136, ops/_spatial_mean.py:34 and
autograd/graph.py:351; and bugs found beside
ops/_table.py:246 (ops without a complex kernel took complex tensors) and
ops/arithmetic.py:85 (a True alpha, add_/sub_ with alpha and a number), fixed.
"""

import numpy as np
import pytest

import tapegrad as tg


@pytest.mark.parametrize(
    "name, error, match",
    [
        ("xlogy", NotImplementedError, "xlogy_cpu\" not implemented for 'ComplexFloat'"),
        ("maximum", RuntimeError, "maximum not implemented for complex tensors"),
        ("minimum", RuntimeError, "minimum not implemented for complex tensors"),
        ("fmax", RuntimeError, "fmax not implemented for complex tensors"),
        ("fmin", RuntimeError, "fmin not implemented for complex tensors"),
    ],
)
def test_ops_without_a_complex_kernel_refuse_complex_tensors(torch_mod, name, error, match):
    """Found beside _table.py:246: xlogy (and special.xlog1py) computed with SciPy's complex
    loop and maximum/minimum/fmax/fmin ordered complex numbers as NumPy does; torch has no
    such kernel (a bug, fixed)."""
    for lib in (torch_mod, tg):
        a = lib.tensor([1 + 1j, 2 + 0j])
        with pytest.raises(error, match=match):
            getattr(lib, name)(a, lib.tensor([2 + 0j, 1 + 0j]))
        if name == "xlogy":
            with pytest.raises(error, match="xlog1py_cpu\" not implemented for 'ComplexFloat'"):
                lib.special.xlog1py(a, a)


def test_add_and_sub_take_a_true_alpha_as_a_bool_like_torch(torch_mod):
    """Found beside arithmetic.py:85: ``alpha=True`` equals 1, so it took the alpha-free
    path; torch checks it as a bool alpha (refused unless the result is bool)."""
    for lib in (torch_mod, tg):
        for x in (lib.tensor([1.0, 2.0]), lib.tensor([1, 2])):
            for other in (3, x):
                for op in (lib.add, lib.sub):
                    with pytest.raises(RuntimeError, match="Boolean alpha only supported"):
                        op(x, other, alpha=True)
        b = lib.tensor([True, False])
        assert lib.add(b, b, alpha=True).tolist() == [True, False]


@pytest.mark.parametrize(
    "dtype, other, alpha",
    [
        ("float32", 3, True),  # refused, as a bool alpha
        ("float32", "self", True),
        ("bool", True, 2),  # a bool result: True
        ("float32", 16777217, 3),  # the number rounded to float32 first
        ("float16", 0.1, 3),  # torch's half rule for a number
        ("int64", 2, 3),
    ],
)
def test_inplace_add_and_sub_with_alpha_match_torch(torch_mod, dtype, other, alpha):
    """add_/sub_ with ``alpha``, as the out-of-place ops above (same bugs in the in-place
    path: a True alpha taken as 1, a number scaled before its cast, a bool number made an
    int; fixed)."""
    for op in ("add_", "sub_"):
        res = []
        for lib in (torch_mod, tg):
            x = lib.tensor([1.0, 0.0, 3.0] * 12).to(getattr(lib, dtype))
            try:
                getattr(x, op)(x.clone() if other == "self" else other, alpha=alpha)
                res.append(x.to(lib.float64).numpy())
            except RuntimeError as e:
                res.append(type(e))
        if isinstance(res[0], np.ndarray):
            np.testing.assert_array_equal(res[1], res[0])
        else:
            assert res[1] is res[0]


def test_linear_splits_a_product_of_exactly_two_blocks(monkeypatch):
    """_linear_split.py:57 [compare] ``m * n * k >= 2 * BLOCK_MNK`` -> ``>``: a product of
    exactly two blocks (128 x 128 x 128 = 2 · 2^20) is split under
    TAPEGRAD_INTRA_OP=step, each row block at the least size; one more row short is not
    (the same values either way, so the path is checked)."""
    from tapegrad.nn import _linear_split

    monkeypatch.setattr(_linear_split, "STEP", [True])
    assert _linear_split.BLOCK_MNK == 1 << 20
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((128, 128)), rng.standard_normal((128, 128))
    out = _linear_split.forward(x, w, None)
    assert out is not None
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-12, atol=1e-12)
    assert _linear_split.forward(x[:127].copy(), w, None) is None


def test_embedding_bag_draws_its_weight_from_a_normal_with_a_zero_padding_row(torch_mod):
    """layers_ext.py:136 [drop] ``self.reset_parameters()``: EmbeddingBag's weight is
    init.normal_'s draw (the same draw under the same seed, as torch's), padding row 0."""
    for lib in (torch_mod, tg):
        lib.manual_seed(0)
        w = lib.nn.EmbeddingBag(50, 8, padding_idx=1).weight.detach()
        lib.manual_seed(0)
        want = lib.nn.init.normal_(lib.empty(50, 8))
        want[1] = 0
        assert bool((w == want).all())
        assert 0.8 < float(w.std()) < 1.2


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_spatial_mean_of_a_channels_last_half_batch_matches_torch(torch_mod, dtype):
    """_spatial_mean.py:34 [boolop] ``... not in _FLOATS or not data.size`` -> ``and``: the
    GEMV kernel is for float32/float64 only; a channels-last float16 batch keeps NumPy's
    mean (the half GEMV rounded differently from torch)."""
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((2, 6, 7, 3)) * 30 + 50).astype(np.float32)  # N, H, W, C
    outs = []
    for lib in (torch_mod, tg):
        x = lib.tensor(a).to(getattr(lib, dtype)).permute(0, 3, 1, 2)  # channels-last
        outs.append(x.mean(dim=(2, 3)).to(lib.float64).numpy())
    np.testing.assert_array_equal(outs[1], outs[0])


def test_fresh_grad_outside_a_backward_is_a_plain_tensor():
    """graph.py:351 [compare] ``owned is not None`` -> ``(owned is None)``: outside a
    backward (a rule called directly) there is no ``owned`` dict to register in."""
    from tapegrad.autograd import graph

    assert graph.OWNED.current is None
    t = graph.fresh_grad(np.array([1.0, 2.0]))
    assert isinstance(t, tg.Tensor)
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
