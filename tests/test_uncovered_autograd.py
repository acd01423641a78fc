"""autograd/ paths that no test executed (the mutation line map of 2026-12-02, tools/covmap.py).

Each test runs a branch of autograd/ the rest of the suite never reached and compares
values, gradients or error types with torch (or with the definition), so a small
change there fails.
"""

import re

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.autograd.forward_ad as fwAD
from tapegrad.autograd import functional as F


def _x(lib, rg=True):
    return lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=rg)


def _raises_like(torch, ours, theirs):
    """Both raise, and tapegrad's error is an instance of torch's error type."""
    with pytest.raises(Exception) as t_err:
        theirs()
    with pytest.raises(type(t_err.value)):
        ours()


# -- engine.py ------------------------------------------------------------------------------


def test_grad_refuses_materialize_grads_with_allow_unused_false_like_torch(torch_mod):
    def call(lib):
        x = _x(lib)
        return lambda: lib.autograd.grad(
            (x * 2).sum(), x, materialize_grads=True, allow_unused=False
        )

    _raises_like(torch_mod, call(tg), call(torch_mod))
    with pytest.raises(ValueError, match="allow_unused"):
        call(tg)()


def test_backward_with_too_few_gradients_raises_runtime_error_like_torch(torch_mod):
    def call(lib):
        x = _x(lib)
        one = lib.tensor(1.0, dtype=lib.float64)
        return lambda: lib.autograd.backward([(x * 2).sum(), (x * 3).sum()], [one])

    _raises_like(torch_mod, call(tg), call(torch_mod))
    with pytest.raises(RuntimeError, match="1 gradients for 2 tensors"):
        call(tg)()


def test_backward_of_a_non_tensor_raises():
    # torch raises AssertionError("Expected output to be a torch.Tensor"); a TypeError
    # naming the type is the clearer error
    with pytest.raises(TypeError, match="expected Tensors, got float"):
        tg.autograd.backward([1.0])


def test_grad_with_respect_to_a_tensor_without_grad_raises_like_torch(torch_mod):
    def call(lib):
        x, z = _x(lib), lib.ones(3, dtype=lib.float64)
        return lambda: lib.autograd.grad((x * 2).sum(), [z])

    _raises_like(torch_mod, call(tg), call(torch_mod))
    with pytest.raises(RuntimeError, match=r"inputs\[0\] \(shape \[3\]\) does not require grad"):
        call(tg)()


def test_an_upstream_gradient_that_requires_grad_is_detached_without_create_graph(torch_mod):
    got = []
    for lib in (torch_mod, tg):
        x = _x(lib)
        g = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
        (x * x).backward(g)
        got.append((x.grad.requires_grad, x.grad.grad_fn is None, x.grad.tolist(), g.grad))
    assert got[0] == got[1] == (False, True, [1.0, -4.0, 12.0], None)


def test_a_node_hook_returning_arrays_is_refused(torch_mod):
    # a hook's replacement gradients must be Tensors (or None), one per input
    for lib in (torch_mod, tg):
        x, w = _x(lib), _x(lib)
        y = x * w
        y.grad_fn.register_hook(lambda gi, go: (np.ones(3), np.ones(3)))
        with pytest.raises((TypeError, RuntimeError)):
            y.sum().backward()
    x, w = _x(tg), _x(tg)
    y = x * w
    y.grad_fn.register_hook(lambda gi, go: (np.ones(3), np.ones(3)))
    with pytest.raises(TypeError, match="returned a ndarray as the gradient of input 0"):
        y.sum().backward()


# -- functional.py --------------------------------------------------------------------------


