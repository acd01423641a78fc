"""The losses and distances of issue 11 against torch 2.13: values and every input gradient
(float64), each reduction, plus gradgradcheck on a sample (they are composed ops, so
second derivatives come for free and must hold)."""

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import gradcheck, gradgradcheck

R = np.random.default_rng(11)


def _u(*shape, lo=-2.0, hi=2.0):
    return R.uniform(lo, hi, size=shape)


def _pm1(*shape):
    return np.where(R.random(shape) < 0.5, -1.0, 1.0)


def _ints(high, *shape):
    return R.integers(0, high, size=shape).astype(np.int64)


# (id, fn(F, m, *tensors), inputs, which inputs are differentiable)
CASES = []


def case(name, fn, inputs, grads):
    CASES.append((name, fn, inputs, grads))


for red in ("none", "mean", "sum"):
    case(
        f"bce-{red}",
        lambda F, m, x, t, red=red: F.binary_cross_entropy(x, t, reduction=red),
        [_u(4, 3, lo=0.05, hi=0.95), _u(4, 3, lo=0, hi=1)],
        [True, True],
    )
    case(
        f"bce-weight-{red}",
        lambda F, m, x, t, w, red=red: F.binary_cross_entropy(x, t, w, reduction=red),
        [_u(4, 3, lo=0.05, hi=0.95), _u(4, 3, lo=0, hi=1), _u(3, lo=0.5, hi=2)],
        [True, True, False],
    )
    case(
        f"bcelogits-posweight-{red}",
        lambda F, m, x, t, pw, red=red: F.binary_cross_entropy_with_logits(
            x, t, reduction=red, pos_weight=pw
        ),
        [_u(4, 3), _u(4, 3, lo=0, hi=1), _u(3, lo=0.5, hi=3)],
        [True, True, False],
    )
    for lt in (False, True):
        case(
            f"kl-{red}-logt{lt}",
            lambda F, m, x, t, red=red, lt=lt: F.kl_div(x, t, reduction=red, log_target=lt),
            [_u(4, 5, lo=-3, hi=0), _u(4, 5, lo=-3, hi=0) if lt else _u(4, 5, lo=0.01, hi=1)],
            [True, True],
        )
    for beta in (1.0, 0.5, 0.0):
        case(
            f"smoothl1-{red}-beta{beta}",
            lambda F, m, x, t, red=red, beta=beta: F.smooth_l1_loss(x, t, reduction=red, beta=beta),
            [_u(6, 3), _u(6, 3)],
            [True, True],
        )
    for delta in (1.0, 0.3):
        case(
            f"huber-{red}-delta{delta}",
            lambda F, m, x, t, red=red, delta=delta: F.huber_loss(x, t, reduction=red, delta=delta),
            [_u(6, 3), _u(6, 3)],
            [True, True],
        )
    case(
        f"huber-weight-{red}",
        lambda F, m, x, t, w, red=red: F.huber_loss(x, t, reduction=red, weight=w),
        [_u(6, 3), _u(6, 3), _u(6, 3, lo=0, hi=1)],
        [True, True, True],
    )
    case(
        f"l1-{red}",
        lambda F, m, x, t, red=red: F.l1_loss(x, t, reduction=red),
        [_u(5), _u(5)],
        [True, True],
    )
    for log_input in (True, False):
        for full in (False, True):
            case(
                f"poisson-{red}-log{log_input}-full{full}",
                lambda F, m, x, t, red=red, li=log_input, full=full: F.poisson_nll_loss(
                    x, t, log_input=li, full=full, reduction=red
                ),
                [_u(4, 3, lo=0.1, hi=2), _u(4, 3, lo=0, hi=4)],
                [True, True],
            )
    for full in (False, True):
        case(
            f"gaussian-{red}-full{full}",
            lambda F, m, x, t, v, red=red, full=full: F.gaussian_nll_loss(
                x, t, v, full=full, reduction=red
            ),
            [_u(4, 3), _u(4, 3), _u(4, 3, lo=0.1, hi=2)],
            [True, True, True],
        )
    case(
        f"gaussian-homoscedastic-{red}",
        lambda F, m, x, t, v, red=red: F.gaussian_nll_loss(x, t, v, reduction=red),
        [_u(4, 3), _u(4, 3), _u(4, lo=0.1, hi=2)],
        [True, True, True],
    )
    case(
        f"gaussian-size1-{red}",
        lambda F, m, x, t, v, red=red: F.gaussian_nll_loss(x, t, v, reduction=red),
        [_u(4, 3), _u(4, 3), _u(4, 1, lo=0.1, hi=2)],
        [True, True, True],
    )
    case(
        f"softmargin-{red}",
        lambda F, m, x, t, red=red: F.soft_margin_loss(x, t, reduction=red),
        [_u(4, 3), _pm1(4, 3)],
        [True, False],
    )
    case(
        f"multilabelsoftmargin-{red}",
        lambda F, m, x, t, w, red=red: F.multilabel_soft_margin_loss(x, t, w, reduction=red),
        [_u(4, 5), _u(4, 5, lo=0, hi=1).round(), _u(5, lo=0.5, hi=2)],
        [True, True, True],
    )
    case(
        f"marginranking-{red}",
        lambda F, m, a, b, t, red=red: F.margin_ranking_loss(a, b, t, margin=0.3, reduction=red),
        [_u(7), _u(7), _pm1(7)],
        [True, True, False],
    )
    case(
        f"hinge-{red}",
        lambda F, m, x, t, red=red: F.hinge_embedding_loss(x, t, margin=1.5, reduction=red),
        [_u(7), _pm1(7)],
        [True, False],
    )
    case(
        f"cosineembedding-{red}",
        lambda F, m, a, b, t, red=red: F.cosine_embedding_loss(a, b, t, margin=0.2, reduction=red),
        [_u(6, 4), _u(6, 4), _pm1(6)],
        [True, True, False],
    )
    for p, swap in ((2, False), (1, True), (3, False)):
        case(
            f"triplet-{red}-p{p}-swap{swap}",
            lambda F, m, a, b, c, red=red, p=p, swap=swap: F.triplet_margin_loss(
                a, b, c, margin=2.0, p=p, swap=swap, reduction=red
            ),
            [_u(5, 4), _u(5, 4), _u(5, 4)],
            [True, True, True],
        )
    for p, marg in ((1, 1.0), (2, 0.7)):
        case(
            f"multimargin-{red}-p{p}",
            lambda F, m, x, t, red=red, p=p, marg=marg: F.multi_margin_loss(
                x, t, p=p, margin=marg, reduction=red
            ),
            [_u(6, 4), _ints(4, 6)],
            [True, False],
        )
    case(
        f"multimargin-weight-{red}",
        lambda F, m, x, t, w, red=red: F.multi_margin_loss(x, t, weight=w, reduction=red),
        [_u(6, 4), _ints(4, 6), _u(4, lo=0.5, hi=2)],
        [True, False, False],
    )
    case(
        f"multilabelmargin-{red}",
        lambda F, m, x, t, red=red: F.multilabel_margin_loss(x, t, reduction=red),
        [_u(3, 5), np.array([[3, 0, -1, 1, 2], [1, 1, 4, 0, -1], [-1, 2, 3, 1, 0]])],
        [True, False],
    )

