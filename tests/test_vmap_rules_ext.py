"""Issue 15: the batching rules of _batch_rules_ext.py (copies, solves and other stacks of
matrices, the tg.linalg functions, the add-matmul family, RNN cells, a few shape ops),
each against a Python loop for in_dims 0 and 1, under nested vmap and through vmap(grad),
with no fallback allowed (tests/_vmap_harness.py)."""

import numpy as np

import tapegrad as tg

from ._vmap_harness import (
    B,
    no_fallback,  # noqa: F401 - autouse: a fallback fails the test
    rule_tests,
)

NF = tg.nn.functional


def _spd(r, b, n=3):
    a = r.standard_normal(b + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _tri(r, b, n=3):
    return np.tril(r.standard_normal(b + (n, n))) + 3 * np.eye(n)


def _cell_args(r, b, gates, lstm=False, batched_w=False):
    wb = b if batched_w else ()
    out = [r.standard_normal(b + (2, 3)), r.standard_normal(b + (2, 4))]
    if lstm:
        out.append(r.standard_normal(b + (2, 4)))
    out += [r.standard_normal(wb + (gates * 4, 3)), r.standard_normal(wb + (gates * 4, 4)),
            r.standard_normal(wb + (gates * 4,)), r.standard_normal(wb + (gates * 4,))]  # fmt: skip
    return out


CASES = {
    "diagonal_copy": (
        lambda x: tg.diagonal_copy(x, 1, 0, 1),
        lambda r, b: [r.standard_normal(b + (3, 4))],
        (True,),
        0,
    ),
    "view_copy": (
        lambda x: tg.view_copy(x, (2, 6)),
        lambda r, b: [r.standard_normal(b + (3, 4))],
        (True,),
        0,
    ),
    "permute_copy": (
        lambda x: tg.permute_copy(x, (2, 0, 1)),
        lambda r, b: [r.standard_normal(b + (2, 3, 4))],
        (True,),
        0,
    ),
    "unbind_copy": (
        lambda x: tg.unbind_copy(x, 1),
        lambda r, b: [r.standard_normal(b + (2, 3))],
        (True,),
        0,
    ),
    "split_with_sizes": (
        lambda x: tg.split_with_sizes(x, [1, 3], 1),
        lambda r, b: [r.standard_normal(b + (2, 4))],
        (True,),
        0,
    ),
    "unsafe_chunk": (
        lambda x: tg.unsafe_chunk(x, 2, -1),
        lambda r, b: [r.standard_normal(b + (2, 4))],
        (True,),
        0,
    ),
    "alias_copy": (
        lambda x: tg.alias_copy(x),
        lambda r, b: [r.standard_normal(b + (2, 4))],
        (True,),
        0,
    ),
    "fliplr": (lambda x: tg.fliplr(x), lambda r, b: [r.standard_normal(b + (2, 4))], (True,), 0),
    "flipud": (lambda x: tg.flipud(x), lambda r, b: [r.standard_normal(b + (2, 4))], (True,), 0),
    "expand_as-batched-other": (
        lambda x, y: x.expand_as(y) * y,
        lambda r, b: [r.standard_normal((1, 4)), r.standard_normal(b + (3, 4))],
        (False, True),
        0,
    ),
    "unfold": (
        lambda x: x.unfold(1, 2, 1),
        lambda r, b: [r.standard_normal(b + (2, 5))],
        (True,),
        0,
    ),
    "diff": (
        lambda x: tg.diff(x, n=2, dim=0),
        lambda r, b: [r.standard_normal(b + (4, 3))],
        (True,),
        0,
    ),
    "repeat_interleave": (
        lambda x: x.repeat_interleave(2, dim=1),
        lambda r, b: [r.standard_normal(b + (2, 3))],
        (True,),
        0,
    ),
    "repeat_interleave-flat": (
        lambda x: tg.repeat_interleave(x, tg.tensor([1, 0, 2, 1])),
        lambda r, b: [r.standard_normal(b + (2, 2))],
        (True,),
        0,
    ),
    "aminmax": (lambda x: tg.aminmax(x), lambda r, b: [r.standard_normal(b + (2, 3))], (True,), 0),
    "aminmax-dim": (
        lambda x: tg.aminmax(x, dim=0, keepdim=True),
        lambda r, b: [r.standard_normal(b + (2, 3))],
        (True,),
        0,
    ),
    "solve": (
        lambda a, y: tg.linalg.solve(a, y),
        lambda r, b: [_spd(r, b), r.standard_normal(b + (3, 2))],
        (True, True),
        0,
    ),
    "solve-vector": (
        lambda a, y: tg.linalg.solve(a, y),
        lambda r, b: [_spd(r, ()), r.standard_normal(b + (3,))],
        (False, True),
        1,
    ),
    "solve-left-false": (
        lambda a, y: tg.linalg.solve(a, y, left=False),
        lambda r, b: [_spd(r, b), r.standard_normal((2, 3))],
        (True, False),
        0,
    ),
    "solve_triangular": (
        lambda a, y: tg.linalg.solve_triangular(a, y, upper=False),
        lambda r, b: [_tri(r, b), r.standard_normal((3, 2))],
        (True, False),
        0,
    ),
    "cholesky_solve": (
        lambda y, c: tg.cholesky_solve(y, c),
        lambda r, b: [r.standard_normal(b + (3, 2)), _tri(r, ())],
        (True, False),
        0,
    ),
    "triangular_solve": (
        lambda y, a: tg.triangular_solve(y, a, upper=False),
        lambda r, b: [r.standard_normal(b + (3, 2)), _tri(r, b)],
        (True, True),
        0,
    ),
    "cdist": (
        lambda x, y: tg.cdist(x, y),
        lambda r, b: [r.standard_normal(b + (3, 2)), r.standard_normal((4, 2))],
        (True, False),
        0,
    ),
    "logdet": (lambda a: tg.logdet(a), lambda r, b: [_spd(r, b)], (True,), 0),
    "matrix_exp": (
        lambda a: tg.linalg.matrix_exp(a),
        lambda r, b: [0.3 * r.standard_normal(b + (3, 3))],
        (True,),
        0,
    ),
    "eigh": (lambda a: tg.linalg.eigh(a)[0], lambda r, b: [_spd(r, b)], (True,), 0),
    "eigvalsh": (lambda a: tg.linalg.eigvalsh(a), lambda r, b: [_spd(r, b)], (True,), 0),
    "svdvals": (
        lambda a: tg.linalg.svdvals(a),
        lambda r, b: [r.standard_normal(b + (3, 2))],
        (True,),
        0,
    ),
    "svd": (
        lambda a: tg.linalg.svd(a, full_matrices=False)[1],
        lambda r, b: [r.standard_normal(b + (2, 3))],
        (True,),
        0,
    ),
    "pinv": (lambda a: tg.linalg.pinv(a), lambda r, b: [r.standard_normal(b + (3, 2))], (True,), 0),
    "cond": (lambda a: tg.linalg.cond(a), lambda r, b: [_spd(r, b)], (True,), 0),
    "qr": (lambda a: tg.linalg.qr(a)[1], lambda r, b: [r.standard_normal(b + (3, 2))], (True,), 0),
    "lu_factor": (lambda a: tg.linalg.lu_factor(a)[0], lambda r, b: [_spd(r, b)], (True,), 0),
    "addmm": (
        lambda i, a, c: tg.addmm(i, a, c, beta=0.5, alpha=2.0),
        lambda r, b: [
            r.standard_normal((2, 1)),
            r.standard_normal(b + (2, 3)),
            r.standard_normal(b + (3, 4)),
        ],
        (False, True, True),
        1,
    ),
    "addmv": (
        lambda i, a, v: tg.addmv(i, a, v),
        lambda r, b: [
            r.standard_normal(b + (2,)),
            r.standard_normal((2, 3)),
            r.standard_normal(b + (3,)),
        ],
        (True, False, True),
        2,
    ),
    "addr": (
        lambda i, u, v: tg.addr(i, u, v, alpha=-1),
        lambda r, b: [
            r.standard_normal((2, 3)),
            r.standard_normal(b + (2,)),
            r.standard_normal(b + (3,)),
        ],
        (False, True, True),
        1,
    ),
    "baddbmm": (
        lambda i, a, c: tg.baddbmm(i, a, c),
        lambda r, b: [
            r.standard_normal(b + (2, 2, 4)),
            r.standard_normal(b + (2, 2, 3)),
            r.standard_normal((2, 3, 4)),
        ],
        (True, True, False),
        1,
    ),
    "addbmm": (
        lambda i, a, c: tg.addbmm(i, a, c, beta=2),
        lambda r, b: [
            r.standard_normal((2, 4)),
            r.standard_normal(b + (2, 2, 3)),
            r.standard_normal(b + (2, 3, 4)),
        ],
        (False, True, True),
        2,
    ),
    "vdot": (
        lambda u, v: tg.vdot(u, v),
        lambda r, b: [r.standard_normal(b + (3,)), r.standard_normal((3,))],
        (True, False),
        0,
    ),
    "linalg.norm": (
        lambda x: tg.linalg.norm(x),
        lambda r, b: [r.standard_normal(b + (2, 3))],
        (True,),
        0,
    ),
    "linalg.norm-matrix-ord": (
        lambda x: tg.linalg.norm(x, 1, keepdim=True),
        lambda r, b: [r.standard_normal(b + (2, 3))],
        (True,),
        0,
    ),
    "linalg.norm-dim": (
        lambda x: tg.linalg.norm(x, 3, dim=0),
        lambda r, b: [r.standard_normal(b + (2, 3))],
        (True,),
        0,
    ),
    "linalg.norm-fro-dims": (
        lambda x: tg.linalg.norm(x, dim=(1, 2)),
        lambda r, b: [r.standard_normal(b + (2, 3, 2))],
        (True,),
        0,
    ),
    "linalg.cross": (
        lambda u, v: tg.linalg.cross(u, v, dim=0),
        lambda r, b: [r.standard_normal(b + (3, 2)), r.standard_normal((3, 1))],
        (True, False),
        0,
    ),
    "kron": (
        lambda u, v: tg.kron(u, v),
        lambda r, b: [r.standard_normal(b + (2, 3)), r.standard_normal(b + (3,))],
        (True, True),
        1,
    ),
    "inner": (
        lambda u, v: tg.inner(u, v),
        lambda r, b: [r.standard_normal(b + (2, 3)), r.standard_normal((4, 3))],
        (True, False),
        0,
    ),
    "lstm_cell": (
        lambda x, h, c, *w: tg.lstm_cell(x, (h, c), *w),
        lambda r, b: _cell_args(r, b, 4, True),
        (True, True, True, False, False, False, False),
        1,
    ),
    "lstm_cell-per-sample-weights": (
        lambda x, h, c, *w: tg.lstm_cell(x, (h, c), *w)[1],
        lambda r, b: _cell_args(r, b, 4, True, True),
        (True,) * 7,
        3,
    ),
    "gru_cell": (
        lambda x, h, *w: tg.gru_cell(x, h, *w),
        lambda r, b: _cell_args(r, b, 3),
        (True, True, False, False, False, False),
        0,
    ),
    "rnn_tanh_cell": (
        lambda x, h, *w: tg.rnn_tanh_cell(x, h, *w),
        lambda r, b: _cell_args(r, b, 1, batched_w=True),
        (True,) * 6,
        2,
    ),
    "rnn_relu_cell": (
        lambda x, h, *w: tg.rnn_relu_cell(x, h, *w),
        lambda r, b: _cell_args(r, b, 1),
        (True, True, False, False, False, False),
        1,
    ),
}


(
    test_rule_matches_a_loop,
    test_rule_under_nested_vmap,
    test_per_sample_gradients_through_the_rule,
) = rule_tests(CASES)


def test_lstm_module_per_sample_gradients_match_a_loop():
    """nn.LSTMCell under functional_call: per-sample gradients with no loop."""
    tg.manual_seed(0)
    cell = tg.nn.LSTMCell(3, 4).double()
    params = {k: v.detach() for k, v in cell.named_parameters()}
    x = tg.randn(B, 3, dtype=tg.float64)

    def loss(p, xi):
        h, c = tg.func.functional_call(cell, p, (xi,))
        return (h * c).sum()

    got = tg.func.vmap(tg.func.grad(loss), in_dims=(None, 0))(params, x)
    for b in range(B):
        want = tg.func.grad(loss)(params, x[b])
        for key in params:
            np.testing.assert_allclose(got[key][b].numpy(), want[key].numpy(), rtol=1e-12)
