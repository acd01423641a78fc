"""Losses against PyTorch (values and input gradients) and float64 gradchecks."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F
from tapegrad.autograd import gradcheck, gradgradcheck

rng = np.random.default_rng(1)


def _both(torch, fn_ours, fn_theirs, x, *args_np, atol=1e-10):
    """Loss and d(loss)/dx in both libraries (non-scalar losses get random upstream grads)."""
    xo = tg.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    conv_o = [tg.tensor(a) if isinstance(a, np.ndarray) else a for a in args_np]
    conv_t = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args_np]
    out, ref = fn_ours(xo, *conv_o), fn_theirs(xt, *conv_t)
    np.testing.assert_allclose(out._data, ref.detach().numpy(), atol=atol, rtol=atol)
    gy = rng.standard_normal(ref.shape)
    out.backward(tg.tensor(gy, dtype=out.dtype))
    ref.backward(torch.tensor(gy, dtype=ref.dtype))
    np.testing.assert_allclose(xo.grad._data, xt.grad.numpy(), atol=atol, rtol=atol)


CE_CASES = [
    {},
    {"reduction": "sum"},
    {"reduction": "none"},
    {"ignore_index": 2},
    {"label_smoothing": 0.2},
    {"weight": True},
    {"weight": True, "label_smoothing": 0.1, "ignore_index": 1},
    {"weight": True, "reduction": "none", "ignore_index": 0},
]


@pytest.mark.parametrize("kwargs", CE_CASES, ids=[str(k) for k in CE_CASES])
@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 2), (4,)])
def test_cross_entropy_class_indices(kwargs, shape, torch_mod):
    kwargs = dict(kwargs)
    x = rng.standard_normal(shape) * 3
    t = rng.integers(0, 4, size=shape[:1] + shape[2:] if len(shape) > 1 else ())
    t = np.asarray(t)
    if len(shape) > 1:
        t.flat[0] = 2  # make sure ignore_index hits at least one sample
    w = rng.uniform(0.5, 2.0, 4)
    tw = torch_mod.tensor(w) if kwargs.pop("weight", False) else None
    ow = tg.tensor(w) if tw is not None else None
    _both(
        torch_mod,
        lambda x, t: tg.nn.CrossEntropyLoss(weight=ow, **kwargs)(x, t),
        lambda x, t: torch_mod.nn.CrossEntropyLoss(weight=tw, **kwargs)(x, t),
        x,
        t,
    )


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"reduction": "none"}, {"label_smoothing": 0.3}, {"weight": True, "reduction": "sum"}],
)
def test_cross_entropy_probabilities(kwargs, torch_mod):
    kwargs = dict(kwargs)
    x = rng.standard_normal((5, 3, 2))
    p = rng.uniform(size=(5, 3, 2))
    p /= p.sum(axis=1, keepdims=True)
    w = rng.uniform(0.5, 2.0, 3)
    tw = torch_mod.tensor(w) if kwargs.pop("weight", False) else None
    ow = tg.tensor(w) if tw is not None else None
    _both(
        torch_mod,
        lambda x, p: F.cross_entropy(x, p, ow, **kwargs),
        lambda x, p: torch_mod.nn.functional.cross_entropy(x, p, tw, **kwargs),
        x,
        p,
    )


def test_cross_entropy_float32_large_logits(torch_mod):
    x = (rng.standard_normal((6, 5)) * 200).astype(np.float32)
    t = rng.integers(0, 5, 6)
    _both(torch_mod, F.cross_entropy, torch_mod.nn.functional.cross_entropy, x, t, atol=1e-4)
    assert F.cross_entropy(tg.tensor(x), tg.tensor(t)).dtype == tg.float32


def test_cross_entropy_gradchecks():
    x = tg.randn(4, 3, dtype=tg.float64, requires_grad=True)
    t = tg.tensor([0, 2, 1, 2])
    p = tg.tensor(rng.dirichlet(np.ones(3), size=4))
    w = tg.tensor([1.0, 2.0, 0.5], dtype=tg.float64)
    for fn in (
        lambda x: F.cross_entropy(x, t, w, label_smoothing=0.1, ignore_index=1),
        lambda x: F.cross_entropy(x, p, reduction="none"),
        lambda x: F.nll_loss(F.log_softmax(x, 1), t, w),
    ):
        assert gradcheck(fn, (x,), atol=1e-6, rtol=1e-5)
        assert gradgradcheck(fn, (x,), atol=1e-6, rtol=1e-5)


def test_cross_entropy_errors():
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(tg.randn(2, 3), tg.tensor([0, 3]))
    with pytest.raises(ValueError, match="doesn't match"):
        F.cross_entropy(tg.randn(2, 3), tg.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="not a valid value"):
        F.cross_entropy(tg.randn(2, 3), tg.tensor([0, 1]), reduction="avg")


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"reduction": "none"}, {"reduction": "sum"}, {"ignore_index": 1}, {"weight": True}],
)
def test_nll_loss(kwargs, torch_mod):
    kwargs = dict(kwargs)
    x = rng.standard_normal((6, 4, 2))
    t = rng.integers(0, 4, (6, 2))
    w = rng.uniform(0.5, 2.0, 4)
    tw = torch_mod.tensor(w) if kwargs.pop("weight", False) else None
    ow = tg.tensor(w) if tw is not None else None
    _both(
        torch_mod,
        lambda x, t: tg.nn.NLLLoss(ow, **kwargs)(x, t),
        lambda x, t: torch_mod.nn.NLLLoss(tw, **kwargs)(x, t),
        x,
        t,
    )


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"reduction": "none"}, {"reduction": "sum"}, {"pos_weight": True}, {"weight": True}],
)
def test_bce_with_logits(kwargs, torch_mod):
    kwargs = dict(kwargs)
    x = rng.standard_normal((5, 3)) * 4
    y = rng.uniform(size=(5, 3))
    extra_o, extra_t = {}, {}
    for name in ("pos_weight", "weight"):
        if kwargs.pop(name, False):
            v = rng.uniform(0.5, 3.0, 3)
            extra_o[name], extra_t[name] = tg.tensor(v), torch_mod.tensor(v)
    _both(
        torch_mod,
        lambda x, y: tg.nn.BCEWithLogitsLoss(**kwargs, **extra_o)(x, y),
        lambda x, y: torch_mod.nn.BCEWithLogitsLoss(**kwargs, **extra_t)(x, y),
        x,
        y,
    )


def test_bce_with_logits_stable_and_differentiable(torch_mod):
    x = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0], dtype=np.float32)
    y = np.array([1.0, 0.0, 0.5, 1.0, 0.0], dtype=np.float32)
    _both(
        torch_mod,
        lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="none"),
        lambda x, y: torch_mod.nn.functional.binary_cross_entropy_with_logits(
            x, y, reduction="none"
        ),
        x,
        y,
        atol=1e-5,
    )
    xs = tg.randn(2, 3, dtype=tg.float64, requires_grad=True)
    ys = tg.tensor(rng.uniform(size=(2, 3)), requires_grad=True)
    pw = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64)
    for fn in (
        lambda x, y: F.binary_cross_entropy_with_logits(x, y),
        lambda x, y: F.binary_cross_entropy_with_logits(x, y, pos_weight=pw),
    ):
        assert gradcheck(fn, (xs, ys), atol=1e-6, rtol=1e-5)
        assert gradgradcheck(fn, (xs, ys), atol=1e-6, rtol=1e-5)
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(tg.randn(2, 3), tg.randn(3, 2))


@pytest.mark.parametrize("name", ["MSELoss", "L1Loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_losses(name, reduction, torch_mod):
    x = rng.standard_normal((4, 3))
    y = rng.standard_normal((4, 3))
    _both(
        torch_mod,
        lambda x, y: getattr(tg.nn, name)(reduction=reduction)(x, y),
        lambda x, y: getattr(torch_mod.nn, name)(reduction=reduction)(x, y),
        x,
        y,
    )
    xs = tg.tensor(x, requires_grad=True)
    ys = tg.tensor(y, requires_grad=True)
    assert gradcheck(
        lambda x, y: getattr(F, name.lower()[:-4] + "_loss")(x, y, reduction),
        (xs, ys),
        atol=1e-6,
        rtol=1e-5,
    )


def test_bce_with_logits_checks_reduction_before_shapes(torch_mod):
    # As torch: a bad reduction is reported first, even when the shapes differ too.
    def message(m):
        with pytest.raises(ValueError) as info:
            m.nn.functional.binary_cross_entropy_with_logits(
                m.zeros(2), m.zeros(3), reduction="bad"
            )
        return str(info.value)

    assert message(tg) == message(torch_mod) == "bad is not a valid value for reduction"


def test_gaussian_nll_loss_names_itself_for_a_bad_reduction(torch_mod):
    args = (tg.zeros(2), tg.zeros(2), tg.ones(2))
    targs = (torch_mod.zeros(2), torch_mod.zeros(2), torch_mod.ones(2))
    with pytest.raises(ValueError, match="bad is not valid"):
        torch_mod.nn.functional.gaussian_nll_loss(*targs, reduction="bad")
    with pytest.raises(ValueError, match="^gaussian_nll_loss: bad is not a valid value"):
        tg.nn.functional.gaussian_nll_loss(*args, reduction="bad")