case(
    "kl-batchmean",
    lambda F, m, x, t: F.kl_div(x, t, reduction="batchmean"),
    [_u(4, 5, lo=-3, hi=0), np.abs(_u(4, 5)) * (R.random((4, 5)) > 0.3)],
    [True, False],
)
case(
    "multimargin-1d",
    lambda F, m, x, t: F.multi_margin_loss(x, t),
    [_u(5), np.array(2)],
    [True, False],
)
case(
    "multilabelmargin-1d",
    lambda F, m, x, t: F.multilabel_margin_loss(x, t),
    [_u(4), np.array([2, 0, -1, 3])],
    [True, False],
)
case(
    "cosineembedding-1d",
    lambda F, m, a, b, t: F.cosine_embedding_loss(a, b, t),
    [_u(4), _u(4), np.array(-1.0)],
    [True, True, False],
)
case(
    "triplet-distance-fn",
    lambda F, m, a, b, c: F.triplet_margin_with_distance_loss(
        a, b, c, distance_function=lambda x, y: 1.0 - F.cosine_similarity(x, y), swap=True
    ),
    [_u(5, 4), _u(5, 4), _u(5, 4)],
    [True, True, True],
)
case("normalize", lambda F, m, x: F.normalize(x), [_u(3, 4)], [True])
case("normalize-p1-dim0", lambda F, m, x: F.normalize(x, p=1.0, dim=0), [_u(3, 4)], [True])
case(
    "normalize-zero-row",
    lambda F, m, x: F.normalize(x, dim=-1),
    [np.vstack([_u(4), np.zeros(4)])],
    [True],
)
case(
    "cosine-similarity",
    lambda F, m, a, b: F.cosine_similarity(a, b),
    [_u(3, 4, 2), _u(3, 4, 2)],
    [True, True],
)
case(
    "cosine-similarity-broadcast",
    lambda F, m, a, b: F.cosine_similarity(a, b, dim=-1),
    [_u(3, 4), _u(1, 4)],
    [True, True],
)
case(
    "cosine-similarity-zero",
    lambda F, m, a, b: F.cosine_similarity(a, b, dim=0),
    [np.zeros(3), _u(3)],
    [True, True],
)
for p in (2.0, 1.0, 3.0, float("inf")):
    case(
        f"pairwise-p{p}",
        lambda F, m, a, b, p=p: F.pairwise_distance(a, b, p=p),
        [_u(5, 3), _u(5, 3)],
        [True, True],
    )