def test_functional_errors_have_torchs_types(torch_mod):
    TF = torch_mod.autograd.functional
    xt, xg = _x(torch_mod), _x(tg)
    cube_t, cube_g = (lambda a: (a**3).sum()), (lambda a: (a**3).sum())
    cases = [
        (
            lambda: TF.jacobian(lambda a: a * 2, xt, strategy="forward-mode"),
            lambda: F.jacobian(lambda a: a * 2, xg, strategy="forward-mode"),
        ),
        (
            lambda: TF.hessian(cube_t, xt, outer_jacobian_strategy="forward-mode"),
            lambda: F.hessian(cube_g, xg, outer_jacobian_strategy="forward-mode"),
        ),
        (
            lambda: TF.hessian(cube_t, xt, strict=True, vectorize=True),
            lambda: F.hessian(cube_g, xg, strict=True, vectorize=True),
        ),
        (
            lambda: TF.vjp(lambda a, b: (a * b, a + b), (xt, xt), (torch_mod.ones(3),)),
            lambda: F.vjp(lambda a, b: (a * b, a + b), (xg, xg), (tg.ones(3),)),
        ),
        (
            lambda: TF.hvp(lambda a: 3.0, xt, torch_mod.ones(3, dtype=torch_mod.float64)),
            lambda: F.hvp(lambda a: 3.0, xg, tg.ones(3, dtype=tg.float64)),
        ),
        (
            lambda: TF.hvp(
                lambda a: (a * 2).sum(), xt, torch_mod.ones(3, dtype=torch_mod.float64), strict=True
            ),
            lambda: F.hvp(lambda a: (a * 2).sum(), xg, tg.ones(3, dtype=tg.float64), strict=True),
        ),
    ]
    for theirs, ours in cases:
        _raises_like(torch_mod, ours, theirs)
    # ours name the function and what is wrong
    with pytest.raises(ValueError, match="expected strategy to be 'forward-mode' or"):
        F.jacobian(lambda a: a * 2, xg, strategy="sideways")
    with pytest.raises(ValueError, match="expected outer_jacobian_strategy"):
        F.hessian(cube_g, xg, outer_jacobian_strategy="sideways")
    with pytest.raises(NotImplementedError, match="hessian: outer_jacobian_strategy='forward"):
        F.hessian(cube_g, xg, outer_jacobian_strategy="forward-mode")
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length: should be 2 but got 1"):
        F.vjp(lambda a, b: (a * b, a + b), (xg, xg), (tg.ones(3),))
    with pytest.raises(RuntimeError, match="hvp: the output .* independent of input 0"):
        F.hvp(lambda a: (a * 2).sum(), xg, tg.ones(3, dtype=tg.float64), strict=True)


@pytest.mark.parametrize("fn", ["hvp", "vhp"])
def test_hvp_of_a_linear_function_is_zero_like_torch(torch_mod, fn):
    outs = []
    for lib, mod in ((torch_mod, torch_mod.autograd.functional), (tg, F)):
        x = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64)
        v = lib.tensor([0.3, 0.1, -2.0], dtype=lib.float64)
        val, prod = getattr(mod, fn)(lambda a: (a * 2.0).sum(), x, v)
        outs.append((val.item(), prod.tolist()))
    assert outs[0] == outs[1] == (-1.0, [0.0, 0.0, 0.0])


def test_jvp_of_a_constant_is_zero_like_torch(torch_mod):
    outs = []
    for lib, mod in ((torch_mod, torch_mod.autograd.functional), (tg, F)):
        x = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64)
        v = lib.ones(3, dtype=lib.float64)
        out, tangent = mod.jvp(lambda a: lib.full((2,), 1.5, dtype=lib.float64), x, v)
        outs.append((out.tolist(), tangent.tolist()))
    assert outs[0] == outs[1] == ([1.5, 1.5], [0.0, 0.0])


