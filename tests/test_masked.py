"""tg.masked against torch.masked: values, dtypes, shapes and gradients, including masks that
broadcast, all-masked slices, integer inputs and dtype=."""

import numpy as np
import pytest

import tapegrad as tg

REDUCTIONS = ["sum", "prod", "amax", "amin", "mean", "logsumexp", "norm", "var", "std"]
SCANS = ["cumsum", "cumprod", "softmax", "log_softmax", "softmin"]

# the last row is all masked out along dim 1, the third column along dim 0
MASK = np.array(
    [[True, False, True, True], [False, True, False, True], [False, False, False, False]]
)


def _pair(torch, x, requires_grad=True):
    t = torch.tensor(x, requires_grad=requires_grad and x.dtype.kind == "f")
    return tg.tensor(x, requires_grad=requires_grad and x.dtype.kind == "f"), t


def _check(torch, ours, ref, inputs):
    assert tuple(ours.shape) == tuple(ref.shape)
    assert str(ours.dtype).rsplit(".", 1)[-1] == str(ref.dtype).rsplit(".", 1)[-1]
    np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), rtol=1e-6, atol=1e-8)
    if not ref.requires_grad:
        assert not ours.requires_grad
        return
    w = np.random.default_rng(1).uniform(-1, 1, size=tuple(ref.shape))
    got = tg.autograd.grad((ours * tg.tensor(w)).sum(), [o for o, _ in inputs])
    want = torch.autograd.grad((ref * torch.tensor(w)).sum(), [t for _, t in inputs])
    for g, w_ in zip(got, want):
        assert g.numpy().dtype == w_.numpy().dtype
        np.testing.assert_allclose(g.numpy(), w_.numpy(), rtol=1e-6, atol=1e-8)


def _call(m, name, x, *args, **kw):
    return getattr(m.masked, name)(x, *args, **kw)


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize(
    "dim,keepdim,mask",
    [
        (1, False, MASK),
        (0, True, MASK),
        (None, False, MASK),
        ((0, 1), True, MASK[:, :1]),  # broadcast along dim 1
        (-1, False, None),
    ],
)
def test_reductions_match_torch(torch_mod, name, dim, keepdim, mask):
    x = np.random.default_rng(0).uniform(0.5, 2.0, size=(3, 4))
    ours, ref = _pair(torch_mod, x)
    kw = {"keepdim": keepdim}
    if mask is not None:
        kw_t = dict(kw, mask=torch_mod.tensor(mask))
        kw = dict(kw, mask=tg.tensor(mask))
    else:
        kw_t = kw
    args = (2.0, dim) if name == "norm" else (dim,)
    out = _call(tg, name, ours, *args, **kw)
    want = _call(torch_mod, name, ref, *args, **kw_t)
    if name in ("var", "std", "mean") and mask is not None:
        assert np.isnan(want.detach().numpy()).any() == np.isnan(out.detach().numpy()).any()
    _check(torch_mod, out, want, [(ours, ref)])


@pytest.mark.parametrize("name", SCANS + ["median", "argmax", "argmin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scans_and_picks_match_torch(torch_mod, name, dim):
    x = np.random.default_rng(2).permutation(12).reshape(3, 4) * 0.25 - 1.0  # no ties
    ours, ref = _pair(torch_mod, x)
    out = _call(tg, name, ours, dim, mask=tg.tensor(MASK))
    want = _call(torch_mod, name, ref, dim, mask=torch_mod.tensor(MASK))
    _check(torch_mod, out, want, [(ours, ref)])


@pytest.mark.parametrize(
    "name,kw",
    [
        ("sum", {}),
        ("prod", {}),
        ("amax", {}),
        ("amin", {}),
        ("argmax", {}),
        ("cumsum", {"dim": 1}),
        ("median", {"dim": 0}),
        ("sum", {"dtype": "float64"}),
        ("mean", {"dtype": "float64"}),
        ("var", {"dim": 1}),
    ],
)
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_integer_inputs(torch_mod, name, kw, dtype):
    x = np.random.default_rng(3).integers(1, 5, size=(3, 4)).astype(dtype)
    mask = MASK.copy()
    mask[2, 0] = True  # median of an int input refuses all-masked slices
    kw_t = {k: getattr(torch_mod, v) if k == "dtype" else v for k, v in kw.items()}
    kw_g = {k: getattr(tg, v) if k == "dtype" else v for k, v in kw.items()}
    ours, ref = _pair(torch_mod, x, requires_grad=False)
    out = _call(tg, name, ours, mask=tg.tensor(mask), **kw_g)
    want = _call(torch_mod, name, ref, mask=torch_mod.tensor(mask), **kw_t)
    _check(torch_mod, out, want, [])


def test_logaddexp_and_normalize(torch_mod):
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    (ta, ra), (tb, rb) = _pair(torch_mod, a), _pair(torch_mod, b)
    m2 = ~MASK
    out = tg.masked.logaddexp(ta, tb, input_mask=tg.tensor(MASK), other_mask=tg.tensor(m2))
    want = torch_mod.masked.logaddexp(
        ra, rb, input_mask=torch_mod.tensor(MASK), other_mask=torch_mod.tensor(m2)
    )
    _check(torch_mod, out, want, [(ta, ra), (tb, rb)])
    for ord_ in (2.0, 1.0, float("inf")):
        out = tg.masked.normalize(ta, ord_, 1, mask=tg.tensor(MASK))
        want = torch_mod.masked.normalize(ra, ord_, 1, mask=torch_mod.tensor(MASK))
        _check(torch_mod, out, want, [(ta, ra)])


def test_all_masked_slices_give_the_identity():
    x = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
    m = tg.tensor([[True, False], [False, False]])
    assert tg.masked.sum(x, 1, mask=m).tolist() == [1.0, 0.0]
    assert tg.masked.prod(x, 1, mask=m).tolist() == [1.0, 1.0]
    assert tg.masked.amax(x, 1, mask=m).tolist() == [1.0, float("-inf")]
    assert tg.masked.amin(x, 1, mask=m).tolist() == [1.0, float("inf")]
    assert np.isnan(tg.masked.mean(x, 1, mask=m).numpy()[1])
    assert np.isnan(tg.masked.softmax(x, 1, mask=m).numpy()[1]).all()


def test_errors():
    x = tg.ones(3, 4)
    with pytest.raises(IndexError, match="mask dimensionality"):
        tg.masked.sum(x, mask=tg.ones(2, 3, 4, dtype=tg.bool))
    with pytest.raises(IndexError, match="out of range"):
        tg.masked.sum(x, 2, mask=tg.ones(3, 4, dtype=tg.bool))
    with pytest.raises(ValueError, match="floating point"):
        tg.masked.mean(tg.ones(3, dtype=tg.int64), mask=tg.ones(3, dtype=tg.bool))
    with pytest.raises(ValueError, match="fully masked out rows"):
        tg.masked.median(tg.ones(2, 2, dtype=tg.int64), 0, mask=tg.tensor([False, True]))


@pytest.mark.parametrize("name", ["var", "std"])
def test_complex_variance_raises_instead_of_a_wrong_value(name):
    # It used to return float32 values with the imaginary parts dropped (-3.0 where the
    # variance of [1+2j, 3-1j] is 6.5): a clear error instead.
    x = tg.tensor([[1 + 2j, 3 - 1j, 0.5j]])
    mask = tg.tensor([[True, True, False]])
    with pytest.raises(NotImplementedError, match=f"masked.{name}: complex input"):
        getattr(tg.masked, name)(x, 1, mask=mask)