case(
    "pairwise-keepdim",
    lambda F, m, a, b: F.pairwise_distance(a, b, keepdim=True),
    [_u(5, 3), _u(3)],
    [True, True],
)
for p in (2.0, 1.0, 3.0):
    case(f"pdist-p{p}", lambda F, m, x, p=p: F.pdist(x, p=p), [_u(5, 3)], [True])


for red in ("none", "mean", "sum"):
    for ls in (0.0, 0.2):
        case(
            f"ce-probtarget-grad-{red}-ls{ls}",
            lambda F, m, x, t, w, red=red, ls=ls: F.cross_entropy(
                x, t.softmax(1), w, reduction=red, label_smoothing=ls
            ),
            [_u(4, 3, 2), _u(4, 3, 2), _u(3, lo=0.5, hi=2)],
            [True, True, False],
        )
    case(
        f"nll-weight-ignore-4d-{red}",
        lambda F, m, x, t, w, red=red: F.nll_loss(x, t, w, ignore_index=1, reduction=red),
        [_u(3, 4, 2, 2), _ints(4, 3, 2, 2), _u(4, lo=0.5, hi=2)],
        [True, False, False],
    )


def _run(m, fn, arrays, grads):
    F = m.nn.functional
    ts = []
    for a, g in zip(arrays, grads, strict=True):
        a = np.asarray(a)
        t = m.tensor(a, dtype=m.float64) if a.dtype.kind == "f" else m.tensor(a)
        if g:
            t.requires_grad_(True)
        ts.append(t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(F, m, *ts)
    return out, ts


@pytest.mark.parametrize(("name", "fn", "arrays", "grads"), CASES, ids=[c[0] for c in CASES])
def test_matches_torch(torch_mod, name, fn, arrays, grads):
    out, ts = _run(tg, fn, arrays, grads)
    ref, rs = _run(torch_mod, fn, arrays, grads)
    assert tuple(out.shape) == tuple(ref.shape)
    assert str(out.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    gy = R.standard_normal(tuple(ref.shape))
    out.backward(tg.tensor(gy))
    ref.backward(torch_mod.tensor(gy))
    for i, (t, r) in enumerate(zip(ts, rs, strict=True)):
        if grads[i]:
            assert t.grad is not None, f"input {i} got no gradient"
            np.testing.assert_allclose(
                t.grad.numpy(), r.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=f"grad of input {i}"
            )


GRADGRAD = [
    c
    for c in CASES
    if c[0].endswith("-sum")
    and not c[0].startswith(("multimargin", "marginranking", "hinge", "multilabelmargin"))
] + [c for c in CASES if c[0] in ("normalize", "cosine-similarity", "pdist-p2.0", "kl-batchmean")]


@pytest.mark.parametrize(("name", "fn", "arrays", "grads"), GRADGRAD, ids=[c[0] for c in GRADGRAD])
def test_gradgradcheck(name, fn, arrays, grads):
    _, ts = _run(tg, fn, arrays, grads)
    diff = [t for t, g in zip(ts, grads, strict=True) if g]
    others = {i: t for i, (t, g) in enumerate(zip(ts, grads, strict=True)) if not g}

    def f(*xs):
        it = iter(xs)
        args = [others[i] if i in others else next(it) for i in range(len(ts))]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(tg.nn.functional, tg, *args)

    assert gradcheck(f, diff, eps=1e-6, atol=1e-5, rtol=1e-4)
    assert gradgradcheck(f, diff, eps=1e-6, atol=1e-5, rtol=1e-4)


MODULE_CASES = [
    ("BCELoss", dict(), [_u(4, 3, lo=0.05, hi=0.95), _u(4, 3, lo=0, hi=1)]),
    (
        "BCELoss",
        dict(weight=_u(3, lo=0.5, hi=2), reduction="sum"),
        [_u(4, 3, lo=0.1, hi=0.9), _u(4, 3, lo=0, hi=1)],
    ),
    (
        "KLDivLoss",
        dict(reduction="batchmean", log_target=True),
        [_u(4, 5, lo=-3, hi=0), _u(4, 5, lo=-3, hi=0)],
    ),
    ("SmoothL1Loss", dict(beta=0.5, size_average=False), [_u(6), _u(6)]),
    ("HuberLoss", dict(delta=0.5, reduction="none"), [_u(6), _u(6)]),
    ("PoissonNLLLoss", dict(log_input=False, full=True), [_u(6, lo=0.1, hi=3), _u(6, lo=0, hi=4)]),
    ("GaussianNLLLoss", dict(full=True), [_u(4, 2), _u(4, 2), _u(4, 1, lo=0.1, hi=2)]),
    ("SoftMarginLoss", dict(reduce=False), [_u(6), _pm1(6)]),
    (
        "MultiLabelSoftMarginLoss",
        dict(weight=_u(5, lo=0.5, hi=2)),
        [_u(3, 5), _u(3, 5, lo=0, hi=1).round()],
    ),
    ("MarginRankingLoss", dict(margin=0.5), [_u(5), _u(5), _pm1(5)]),
    ("HingeEmbeddingLoss", dict(margin=2.0), [_u(5), _pm1(5)]),
    ("CosineEmbeddingLoss", dict(margin=-0.5), [_u(5, 3), _u(5, 3), _pm1(5)]),
    ("TripletMarginLoss", dict(p=1.0, swap=True), [_u(5, 3), _u(5, 3), _u(5, 3)]),
    ("TripletMarginWithDistanceLoss", dict(margin=0.5), [_u(5, 3), _u(5, 3), _u(5, 3)]),
    ("MultiMarginLoss", dict(p=2, weight=_u(4, lo=0.5, hi=2)), [_u(5, 4), _ints(4, 5)]),
    ("MultiLabelMarginLoss", dict(), [_u(2, 4), np.array([[3, -1, 0, 0], [0, 1, 2, 3]])]),
]


@pytest.mark.parametrize(
    ("name", "kwargs", "arrays"), MODULE_CASES, ids=[c[0] for c in MODULE_CASES]
)
def test_loss_modules_match_torch(torch_mod, name, kwargs, arrays):
    def make(m):
        kw = {k: m.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return getattr(m.nn, name)(**kw)

    ours, theirs = make(tg), make(torch_mod)
    assert ours.reduction == theirs.reduction
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    grads = [True] + [False] * (len(arrays) - 1)
    out, ts = _run(tg, lambda F, m, *xs: ours(*xs), arrays, grads)
    ref, rs = _run(torch_mod, lambda F, m, *xs: theirs(*xs), arrays, grads)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(ts[0].grad.numpy(), rs[0].grad.numpy(), rtol=1e-9, atol=1e-12)


def test_loss_errors():
    F = tg.nn.functional
    x = tg.tensor([[0.2, 0.7]])
    with pytest.raises(ValueError, match="target size"):
        F.binary_cross_entropy(x, tg.tensor([1.0, 0.0]))
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(tg.tensor([1.5]), tg.tensor([1.0]))
    with pytest.raises(ValueError, match="not a valid value"):
        F.kl_div(x, x, reduction="avg")
    with pytest.raises(ValueError, match="var has negative"):
        F.gaussian_nll_loss(x, x, tg.tensor([[-1.0, 1.0]]))
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(tg.zeros(4, 3), tg.zeros(4, 3), tg.ones(2))
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        F.multi_margin_loss(x, tg.tensor([1]), p=3)
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x, tg.tensor([2]))
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        F.triplet_margin_loss(x, x, x, margin=0.0)
    with pytest.raises(RuntimeError, match="pdist only supports 2D"):
        F.pdist(tg.zeros(3))


def test_bce_log_clamp_keeps_loss_and_gradient_finite(torch_mod):
    """At x = 0 or 1 the loss is finite (logs clamped at -100) and so is the input
    gradient, torch's (x - t) / max(x (1 - x), 1e-12) (a regression: it was NaN)."""
    x = np.array([0.0, 1.0, 0.5, 0.0, 1.0])
    t = np.array([1.0, 0.0, 1.0, 0.0, 1.0])
    xo = tg.tensor(x, requires_grad=True)
    xt = torch_mod.tensor(x, requires_grad=True)
    ours = tg.nn.functional.binary_cross_entropy(xo, tg.tensor(t), reduction="none")
    ref = torch_mod.nn.functional.binary_cross_entropy(xt, torch_mod.tensor(t), reduction="none")
    np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy())
    ours.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy())
    assert np.isfinite(xo.grad.numpy()).all()