@pytest.mark.parametrize("fn", ["vjp", "jvp"])
def test_functional_products_with_create_graph_stay_differentiable_like_torch(torch_mod, fn):
    res = []
    for lib, mod in ((torch_mod, torch_mod.autograd.functional), (tg, F)):
        x = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64, requires_grad=True)
        v = lib.tensor([0.3, 0.1, -2.0], dtype=lib.float64)
        out, prod = getattr(mod, fn)(lambda a: a**3, x, v, create_graph=True)
        (g,) = lib.autograd.grad(prod.sum(), x)  # d/dx sum(3 x^2 v) = 6 x v
        res.append((out.requires_grad, prod.requires_grad, g.tolist()))
    assert res[0][:2] == res[1][:2] == (True, True)
    np.testing.assert_allclose(res[1][2], res[0][2], rtol=1e-12)


def test_vectorized_jacobian_of_a_constant_is_zero_like_torch(torch_mod):
    outs = []
    for lib, mod in ((torch_mod, torch_mod.autograd.functional), (tg, F)):
        x = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64)
        J = mod.jacobian(lambda a: lib.ones(2, dtype=lib.float64), x, vectorize=True)
        outs.append((tuple(J.shape), J.tolist()))
    assert outs[0] == outs[1]
    assert outs[1][0] == (2, 3)


# -- batched.py (is_grads_batched) -----------------------------------------------------------


