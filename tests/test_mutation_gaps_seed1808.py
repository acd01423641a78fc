"""Tests for the gaps that the seed-1808 mutation sample found (docs/mutation-run-seed1808.md):
each fails on its mutant."""

import pytest

import tapegrad as tg

from ._message_check import check_message


@pytest.mark.parametrize("shape", [(4, 2), (3,), ()], ids=["trailing", "unbatched", "0d"])
def test_batched_grad_outputs_of_the_wrong_shape_raise_like_torch(shape, torch_mod):
    # autograd/batched.py: grad_outputs must be [B] + the output's shape
    errors = []
    for m in (torch_mod, tg):
        x = m.ones(3, requires_grad=True)
        with pytest.raises((RuntimeError, IndexError)) as info:
            m.autograd.grad(x * 2, x, m.ones(shape), is_grads_batched=True)
        errors.append(info.value)
    theirs, ours = errors
    assert type(ours) is type(theirs), (ours, theirs)
    check_message("is_grads_batched", ours, theirs, names=("is_grads_batched",))


def _cell(m, op, hx, wh):
    x, wi = m.ones(2, 3), m.ones(4 * (4 if op == "lstm_cell" else 3 if op == "gru_cell" else 1), 3)
    if op == "lstm_cell":
        return m.lstm_cell(x, (m.ones(hx), m.ones(hx)), wi * 0.1, m.ones(wh))
    return getattr(m, op)(x, m.ones(hx), wi * 0.1, m.ones(wh))


@pytest.mark.parametrize("op", ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"])
@pytest.mark.parametrize("bad", ["hx", "w_hh"])
def test_rnn_cells_refuse_a_hidden_state_or_w_hh_that_does_not_match(op, bad, torch_mod):
    # nn/_rnn_ops.py: each half of the hidden-state check alone (hidden size 4)
    gates = {"lstm_cell": 4, "gru_cell": 3}.get(op, 1)
    hx, wh = ((2, 5), (4 * gates, 4)) if bad == "hx" else ((2, 4), (4 * gates + 1, 4))
    errors = []
    for m in (torch_mod, tg):
        with pytest.raises(RuntimeError) as info:
            _cell(m, op, hx, wh)
        errors.append(info.value)
    check_message(op, errors[1], errors[0])


@pytest.mark.parametrize(
    "sizes", [(1, 1, 6), (1, -1, 1), (2, 1, 3, 1), (-1, -1, 6), (4, 2)], ids=str
)
def test_unflatten_with_several_ones_or_minus_ones_as_torch(sizes, torch_mod):
    # ops/shape.py: "more than one -1" counts the -1s, not the 1s
    got = []
    for m in (torch_mod, tg):
        try:
            got.append(tuple(m.arange(12.0).reshape(6, 2).unflatten(0, sizes).shape))
        except RuntimeError as exc:
            got.append(type(exc))
    assert got[0] == got[1], got


@pytest.mark.parametrize("shape", [(1, 5, 4), (2, 4, 5, 4), (1, 2, 4, 5, 4)], ids=str)
def test_pixel_unshuffle_checks_the_last_two_dims_of_any_rank(shape, torch_mod):
    # nn/_layers_functional.py: the height is dim -2 whatever the rank (3-D and 5-D too)
    errors = []
    for m in (torch_mod, tg):
        with pytest.raises(RuntimeError) as info:
            m.nn.functional.pixel_unshuffle(m.ones(shape), 2)
        errors.append(info.value)
    check_message("pixel_unshuffle", errors[1], errors[0])
