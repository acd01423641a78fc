"""Tests for conditions no test decided both ways (tools/weakmut.py, list A of issue 18),
continued from test_weak_a.py; and bugs found on the way, fixed: rounded division,
remainder and fmod of two bools raise torch's NotImplementedError; a Function's backward
gets one gradient per output of forward, None for those that are not Tensors."""

import numpy as np
import pytest

import tapegrad as tg


@pytest.mark.parametrize(
    "op",
    [
        lambda m, a, b: a % b,
        lambda m, a, b: m.fmod(a, b),
        lambda m, a, b: a // b,
        lambda m, a, b: m.div(a, b, rounding_mode="trunc"),
        lambda m, a, b: m.remainder(True, b),
        lambda m, a, b: a % True,
    ],
)
def test_remainder_fmod_and_rounded_division_of_two_bools_are_not_implemented(torch_mod, op):
    """torch has no Bool kernel for them: NotImplementedError (tapegrad computed int8 or
    bool results)."""
    for m in (torch_mod, tg):
        a, b = m.tensor([True, False]), m.tensor([True, True])
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            op(m, a, b)


@pytest.mark.parametrize(
    "op", [lambda m, b: b // 1, lambda m, b: b % 2, lambda m, b: b // m.tensor([1, 2])]
)
def test_rounded_division_and_remainder_of_a_bool_by_an_int_still_compute(torch_mod, op):
    """A bool tensor beside an int is promoted, as torch."""
    theirs, ours = op(torch_mod, torch_mod.tensor([True, False])), op(tg, tg.tensor([True, False]))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


def test_function_backward_gets_none_for_non_tensor_outputs(torch_mod):
    """torch hands a Function's backward one gradient per output of forward, None for an
    output that is not a Tensor (tapegrad passed the Tensors' only: a backward written for
    torch failed with a TypeError)."""
    grads = []
    for m in (torch_mod, tg):

        class Scale(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, None, 3, x * 3

            @staticmethod
            def backward(ctx, g, g_none, g_int, g3):
                grads.append((g_none, g_int))
                return g * 2 + g3 * 3

        x = m.tensor([1.0, 2.0], requires_grad=True)
        y, _, _, z = Scale.apply(x)
        (y.sum() + z.sum() * 10).backward()
        np.testing.assert_array_equal(x.grad.numpy(), [32.0, 32.0])
    assert grads == [(None, None), (None, None)]


def test_the_cache_of_scalar_operand_constants_is_bounded(monkeypatch):
    """arithmetic.py:93: Python numbers beside float32 tensors are kept as read-only 0-d
    arrays (Note [Scalar operands as 0-d arrays]) in a cache of at most 1024 values, so a
    loop over many distinct numbers does not grow it without bound; the values past the
    bound are still exact."""
    from tapegrad.ops import arithmetic

    cache = {}
    monkeypatch.setitem(arithmetic._WEAK_BY_DTYPE, np.dtype(np.float32), cache)
    x = tg.ones(2)
    for k in range(1, 1031):
        out = x * (k + 0.5)
    assert len(cache) == 1024
    np.testing.assert_array_equal(out.numpy(), [1030.5, 1030.5])


def test_a_stale_view_without_a_known_base_raises_the_stale_view_error():
    """graph.py:493: a view Node on a Tensor whose ``_base`` was dropped (ops/shape.py does
    so for an op's private intermediate) cannot be recorded afresh once the base changed
    in place: torch's stale-view RuntimeError, not a crash in the refresh."""
    x = tg.ones(2, 3, requires_grad=True)
    h = x * 1
    v = h[0]
    v._base = None
    h.mul_(2)
    with pytest.raises(RuntimeError, match="the base has since been modified in place"):
        v * 3