def test_batched_grad_of_one_row_with_create_graph_differentiates_the_rows(torch_mod):
    # one row takes the row-by-row path; the rows require grad and create_graph records
    # the pick of each row, so the result differentiates with respect to them
    res = []
    for lib in (torch_mod, tg):
        x = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64, requires_grad=True)
        V = lib.tensor([[0.3, 0.1, -2.0]], dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(x**3, x, V, is_grads_batched=True, create_graph=True)
        dV, dx = lib.autograd.grad((g * g).sum(), (V, x))
        res.append([g.tolist(), dV.tolist(), dx.tolist()])
    for ours, theirs in zip(res[1], res[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


# -- function.py (custom Functions) ---------------------------------------------------------


def test_function_without_forward_or_backward_raises_not_implemented_like_torch(torch_mod):
    for lib in (torch_mod, tg):

        class NoForward(lib.autograd.Function):
            pass

        class NoBackward(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

        with pytest.raises(NotImplementedError):
            NoForward.apply(_x(lib))
        y = NoBackward.apply(_x(lib)).sum()
        with pytest.raises(NotImplementedError):
            y.backward()


def test_function_setup_context_default_raises_not_implemented():
    with pytest.raises(NotImplementedError):
        tg.autograd.Function.setup_context(None, (), None)


def test_function_vjp_is_its_backward():
    # tapegrad's Function.vjp is an alias of backward (torch's base vjp only raises)
    class Triple(tg.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 3

        @staticmethod
        def backward(ctx, g):
            return g * 3

    g = tg.tensor([1.0, 2.0], dtype=tg.float64)
    assert Triple.vjp(None, g).tolist() == [3.0, 6.0]


def test_save_for_backward_of_a_non_tensor_raises_type_error_like_torch(torch_mod):
    for lib in (torch_mod, tg):

        class Save(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a, 3)
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return g

        with pytest.raises(TypeError):
            Save.apply(_x(lib))


def test_saved_tensors_read_in_forward_are_the_saved_ones():
    class Peek(tg.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a, None)
            seen = ctx.saved_tensors
            assert isinstance(seen, tuple) and seen[0] is a and seen[1] is None
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = _x(tg)
    Peek.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_function_gradients_for_inputs_without_grad_are_dropped_like_torch(torch_mod):
    # a gradient of the wrong shape for an input that needs none is ignored, as in torch
    res = []
    for lib in (torch_mod, tg):

        class Two(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * 2 + b

            @staticmethod
            def backward(ctx, g):
                return g * 2, lib.ones(5, dtype=lib.float64)

        x, b = _x(lib), lib.ones(3, dtype=lib.float64)
        Two.apply(x, b).sum().backward()
        res.append(x.grad.tolist())
    assert res[0] == res[1] == [2.0, 2.0, 2.0]


def test_function_gradient_of_another_dtype_is_cast_to_the_inputs_like_torch(torch_mod):
    res = []
    for lib in (torch_mod, tg):

        class Narrow(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return (g * 2).float()

        x = _x(lib)
        Narrow.apply(x).sum().backward()
        res.append((str(x.grad.dtype).split(".")[-1], x.grad.tolist()))
    assert res[0] == res[1] == ("float64", [2.0, 2.0, 2.0])


# -- forward_ad.py ---------------------------------------------------------------------------


def test_forward_ad_errors_like_torch(torch_mod):
    tAD = torch_mod.autograd.forward_ad
    for ad in (tAD, fwAD):
        with pytest.raises(RuntimeError):
            ad.exit_dual_level()
    with pytest.raises(RuntimeError, match="no open dual level"):
        fwAD.exit_dual_level()
    for lib, ad in ((torch_mod, tAD), (tg, fwAD)):
        with ad.dual_level():
            with pytest.raises(RuntimeError, match="size|shape"):
                ad.make_dual(lib.ones(3), lib.ones(2))
            d = ad.make_dual(lib.ones(3), lib.ones(3))
            with pytest.raises(RuntimeError, match="Invalid level given to _fw_primal"):
                ad.unpack_dual(d, level=5)
    with fwAD.dual_level(), pytest.raises(TypeError, match="expected Tensors"):
        fwAD.make_dual(1.0, 2.0)


# -- graph.py --------------------------------------------------------------------------------


def test_node_repr_and_num_outputs(torch_mod):
    x = _x(tg)
    node = (x * 2).grad_fn
    theirs = repr((_x(torch_mod) * 2).grad_fn)
    assert re.fullmatch(r"<\w+ object at 0x[0-9a-f]+>", theirs)
    assert repr(node) == f"<{node.name()} object at {id(node):#x}>"
    assert node.num_outputs == 1
    parts = tg.split(x, 1)
    assert parts[0].grad_fn.num_outputs == 3


def test_stale_views_are_recorded_again_like_torch(torch_mod):
    # a view whose base changed in place: as the second operand of a binary op, as
    # the input of grad(), and as the root of backward
    res = []
    for lib in (torch_mod, tg):
        a0 = lib.arange(4.0, requires_grad=True)
        a = a0.clone()
        v = a[:2]
        a.mul_(2)
        w = lib.tensor([1.5, -1.0], requires_grad=True)
        (w * v).sum().backward()
        a = a0.clone()
        v = a[:2]
        a.mul_(2)
        (gv,) = lib.autograd.grad(v.exp().sum(), v)
        res.append((w.grad.tolist(), a0.grad.tolist(), gv.tolist()))
    assert res[0][0] == res[1][0] == [0.0, 2.0]
    assert res[0][1] == res[1][1] == [3.0, -2.0, 0.0, 0.0]
    np.testing.assert_allclose(res[1][2], res[0][2], rtol=1e-7)


def test_post_accumulate_hook_on_a_tensor_without_grad_raises_like_torch(torch_mod):
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="doesn't require gradient"):
            lib.ones(3).register_post_accumulate_grad_hook(lambda t: None)


# -- gradcheck.py, variable.py ---------------------------------------------------------------


def test_gradgradcheck_takes_a_single_tensor():
    x = tg.tensor([0.5, 1.5], dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda a: (a**3).sum(), x)
    with pytest.raises(RuntimeError):
        tg.autograd.gradgradcheck(_WrongSecond.apply, x)


class _WrongSecond(tg.autograd.Function):
    """x**3 with a first derivative that is right only to first order (3x^2 via a
    constant 3*x0^2 at each x: its own derivative, and so the second order, is wrong)."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a**3

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * tg.tensor(3.0 * a.detach().numpy() ** 2)


def test_variable_without_data_is_an_empty_tensor_like_torch(torch_mod):
    theirs = torch_mod.autograd.Variable()
    ours = tg.autograd.Variable()
    assert tuple(ours.shape) == tuple(theirs.shape) == (0,)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert not ours.requires_grad
