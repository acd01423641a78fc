"""nn.utils: fuse_conv_bn_eval/weights, fuse_linear_bn_eval/weights, skip_init,
clip_grad_norm (deprecated) and stateless.functional_call, against torch."""

import numpy as np
import pytest

import tapegrad as tg


def _pair(torch, make, seed=0):
    """The same module in both libraries with torch's weights, and random BN statistics."""
    theirs = make(torch.nn)
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for b in theirs.buffers():
            if b.dtype.is_floating_point:
                b.copy_(torch.tensor(rng.random(tuple(b.shape)) + 0.5))
        for p in theirs.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape))))
    ours = make(tg.nn)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours.eval(), theirs.eval()


CONVS = [
    ("conv2d", lambda nn: nn.Conv2d(3, 4, 3), lambda nn: nn.BatchNorm2d(4), (2, 3, 6, 6), False),
    (
        "conv1d",
        lambda nn: nn.Conv1d(3, 4, 2, bias=False),
        lambda nn: nn.BatchNorm1d(4),
        (2, 3, 7),
        False,
    ),
    (
        "convT2d",
        lambda nn: nn.ConvTranspose2d(3, 4, 2),
        lambda nn: nn.BatchNorm2d(4, affine=False),
        (2, 3, 4, 4),
        True,
    ),
]  # fmt: skip


@pytest.mark.parametrize("name, conv, bn, shape, transpose", CONVS, ids=[c[0] for c in CONVS])
def test_fuse_conv_bn_eval(torch_mod, name, conv, bn, shape, transpose):
    oc, tc = _pair(torch_mod, conv, 1)
    ob, tb = _pair(torch_mod, bn, 2)
    fo = tg.nn.utils.fuse_conv_bn_eval(oc, ob, transpose=transpose)
    ft = torch_mod.nn.utils.fuse_conv_bn_eval(tc, tb, transpose=transpose)
    assert repr(fo) == repr(ft) and fo is not oc
    for k, v in ft.state_dict().items():
        np.testing.assert_allclose(fo.state_dict()[k].numpy(), v.numpy(), rtol=1e-5, atol=1e-6)
    assert type(fo.weight) is tg.nn.Parameter and fo.weight.is_leaf
    assert fo.bias.requires_grad == ft.bias.requires_grad  # False when conv had no bias
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(
        fo(tg.tensor(x)).detach().numpy(),
        ob(oc(tg.tensor(x))).detach().numpy(),
        rtol=1e-4,
        atol=1e-5,
    )


def test_fuse_linear_bn_eval(torch_mod):
    for features in (4, 1):
        ol, tl = _pair(torch_mod, lambda nn: nn.Linear(3, 4), 4)
        ob, tb = _pair(torch_mod, lambda nn, f=features: nn.BatchNorm1d(f), 5)
        fo = tg.nn.utils.fuse_linear_bn_eval(ol, ob)
        ft = torch_mod.nn.utils.fuse_linear_bn_eval(tl, tb)
        for k, v in ft.state_dict().items():
            np.testing.assert_allclose(fo.state_dict()[k].numpy(), v.numpy(), rtol=1e-5, atol=1e-6)
    for lib in (tg, torch_mod):
        with pytest.raises(AssertionError, match="linear.out_features == bn.num_features"):
            lib.nn.utils.fuse_linear_bn_eval(
                lib.nn.Linear(3, 4).eval(), lib.nn.BatchNorm1d(3).eval()
            )
        with pytest.raises(AssertionError, match="Fusion only for eval!"):
            lib.nn.utils.fuse_conv_bn_eval(lib.nn.Conv2d(3, 4, 1), lib.nn.BatchNorm2d(4).eval())


def test_fuse_weights_functions(torch_mod):
    rng = np.random.default_rng(6)
    w, b = rng.standard_normal((4, 3, 2)), rng.standard_normal(4)
    rm, rv, bw, bb = rng.standard_normal(4), rng.random(4) + 0.5, rng.random(4), rng.random(4)
    res = []
    for lib in (tg, torch_mod):
        t = [lib.tensor(a) for a in (w, b, rm, rv, bw, bb)]
        cw = lib.nn.utils.fuse_conv_bn_weights(t[0], None, t[2], t[3], 1e-3, None, t[5])
        lw = lib.nn.utils.fuse_linear_bn_weights(t[0][:, :, 0], t[1], t[2], t[3], 1e-3, t[4], t[5])
        res.append([a.detach().numpy() for a in cw + lw] + [a.requires_grad for a in cw + lw])
    for a, b_ in zip(*res, strict=True):
        np.testing.assert_allclose(a, b_, rtol=1e-12)


def test_skip_init(torch_mod):
    tg.manual_seed(5)
    m = tg.nn.utils.skip_init(tg.nn.Linear, 5, 2, bias=False)
    after = tg.randn(3).numpy()
    tg.manual_seed(5)
    np.testing.assert_array_equal(after, tg.randn(3).numpy())  # no random numbers drawn
    assert type(m) is tg.nn.Linear and tuple(m.weight.shape) == (2, 5) and m.bias is None
    m2 = tg.nn.utils.skip_init(tg.nn.Linear, in_features=6, out_features=1, device="cpu")
    assert tuple(m2.weight.shape) == (1, 6)
    for lib in (tg, torch_mod):
        with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
            lib.nn.utils.skip_init(lib.nn.ReLU)
        with pytest.raises(RuntimeError, match="Expected a Module; got"):
            lib.nn.utils.skip_init(int)


def test_clip_grad_norm_deprecated(torch_mod):
    norms = []
    for lib in (tg, torch_mod):
        p = lib.nn.Parameter(lib.tensor([3.0, 4.0]))
        p.grad = lib.tensor([3.0, 4.0])
        with pytest.warns(FutureWarning, match="clip_grad_norm` is now deprecated in favor of"):
            norms.append(lib.nn.utils.clip_grad_norm(p, 1.0).item())
        np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-5)
    assert norms[0] == norms[1]


def test_stateless_functional_call(torch_mod):
    x = np.random.default_rng(7).standard_normal((2, 3)).astype(np.float32)
    w = np.random.default_rng(8).standard_normal((2, 3)).astype(np.float32)
    outs = []
    for lib in (tg, torch_mod):
        m = lib.nn.Linear(3, 2)
        with pytest.warns(FutureWarning, match="stateless.functional_call` is deprecated"):
            out = lib.nn.utils.stateless.functional_call(
                m, {"weight": lib.tensor(w), "bias": lib.zeros(2)}, (lib.tensor(x),)
            )
        outs.append(out.detach().numpy())
        assert m.weight.detach().numpy().tolist() != w.tolist()  # the module is unchanged
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6)
