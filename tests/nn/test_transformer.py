"""MultiheadAttention and the Transformer family against torch with identical weights."""

import warnings

import numpy as np
import pytest

import tapegrad as tg

rng = np.random.default_rng(0)


def _sync(ours, theirs):
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: v.detach().numpy().copy() for k, v in theirs.state_dict().items()})


def _close(a, b, what, atol=1e-10):
    np.testing.assert_allclose(a, b, atol=atol, rtol=atol, err_msg=what)


def _compare_grads(ours, theirs, xs_ours, xs_theirs):
    theirs_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        q = theirs_params[name]
        if q.grad is None:
            assert p.grad is None or np.allclose(p.grad.numpy(), 0), name
        else:
            _close(p.grad.numpy(), q.grad.numpy(), f"grad of {name}")
    for i, (a, b) in enumerate(zip(xs_ours, xs_theirs)):
        _close(a.grad.numpy(), b.grad.numpy(), f"grad of input {i}")


_KPM = np.array([[0, 0, 0, 1], [0, 0, 0, 0], [0, 1, 1, 1]], bool)
_CAUSAL = np.triu(np.full((5, 5), -np.inf), 1)

MHA_CASES = [
    # (constructor kwargs, forward kwargs, input shapes (1 = self-attention), masks)
    ({}, {}, [(5, 3, 8)], {}),
    ({"batch_first": True}, {"need_weights": False}, [(3, 5, 8)], {}),
    ({"batch_first": True}, {"average_attn_weights": False}, [(3, 5, 8), (3, 4, 8)], {}),
    ({"batch_first": True}, {}, [(3, 5, 8), (3, 4, 8), (3, 4, 8)], {}),  # key is not value
    ({"kdim": 6, "vdim": 5}, {}, [(5, 3, 8), (4, 3, 6), (4, 3, 5)], {}),
    (
        {"num_heads": 4, "add_bias_kv": True, "add_zero_attn": True},
        {},
        [(5, 3, 8), (4, 3, 8), (4, 3, 8)],
        {"key_padding_mask": _KPM, "attn_mask": rng.random((5, 4)) > 0.8},
    ),
    ({}, {"need_weights": False, "is_causal": True}, [(5, 3, 8)], {"attn_mask": _CAUSAL}),
    (
        {},
        {"need_weights": False},
        [(5, 3, 8), (4, 3, 8)],
        {"attn_mask": rng.standard_normal((6, 5, 4)), "key_padding_mask": _KPM},
    ),
    ({"bias": False}, {}, [(5, 8)], {}),
    ({"batch_first": True}, {"need_weights": False}, [(4, 8)], {"key_padding_mask": _KPM[0]}),
]


