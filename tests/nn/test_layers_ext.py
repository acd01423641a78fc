"""GroupNorm … EmbeddingBag against torch with identical weights."""

import numpy as np
import pytest

import tapegrad as tg

from ._compare import compare_module

rng = np.random.default_rng(0)

CASES = [
    # (class name, args, kwargs, input shape, train)
    ("GroupNorm", (2, 4), {}, (3, 4, 5), True),
    ("GroupNorm", (1, 6), {"affine": False, "eps": 1e-3}, (2, 6, 3, 2), True),
    ("InstanceNorm1d", (3,), {}, (2, 3, 5), True),
    ("InstanceNorm1d", (3,), {"affine": True}, (3, 5), True),
    ("InstanceNorm2d", (3,), {"affine": True, "track_running_stats": True}, (2, 3, 4, 4), True),
    ("InstanceNorm2d", (3,), {"track_running_stats": True}, (2, 3, 4, 4), False),
    ("InstanceNorm3d", (2,), {}, (2, 2, 3, 2, 2), True),
    ("RMSNorm", (5,), {}, (3, 4, 5), True),
    ("RMSNorm", ((4, 5),), {"eps": 1e-3}, (3, 4, 5), True),
    ("RMSNorm", (5,), {"elementwise_affine": False}, (2, 5), True),
    ("LocalResponseNorm", (3,), {}, (2, 5, 4, 3), True),
    ("LocalResponseNorm", (2,), {"alpha": 0.1, "beta": 0.5, "k": 2.0}, (2, 4, 7), True),
    ("PixelShuffle", (2,), {}, (2, 8, 3, 3), True),
    ("PixelUnshuffle", (2,), {}, (2, 2, 4, 6), True),
    ("Unflatten", (1, (2, 3)), {}, (4, 6, 2), True),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_layer_matches_torch(case, torch_mod):
    name, args, kwargs, shape, train = case
    ours = getattr(tg.nn, name)(*args, **kwargs).double()
    theirs = getattr(torch_mod.nn, name)(*args, **kwargs).double()
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    compare_module(ours, theirs, torch_mod, rng.standard_normal(shape), train=train, steps=2)


def test_group_norm_float32_and_errors(torch_mod):
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    ours = tg.nn.functional.group_norm(tg.tensor(x), 2)
    ref = torch_mod.nn.functional.group_norm(torch_mod.tensor(x), 2)
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), atol=1e-5)
    assert ours.dtype == tg.float32
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        tg.nn.functional.group_norm(tg.tensor(x), 3)


def test_bilinear_matches_torch(torch_mod):
    for bias in (True, False):
        ours, theirs = tg.nn.Bilinear(3, 4, 2, bias).double(), torch_mod.nn.Bilinear(3, 4, 2, bias)
        theirs = theirs.double()
        assert repr(ours) == repr(theirs)
        ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
        a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 4))
        res = []
        for m, mod in ((tg, ours), (torch_mod, theirs)):
            x1, x2 = m.tensor(a, requires_grad=True), m.tensor(b, requires_grad=True)
            out = mod(x1, x2)
            (out**2).sum().backward()
            res.append([out.detach().numpy(), x1.grad.numpy(), x2.grad.numpy()]
                       + [p.grad.numpy() for p in mod.parameters()])  # fmt: skip
        for u, v in zip(*res):
            np.testing.assert_allclose(u, v, atol=1e-10)


@pytest.mark.parametrize(
    "mode, padding_idx, form",
    [("mean", None, "2d"), ("sum", None, "offsets"), ("max", None, "offsets"),
     ("mean", 2, "offsets"), ("sum", None, "weights"), ("mean", None, "last")],
)  # fmt: skip
def test_embedding_bag_matches_torch(mode, padding_idx, form, torch_mod):
    kw = {"mode": mode, "padding_idx": padding_idx, "include_last_offset": form == "last"}
    ours = tg.nn.EmbeddingBag(10, 3, **kw).double()
    theirs = torch_mod.nn.EmbeddingBag(10, 3, **kw).double()
    assert repr(ours) == repr(theirs)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 9, 2, 2])
    offsets = np.array([0, 4, 4, 7]) if form != "last" else np.array([0, 4, 7, 10])
    psw = rng.standard_normal(10)
    res = []
    for m, mod in ((tg, ours), (torch_mod, theirs)):
        if form == "2d":
            out = mod(m.tensor(idx.reshape(2, 5)))
        elif form == "weights":
            out = mod(m.tensor(idx), m.tensor(offsets), per_sample_weights=m.tensor(psw))
        else:
            out = mod(m.tensor(idx), m.tensor(offsets))
        (out * m.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))).sum().backward()
        res.append([out.detach().numpy(), mod.weight.grad.numpy()])
    for u, v in zip(*res):
        np.testing.assert_allclose(u, v, atol=1e-10)


@pytest.mark.parametrize(
    "kw, shape",
    [({"kernel_size": 2}, (2, 3, 4, 5)),
     ({"kernel_size": (2, 3), "dilation": (2, 1), "padding": 1, "stride": (1, 2)}, (2, 3, 6, 7)),
     ({"kernel_size": 3, "padding": 1}, (3, 4, 4))],
)  # fmt: skip
def test_unfold_fold_match_torch(kw, shape, torch_mod):
    assert repr(tg.nn.Unfold(**kw)) == repr(torch_mod.nn.Unfold(**kw))
    x = rng.standard_normal(shape)
    res = []
    for m in (tg, torch_mod):
        xt = m.tensor(x, requires_grad=True)
        cols = m.nn.functional.unfold(xt, **kw)
        back = m.nn.Fold(shape[-2:], **kw)(cols * 1.5)
        loss = (back * m.tensor(np.cos(np.arange(back.numel())).reshape(tuple(back.shape)))).sum()
        loss.backward()
        res.append([cols.detach().numpy(), back.detach().numpy(), xt.grad.numpy()])
    for u, v in zip(*res):
        np.testing.assert_allclose(u, v, atol=1e-10)
    assert repr(tg.nn.Fold(shape[-2:], **kw)) == repr(torch_mod.nn.Fold(shape[-2:], **kw))


def test_fold_errors():
    with pytest.raises(RuntimeError, match="sliding blocks"):
        tg.nn.functional.fold(tg.randn(1, 12, 5), (4, 5), 2)
    with pytest.raises(RuntimeError, match="divisible"):
        tg.nn.functional.fold(tg.randn(1, 10, 12), (4, 5), 2)
