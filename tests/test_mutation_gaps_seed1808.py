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