def test_torch_positional_signatures_and_legacy_flags(torch_mod):
    """Positional arguments follow torch's order (size_average/reduce included)."""
    x = R.standard_normal((4, 3))
    t = np.array([0, 2, 1, 2])
    w = R.uniform(0.5, 2, 3)
    y = R.standard_normal((4, 3))
    ew = R.uniform(0.5, 2, (4, 3))

    def run(m):
        F = m.nn.functional
        X, T, W, Y, EW = (m.tensor(a) for a in (x, t, w, y, ew))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return [
                F.cross_entropy(X, T, W, None, 1, None, "sum", 0.1),
                F.cross_entropy(X, T, None, False),
                F.nll_loss(X, T, W, None, 2, False),
                F.mse_loss(X, Y, None, None, "mean", EW),
                F.l1_loss(X, Y, reduction="sum", weight=EW),
                F.l1_loss(X, Y, False, True),
                F.binary_cross_entropy_with_logits(X, Y.sigmoid(), None, None, False),
                m.nn.CrossEntropyLoss(W, None, 0, None, "none")(X, T),
                m.nn.NLLLoss(None, False)(X, T),
                m.nn.MSELoss(None, False)(X, Y),
                m.nn.BCEWithLogitsLoss(None, True, False)(X, Y.sigmoid()),
            ]

    for i, (a, b) in enumerate(zip(run(tg), run(torch_mod), strict=True)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, err_msg=f"call {i}")


