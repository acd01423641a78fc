"""torch.cond and torch.while_loop run eagerly (brief n20). torch compiles both with Dynamo
(seconds per call), so its answers here are recorded from torch 2.13, not recomputed."""

from __future__ import annotations

import pytest

import tapegrad as tg


def test_cond_runs_the_chosen_branch_with_gradients():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = tg.cond(x.sum() > 0, lambda a: (a * 2,), lambda a: (a * 3,), (x,))
    assert isinstance(out, tuple) and out[0].tolist() == [2.0, 4.0, 6.0]  # torch: the same
    y = tg.cond(x.sum() < 0, lambda a: a.cos(), lambda a: a.sin(), [x])
    y.sum().backward()
    assert x.grad.allclose(x.detach().cos())  # torch: [0.5403, -0.4161, -0.9900]
    assert tg.cond(False, lambda a: a + 1, lambda a: a - 1, (x,)).tolist() == [0.0, 1.0, 2.0]
    assert tg.cond(1, lambda: 5, lambda: 6) == 5  # a Python constant: no checks, as torch
    nested = tg.cond(tg.tensor(True), lambda d: d["a"] + 1, lambda d: d["a"], ({"a": x},))
    assert nested.tolist() == [2.0, 3.0, 4.0]


X = tg.ones(3)
COND_ERRORS = [
    (lambda: tg.cond("x", lambda a: a, lambda a: a, (X,)),
     "Expected pred to be bool or tensor, but got x."),
    (lambda: tg.cond(tg.tensor([True, False]), lambda a: a, lambda a: a, (X,)),
     "Expected pred to be bool or single-element tensor, but got tensor([ True, False])."),
    (lambda: tg.cond(tg.tensor(True), 1, lambda a: a, (X,)),
     "Expect both branches to be callable."),
    (lambda: tg.cond(tg.tensor(True), lambda a: a, lambda a: a, (X, 1)),
     "Expect operands to be a tuple of possibly nested dict/list/tuple that only consists of "
     "tensor leaves, but got (tensor([1., 1., 1.]), 1)."),
    (lambda: tg.cond(tg.tensor(True), lambda a: a, lambda a: a, X),
     "Expect operands to be a tuple of possibly nested dict/list/tuple that only consists of "
     "tensor leaves, but got tensor([1., 1., 1.])."),
]  # fmt: skip


@pytest.mark.parametrize(("call", "message"), COND_ERRORS, ids=range(len(COND_ERRORS)))
def test_cond_refuses_as_torch(call, message):
    with pytest.raises(RuntimeError) as info:
        call()
    assert str(info.value) == message


def test_while_loop_runs_until_cond_fails_with_gradients():
    out = tg.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * 2),
                        (tg.tensor(0), tg.tensor(1.0)))  # fmt: skip
    assert isinstance(out, tuple) and [v.item() for v in out] == [3, 8.0]  # torch: (3, 8.)
    assert tg.while_loop(lambda i: i < 3, lambda i: (i + 1,), [tg.tensor(0)])[0].item() == 3
    w = tg.tensor(1.5, requires_grad=True)
    _, v = tg.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * w), (0, tg.tensor(1.0)))
    v.backward()
    assert abs(w.grad.item() - 3 * 1.5**2) < 1e-12  # d(w³)/dw
    never = tg.while_loop(lambda i: i > 5, lambda i: (i + 1,), (tg.tensor(0),))
    assert isinstance(never, tuple) and never[0].item() == 0


def test_while_loop_refuses_as_torch():
    with pytest.raises(RuntimeError, match="Expect cond_fn and body_fn to be callable."):
        tg.while_loop(1, lambda i: (i,), (tg.tensor(0),))
    with pytest.raises(AssertionError, match=r"can only be of .* but got"):
        tg.while_loop(lambda i: i < 3, lambda i: (i + 1,), (tg.tensor(0), "a"))
    with pytest.raises(RuntimeError, match="boolean scalar tensor"):
        tg.while_loop(lambda i: i, lambda i: (i + 1,), (tg.tensor(0),))
    with pytest.raises(AssertionError, match="same number of elements"):
        tg.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1,), (tg.tensor(0), tg.tensor(0)))
