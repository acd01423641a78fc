"""torch.cond / torch.while_loop in eager mode: results, gradients through the taken
branch and the loop, and torch's input checks (RuntimeError) against torch.

A tensor predicate sends torch through Dynamo (8 s of CPU for the first call), so the
reference runs the branches and the loop as plain torch code (what torch's eager result
is, checked by hand on torch 2.13: values, grads, output containers); torch.cond itself
runs only where it answers without Dynamo (a Python predicate, the input checks).
"""

import types

import numpy as np
import pytest

import tapegrad as tg


def _eager_while(cond_fn, body_fn, carried):
    result = carried
    while bool(cond_fn(*carried)):
        result = body_fn(*carried)
        carried = result if isinstance(result, (tuple, list)) else (result,)
    return result


def _reference(torch):
    """torch with cond/while_loop as torch's eager outcome, without Dynamo."""
    ns = types.SimpleNamespace(**{k: getattr(torch, k) for k in ("tensor", "ones")})
    ns.cond = lambda p, t, f, ops=(): t(*ops) if bool(p) else f(*ops)
    ns.while_loop = _eager_while
    return ns


def _run(lib, fn):
    x = lib.tensor([0.5, -1.5, 2.0], requires_grad=True)
    out = fn(lib, x)
    first = out[-1] if isinstance(out, (tuple, list)) else out
    first.sum().backward()
    return out, x.grad


CASES = {  # name: fn(lib, x) -> output; run in both libraries, values and x.grad compared
    "tensor_pred_true": lambda L, x: L.cond(
        x.sum() > 0, lambda a: a.sin(), lambda a: a.cos(), (x,)
    ),
    "tensor_pred_false": lambda L, x: L.cond(
        x.sum() < 0, lambda a: a.sin(), lambda a: a.cos(), [x]
    ),
    "python_pred": lambda L, x: L.cond(False, lambda a, b: a * b, lambda a, b: a + b, (x, x * 3)),
    "int_tensor_pred": lambda L, x: L.cond(L.tensor(2), lambda a: a.exp(), lambda a: a, (x,)),
    "tuple_out": lambda L, x: L.cond(
        L.tensor(True), lambda a: (a * 2, a.tanh()), lambda a: (a, a), (x,)
    ),
    "nested_operands": lambda L, x: L.cond(
        L.tensor([True]), lambda d: d["k"][0] ** 2, lambda d: d["k"][0], ({"k": [x]},)
    ),
    "closure_no_operands": lambda L, x: L.cond(L.tensor(False), lambda: x.sin(), lambda: x * 5),
    "while_counter": lambda L, x: L.while_loop(
        lambda i, a: i < 3, lambda i, a: (i + 1, a * a), (L.tensor(0), x)
    ),
    "while_bool_cond_list": lambda L, x: L.while_loop(
        lambda a: bool(a.abs().sum() < 20), lambda a: [a * 2 + 1], [x]
    ),
    "while_single_out": lambda L, x: L.while_loop(lambda a: a.sum() < 10, lambda a: a + 1, (x,)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(torch_mod, name):
    lib = torch_mod if name == "python_pred" else _reference(torch_mod)
    out_t, g_t = _run(lib, CASES[name])
    out_g, g_g = _run(tg, CASES[name])
    assert isinstance(out_g, tg.Tensor) == isinstance(out_t, torch_mod.Tensor)
    assert isinstance(out_g, tuple) == isinstance(out_t, tuple)
    for a, b in zip(
        out_t if isinstance(out_t, (tuple, list)) else [out_t],
        out_g if isinstance(out_g, (tuple, list)) else [out_g],
    ):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(g_g.numpy(), g_t.numpy(), rtol=1e-6)


ERRORS = {  # torch raises RuntimeError (while_*: a Dynamo error, subclass of it) for each
    "pred_str": lambda L, x: L.cond("a", lambda a: a, lambda a: a, (x,)),
    "pred_two_elements": lambda L, x: L.cond(
        L.tensor([True, False]), lambda a: a, lambda a: a, (x,)
    ),
    "branch_not_callable": lambda L, x: L.cond(L.tensor(True), 1, lambda a: a, (x,)),
    "operands_tensor": lambda L, x: L.cond(L.tensor(True), lambda a: a, lambda a: a, x),
    "operands_int": lambda L, x: L.cond(L.tensor(True), lambda a: a, lambda a: a, (1,)),
    "while_not_callable": lambda L, x: L.while_loop(1, lambda a: a, (x,)),
    "while_float_pred": lambda L, x: L.while_loop(lambda a: a.sum(), lambda a: (a * 0,), (x,)),
    "while_shape_change": lambda L, x: L.while_loop(
        lambda a: a.sum() < 9, lambda a: (a[:2] + 1,), (x,)
    ),
    "while_dtype_change": lambda L, x: L.while_loop(
        lambda a: a.sum() < 9, lambda a: (a.double() + 1,), (x,)
    ),
    "while_bare_tensor": lambda L, x: L.while_loop(lambda a: a.sum() < 9, lambda a: a + 1, x),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_as_torch(torch_mod, name):
    if not name.startswith("while"):  # torch's while_loop checks run in Dynamo: too slow
        with pytest.raises(RuntimeError):
            ERRORS[name](torch_mod, torch_mod.ones(3))
    with pytest.raises(RuntimeError):
        ERRORS[name](tg, tg.ones(3))


def test_python_pred_skips_checks_and_untaken_branch_is_not_run():
    calls = []
    assert tg.cond(1, lambda: 7, lambda: calls.append(1)) == 7  # torch: no checks either
    out = tg.cond(tg.tensor(True), lambda a: a + 1, lambda a: calls.append(1), (tg.ones(1),))
    assert calls == [] and out.item() == 2