@pytest.mark.parametrize("case", MHA_CASES, ids=[str(i) for i in range(len(MHA_CASES))])
def test_multihead_attention_matches_torch(case, torch_mod):
    kw, fkw, shapes, masks = case
    kw = {"embed_dim": 8, "num_heads": 2, **kw}
    theirs = torch_mod.nn.MultiheadAttention(**kw).double()
    ours = tg.nn.MultiheadAttention(**kw).double()
    _sync(ours, theirs)
    arrays = [rng.standard_normal(s) for s in shapes]
    xo = [tg.tensor(a, requires_grad=True) for a in arrays]
    xt = [torch_mod.tensor(a, requires_grad=True) for a in arrays]
    args_o = xo * 3 if len(xo) == 1 else (xo + xo[1:] if len(xo) == 2 else xo)
    args_t = xt * 3 if len(xt) == 1 else (xt + xt[1:] if len(xt) == 2 else xt)
    mo = {k: tg.tensor(v) for k, v in masks.items()}
    mt = {k: torch_mod.tensor(v) for k, v in masks.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, w = ours(*args_o, **mo, **fkw)
        ref, rw = theirs(*args_t, **mt, **fkw)
    _close(out.detach().numpy(), ref.detach().numpy(), "output")
    if rw is None:
        assert w is None
    else:
        _close(w.detach().numpy(), rw.detach().numpy(), "weights")
    g = rng.standard_normal(ref.shape)
    loss_o = (out * tg.tensor(g)).sum()
    loss_t = (ref * torch_mod.tensor(g)).sum()
    if w is not None:  # the returned weights carry gradient too
        gw = rng.standard_normal(rw.shape)
        loss_o = loss_o + (w * tg.tensor(gw)).sum()
        loss_t = loss_t + (rw * torch_mod.tensor(gw)).sum()
    loss_o.backward()
    loss_t.backward()
    _compare_grads(ours, theirs, xo, xt)


def test_multihead_attention_names_and_init(torch_mod):
    m = tg.nn.MultiheadAttention(8, 2, kdim=4, vdim=3, add_bias_kv=True)
    t = torch_mod.nn.MultiheadAttention(8, 2, kdim=4, vdim=3, add_bias_kv=True)
    assert [(k, tuple(v.shape)) for k, v in m.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in t.state_dict().items()
    ]
    m = tg.nn.MultiheadAttention(64, 4)
    assert m.in_proj_weight.shape == (192, 64) and m.q_proj_weight is None
    assert np.all(m.in_proj_bias.detach().numpy() == 0)
    assert np.all(m.out_proj.bias.detach().numpy() == 0)
    bound = np.sqrt(6.0 / (192 + 64))  # xavier_uniform
    w = m.in_proj_weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    with pytest.raises(AssertionError, match="divisible"):
        tg.nn.MultiheadAttention(10, 3)


def test_multihead_attention_causal_hint_needs_mask():
    m = tg.nn.MultiheadAttention(8, 2)
    x = tg.randn(5, 2, 8)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        m(x, x, x, is_causal=True)
    with pytest.raises(RuntimeError, match="2D attn_mask"):
        m(x, x, x, attn_mask=tg.zeros(4, 5))
    x64 = tg.randn(5, 2, 8, dtype=tg.float64)
    with pytest.raises(RuntimeError, match="dtype"):
        m(x64, x64, x64)


def test_square_subsequent_mask(torch_mod):
    ours = tg.nn.Transformer.generate_square_subsequent_mask(4)
    ref = torch_mod.nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    assert ours.dtype == tg.float32


TRANSFORMER_CASES = [
    {},
    {"batch_first": True, "norm_first": True, "activation": "gelu"},
    {"activation": lambda x: x.tanh(), "bias": False},
]


@pytest.mark.parametrize("extra", TRANSFORMER_CASES, ids=["post-norm", "pre-norm-gelu", "tanh"])
def test_transformer_matches_torch(extra, torch_mod):
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        textra = dict(extra)
        if callable(extra.get("activation")):
            textra["activation"] = torch_mod.tanh
        theirs = torch_mod.nn.Transformer(**kw, **textra, dropout=0.0).double()
    ours = tg.nn.Transformer(**kw, **extra, dropout=0.0).double()
    _sync(ours, theirs)
    bf = extra.get("batch_first", False)
    src = rng.standard_normal((3, 5, 8) if bf else (5, 3, 8))
    tgt = rng.standard_normal((3, 4, 8) if bf else (4, 3, 8))
    xo = [tg.tensor(a, requires_grad=True) for a in (src, tgt)]
    xt = [torch_mod.tensor(a, requires_grad=True) for a in (src, tgt)]
    kpm = np.array([[0, 0, 0, 0, 1], [0, 0, 0, 0, 0], [0, 0, 1, 1, 1]], bool)
    mask_o = tg.nn.Transformer.generate_square_subsequent_mask(4, dtype=tg.float64)
    mask_t = torch_mod.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch_mod.float64)
    opt_o = tg.optim.SGD(ours.parameters(), lr=0.1)
    opt_t = torch_mod.optim.SGD(theirs.parameters(), lr=0.1)
    for step in range(2):  # two training steps: outputs, gradients, updated weights
        out = ours(*xo, tgt_mask=mask_o, src_key_padding_mask=tg.tensor(kpm))
        ref = theirs(*xt, tgt_mask=mask_t, src_key_padding_mask=torch_mod.tensor(kpm))
        _close(out.detach().numpy(), ref.detach().numpy(), f"output at step {step}")
        (out**2).mean().backward()
        (ref**2).mean().backward()
        _compare_grads(ours, theirs, xo, xt)
        opt_o.step()
        opt_t.step()
        opt_o.zero_grad()
        opt_t.zero_grad()
        for x in xo + xt:
            x.grad = None


def test_encoder_layer_eval_and_causal_detection(torch_mod):
    layer_t = torch_mod.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.2, batch_first=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        enc_t = torch_mod.nn.TransformerEncoder(layer_t, 2).double().eval()
    enc_o = tg.nn.TransformerEncoder(
        tg.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.2, batch_first=True), 2
    ).double()
    enc_o.eval()
    _sync(enc_o, enc_t)
    x = rng.standard_normal((2, 6, 8))
    xo, xt = tg.tensor(x, requires_grad=True), torch_mod.tensor(x, requires_grad=True)
    mo = tg.nn.Transformer.generate_square_subsequent_mask(6, dtype=tg.float64)
    mt = torch_mod.nn.Transformer.generate_square_subsequent_mask(6, dtype=torch_mod.float64)
    out, ref = enc_o(xo, mask=mo), enc_t(xt, mask=mt)
    _close(out.detach().numpy(), ref.detach().numpy(), "output")
    out.sum().backward()
    ref.sum().backward()
    _compare_grads(enc_o, enc_t, [xo], [xt])


def test_encoder_layer_training_uses_dropout():
    layer = tg.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5)
    x = tg.randn(5, 2, 8)
    a, b = layer(x), layer(x)
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    layer.eval()
    np.testing.assert_array_equal(layer(x).detach().numpy(), layer(x).detach().numpy())


def test_bad_activation():
    with pytest.raises(RuntimeError, match="relu/gelu"):
        tg.nn.TransformerEncoderLayer(8, 2, activation="swish")
