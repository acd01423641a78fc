"""torch.lstm / gru / rnn_tanh / rnn_relu (the ATen functions behind nn.LSTM & co.) against
torch: values and gradients of every output for both overloads (padded and packed)."""

import numpy as np
import pytest

import tapegrad as tg

MODES = {  # name: (torch module, kwargs)
    "lstm": ("LSTM", {}),
    "gru": ("GRU", {}),
    "rnn_tanh": ("RNN", {"nonlinearity": "tanh"}),
    "rnn_relu": ("RNN", {"nonlinearity": "relu"}),
}
CASES = [  # (layers, bidirectional, batch_first, bias, proj_size)
    (1, False, False, True, 0),
    (2, True, True, True, 0),
    (2, False, False, False, 0),
    (1, True, False, True, 2),  # proj_size: LSTM only
]


def _params(torch, name, layers, bidir, bias, proj):
    kind, kw = MODES[name]
    torch.manual_seed(0)
    extra = {"proj_size": proj} if proj else {}
    m = getattr(torch.nn, kind)(3, 4, layers, bias=bias, bidirectional=bidir, **kw, **extra)
    return [p.detach().double().requires_grad_() for p in m._flat_weights]


def _pair(torch, arrays):
    """The same double leaves in torch and tapegrad."""
    t = [torch.tensor(a, requires_grad=True) for a in arrays]
    g = [tg.tensor(a, requires_grad=True) for a in arrays]
    return t, g


def _compare(outs_t, outs_g, leaves_t, leaves_g):
    for a, b in zip(outs_t, outs_g):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), atol=1e-10)
    rng = np.random.default_rng(1)
    ws = [rng.standard_normal(tuple(o.shape)) for o in outs_t]
    sum(((o * o.new_tensor(w)).sum() for o, w in zip(outs_t, ws))).backward()
    sum(((o * tg.tensor(w)).sum() for o, w in zip(outs_g, ws))).backward()
    for a, b in zip(leaves_t, leaves_g):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), atol=1e-10)


@pytest.mark.parametrize(
    "name, case", [(n, c) for n in MODES for c in CASES if n == "lstm" or not c[-1]]
)
def test_padded_overload(torch_mod, name, case):
    torch = torch_mod
    layers, bidir, batch_first, bias, proj = case
    dirs = 2 if bidir else 1
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 3) if batch_first else (5, 2, 3))
    hsize = proj or 4
    states = [rng.standard_normal((layers * dirs, 2, hsize))]
    if name == "lstm":
        states.append(rng.standard_normal((layers * dirs, 2, 4)))
    params_t = _params(torch, name, layers, bidir, bias, proj)
    params_np = [p.detach().numpy() for p in params_t]
    leaves_t, leaves_g = _pair(torch, [x, *states, *params_np])
    (xt, *rest_t), (xg, *rest_g) = leaves_t, leaves_g
    ns = len(states)
    flags = (bias, layers, 0.0, False, bidir, batch_first)
    hx_t = rest_t[:ns] if name == "lstm" else rest_t[0]
    hx_g = rest_g[:ns] if name == "lstm" else rest_g[0]
    outs_t = getattr(torch, name)(xt, hx_t, rest_t[ns:], *flags)
    outs_g = getattr(tg, name)(xg, hx_g, rest_g[ns:], *flags)
    assert type(outs_g) is tuple and len(outs_g) == len(outs_t)
    _compare(outs_t, outs_g, leaves_t, leaves_g)


@pytest.mark.parametrize("name", list(MODES))
def test_packed_overload(torch_mod, name):
    torch = torch_mod
    rng = np.random.default_rng(2)
    sizes = [3, 3, 2, 1]
    data = rng.standard_normal((sum(sizes), 3))
    states = [rng.standard_normal((4, 3, 4)) for _ in range(2 if name == "lstm" else 1)]
    params_np = [p.detach().numpy() for p in _params(torch, name, 2, True, True, 0)]
    leaves_t, leaves_g = _pair(torch, [data, *states, *params_np])
    ns = len(states)
    flags = (True, 2, 0.0, False, True)
    hx_t = leaves_t[1 : 1 + ns] if name == "lstm" else leaves_t[1]
    hx_g = leaves_g[1 : 1 + ns] if name == "lstm" else leaves_g[1]
    bs_t, bs_g = torch.tensor(sizes), tg.tensor(sizes)
    outs_t = getattr(torch, name)(leaves_t[0], bs_t, hx_t, leaves_t[1 + ns :], *flags)
    outs_g = getattr(tg, name)(leaves_g[0], bs_g, hx_g, leaves_g[1 + ns :], *flags)
    assert outs_g[0].shape == (sum(sizes), 8)
    _compare(outs_t, outs_g, leaves_t, leaves_g)


def test_dropout_between_layers_only_when_training():
    params = [p for p in tg.nn.GRU(3, 4, 2)._flat_weights]
    x, h = tg.randn(5, 2, 3), tg.zeros(2, 2, 4)
    a = tg.gru(x, h, params, True, 2, 0.9, False, False, False)[0]
    b = tg.gru(x, h, params, True, 2, 0.0, True, False, False)[0]
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    c = tg.gru(x, h, params, True, 2, 0.9, True, False, False)[0]
    assert not np.allclose(c.detach().numpy(), a.detach().numpy())


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda p, x, h: tg.lstm(x, (h,), p, True, 1, 0.0, False, False, False), "two hidden"),
        (lambda p, x, h: tg.lstm(x, (h, h), p[:3], True, 1, 0.0, False, False, False), "number"),
        (lambda p, x, h: tg.lstm(x, (h, h), p, False, 1, 0.0, False, False, False), "number"),
    ],
)
def test_errors_as_torch(call, match):
    p = list(tg.nn.LSTM(3, 4)._flat_weights)
    with pytest.raises(RuntimeError, match=match):
        call(p, tg.randn(5, 2, 3), tg.zeros(1, 2, 4))


def test_unbatched_input_is_an_index_error_as_torch(torch_mod):
    for lib in (torch_mod, tg):
        p = list(lib.nn.GRU(3, 4)._flat_weights)
        with pytest.raises(IndexError, match="range"):
            lib.gru(lib.randn(5, 3), lib.zeros(1, 4), p, True, 1, 0.0, False, False, False)