JIT_LOSSES = {
    "bce": lambda F, o, y: F.binary_cross_entropy(o.sigmoid(), y.sigmoid()),
    "kl": lambda F, o, y: F.kl_div(o.log_softmax(1), y.softmax(1), reduction="batchmean"),
    "smooth_l1": lambda F, o, y: F.smooth_l1_loss(o, y, beta=0.5),
    "huber": lambda F, o, y: F.huber_loss(o, y, delta=0.5),
    "gaussian": lambda F, o, y: F.gaussian_nll_loss(o, y, o.detach().abs() + 0.1),
    "hinge": lambda F, o, y: F.hinge_embedding_loss(o, (y > 0).float() * 2 - 1),
    "triplet": lambda F, o, y: F.triplet_margin_loss(o, y, y * 0.5, swap=True),
    "ce_probabilities": lambda F, o, y: F.cross_entropy(o, y.softmax(1)),
}


@pytest.mark.parametrize("name", sorted(JIT_LOSSES))
def test_losses_replay_under_jit_cache(name):
    """A training step with the loss records once and replays (no value read into Python,
    no value branch), giving eager's losses."""
    loss_fn = JIT_LOSSES[name]

    def make():
        tg.manual_seed(0)
        lin = tg.nn.Linear(3, 3)
        opt = tg.optim.SGD(lin.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = loss_fn(tg.nn.functional, lin(x), y)
            loss.backward()
            opt.step()
            return loss

        return step

    cached, eager = tg.jit.cache(make()), make()
    data = [(tg.tensor(_u(4, 3)).float(), tg.tensor(_u(4, 3)).float()) for _ in range(5)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [cached(x, y).item() for x, y in data]
    np.testing.assert_allclose(got, [eager(x, y).item() for x, y in data], rtol=1e-5)
    assert cached.cache_info().hits == 2
