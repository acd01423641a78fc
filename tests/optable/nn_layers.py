"""Table rows: the fused nn ops of issue 11 (attention, recurrent cells, activations)."""

import numpy as np

from . import OpCase, away_from


def _F(m):
    return m.nn.functional


def _sdpa(**kw):
    return lambda m, q, k, v: _F(m).scaled_dot_product_attention(q, k, v, **kw)


def _masked(rng):
    return [rng.uniform(-2, 2, size=s) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 3))]


_BOOL_MASK = np.array([[1, 1, 0, 1, 0], [0, 0, 0, 0, 0], [1, 0, 1, 1, 1], [0, 1, 0, 0, 1]], bool)

CASES = [
    OpCase("_scaled_dot_product_attention", _sdpa(), [(2, 3, 4), (2, 5, 4), (2, 5, 3)]),
    OpCase(
        "_scaled_dot_product_attention",
        _sdpa(is_causal=True, scale=0.7),
        [(2, 4, 3), (2, 4, 3), (2, 4, 2)],
        name="causal",
    ),
    OpCase(
        "_scaled_dot_product_attention",
        lambda m, q, k, v: _F(m).scaled_dot_product_attention(
            q, k, v, attn_mask=m.tensor(_BOOL_MASK[[0, 1, 3]])
        ),
        [(2, 3, 4), (2, 5, 4), (2, 5, 3)],
        name="bool-mask-dead-row",
        inputs=_masked,
    ),
    OpCase(
        "_scaled_dot_product_attention",
        lambda m, q, k, v, b: _F(m).scaled_dot_product_attention(q, k, v, attn_mask=b),
        [(2, 3, 4), (2, 5, 4), (2, 5, 3), (3, 5)],
        name="float-mask-grad",
    ),
    OpCase(
        "_scaled_dot_product_attention",
        lambda m, q, k, v: _F(m).scaled_dot_product_attention(q, k, v, enable_gqa=True),
        [(1, 4, 3, 2), (1, 2, 3, 2), (1, 2, 3, 2)],
        name="gqa",
    ),
]


# -- recurrent cells: torch.lstm_cell & co. (the fused LSTM/GRU steps inside) ------------
def _cell_shapes(gates, bias=True):
    shapes = [(3, 4), (3, 2), (gates * 2, 4), (gates * 2, 2)]
    return shapes + [(gates * 2,), (gates * 2,)] if bias else shapes


CASES += [
    OpCase(
        "lstm_cell",
        lambda m, x, h, c, wi, wh, bi, bh: m.lstm_cell(x, (h, c), wi, wh, bi, bh),
        [(3, 4), (3, 2), (3, 2), (8, 4), (8, 2), (8,), (8,)],
    ),
    OpCase(
        "lstm_cell",
        lambda m, x, h, c, wi, wh: m.lstm_cell(x, (h, c), wi, wh),
        # hidden size 5: the gates' chunks differ from chunk(5)'s (sizes 1..4 coincide)
        [(2, 3), (2, 5), (2, 5), (20, 3), (20, 5)],
        name="no-bias",
    ),
    OpCase("gru_cell", lambda m, *a: m.gru_cell(a[0], *a[1:]), _cell_shapes(3)),
    OpCase(
        "gru_cell", lambda m, *a: m.gru_cell(a[0], *a[1:]), _cell_shapes(3, False), name="no-bias"
    ),
    OpCase("rnn_tanh_cell", lambda m, *a: m.rnn_tanh_cell(a[0], *a[1:]), _cell_shapes(1)),
    OpCase(
        "rnn_relu_cell",
        lambda m, *a: m.rnn_relu_cell(a[0], *a[1:]),
        _cell_shapes(1),
        inputs=lambda rng: [rng.uniform(0.2, 1, size=s) for s in _cell_shapes(1)],
    ),
]


# -- pointwise activations (ops/activation_rows.py) ----------------------------------------
def _act(name, *args):
    return lambda m, x: getattr(_F(m), name)(x, *args)


def _kinks(*points):
    return lambda rng: [away_from(list(points), -5, 5, gap=0.2)((3, 4))(rng)]


CASES += [
    OpCase("elu", _act("elu", 0.7), [(3, 4)], inputs=_kinks(0)),
    OpCase("selu", _act("selu"), [(3, 4)], inputs=_kinks(0)),
    OpCase("celu", _act("celu", 1.5), [(3, 4)], inputs=_kinks(0)),
    OpCase("leaky_relu", _act("leaky_relu", 0.2), [(3, 4)], inputs=_kinks(0)),
    OpCase("hardtanh", _act("hardtanh", -2.0, 1.5), [(3, 4)], inputs=_kinks(-2, 1.5)),
    OpCase("relu6", _act("relu6"), [(3, 4)], inputs=lambda rng: [rng.uniform(-3, 9, (3, 4))]),
    OpCase("hardsigmoid", _act("hardsigmoid"), [(3, 4)], inputs=_kinks(-3, 3)),
    OpCase("hardswish", _act("hardswish"), [(3, 4)], inputs=_kinks(-3, 3)),
    OpCase("mish", _act("mish"), [(3, 4)], domain=(-5, 5)),
    OpCase("softsign", _act("softsign"), [(3, 4)], inputs=_kinks(0)),
    OpCase("softshrink", _act("softshrink", 0.7), [(3, 4)], inputs=_kinks(-0.7, 0.7)),
    OpCase("hardshrink", _act("hardshrink", 0.7), [(3, 4)], inputs=_kinks(-0.7, 0.7)),
    OpCase("tanhshrink", _act("tanhshrink"), [(3, 4)]),
    OpCase("threshold", _act("threshold", 0.3, -2.0), [(3, 4)], inputs=_kinks(0.3)),
    OpCase("logsigmoid", _act("logsigmoid"), [(3, 4)], domain=(-8, 8)),
]
