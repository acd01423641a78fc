"""tg.autograd.Function: the ctx contract, errors naming the Function, higher order."""

import gc
import weakref

import numpy as np
import pytest

import tapegrad as tg

from ._autograd_helpers import assert_close


def make_cube(m):
    class Cube(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3.0 * x * x

    return Cube


def make_scale(m):
    class Scale(m.autograd.Function):
        """Non-tensor argument in the middle; several outputs."""

        @staticmethod
        def forward(ctx, x, k, y):
            ctx.k = k
            ctx.save_for_backward(x, y)
            return x * k + y, x * y

        @staticmethod
        def backward(ctx, ga, gb):
            x, y = ctx.saved_tensors
            return ga * ctx.k + gb * y, None, ga + gb * x

    return Scale


def make_exp(m):
    class Exp(m.autograd.Function):
        """Saves its output: second derivatives need it attached to the graph."""

        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out

    return Exp


X = np.array([0.5, -1.0, 2.0])
Y = np.array([1.5, 0.25, -0.5])


def test_single_output_matches_torch_and_names_node(torch_mod):
    x = tg.tensor(X, requires_grad=True)
    y = make_cube(tg).apply(x)
    assert y.grad_fn.name() == "CubeBackward"
    y.sum().backward()
    tx = torch_mod.tensor(X, requires_grad=True)
    make_cube(torch_mod).apply(tx).sum().backward()
    assert_close(x.grad, tx.grad)


def test_several_outputs_and_non_tensor_arg(torch_mod):
    outs = []
    for m in (tg, torch_mod):
        x = m.tensor(X, requires_grad=True)
        y = m.tensor(Y, requires_grad=True)
        a, b = make_scale(m).apply(x, 2.5, y)
        (a * 2.0 + b * b).sum().backward()
        outs.append((a, b, x.grad, y.grad))
    assert_close(outs[0], outs[1])


def test_one_output_unused_gets_zeros(torch_mod):
    res = []
    for m in (tg, torch_mod):
        x = m.tensor(X, requires_grad=True)
        y = m.tensor(Y, requires_grad=True)
        a, _ = make_scale(m).apply(x, 2.0, y)
        a.sum().backward()
        res.append((x.grad, y.grad))
    assert_close(res[0], res[1])


def test_forward_runs_without_grad_and_needs_input_grad():
    seen = {}

    class Probe(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, n):
            seen["grad_mode"] = tg.is_grad_enabled()
            seen["needs"] = ctx.needs_input_grad
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g, None, None

    out = Probe.apply(tg.ones(2, requires_grad=True), tg.ones(2), 3)
    assert seen == {"grad_mode": False, "needs": (True, False, False)}
    out.sum().backward()


def test_gradient_for_non_tensor_input_is_an_error():
    class Bad(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match="BadBackward.*position 1.*not a Tensor"):
        Bad.apply(tg.ones(2, requires_grad=True), 2.0).sum().backward()


def test_wrong_number_of_gradients_names_function():
    class TooFew(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="TooFewBackward.*incorrect number of gradients"):
        TooFew.apply(tg.ones(2, requires_grad=True), tg.ones(2)).sum().backward()


def test_extra_none_gradients_are_allowed():
    class Extra(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * 2.0, None, None

    x = tg.ones(2, requires_grad=True)
    Extra.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_wrong_shape_names_function():
    class WrongShape(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="WrongShapeBackward.*shape"):
        WrongShape.apply(tg.ones(3, requires_grad=True)).backward()


def test_saved_tensor_modified_in_place_names_function():
    x = tg.tensor(X, requires_grad=True)
    y = x * 1.0
    out = make_cube(tg).apply(y)
    y._vc.bump("mul_")  # what every in-place op does
    with pytest.raises(RuntimeError, match="CubeBackward saved a tensor"):
        out.sum().backward()


def test_mark_non_differentiable(torch_mod):
    def make(m):
        class SortLike(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                idx = m.tensor([2.0, 0.0, 1.0])
                ctx.mark_non_differentiable(idx)
                return x * 2.0, idx

            @staticmethod
            def backward(ctx, g, g_idx):
                return g * 2.0

        return SortLike

    for m in (tg, torch_mod):
        x = m.tensor(X, requires_grad=True)
        y, idx = make(m).apply(x)
        assert y.requires_grad and not idx.requires_grad
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_set_materialize_grads_false_passes_none(torch_mod):
    for m in (tg, torch_mod):
        seen = []

        class Two(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                return x * 1.0, x * 2.0

            @staticmethod
            def backward(ctx, ga, gb):
                seen.append(gb is None)
                return ga

        x = m.tensor(X, requires_grad=True)
        a, _ = Two.apply(x)
        a.sum().backward()
        assert seen == [True], m.__name__


def test_saved_members_freed_with_graph():
    class SaveTemp(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            tmp = x * 3.0
            ctx.save_for_backward(tmp)
            ctx.big = np.ones(10)
            return tmp * 1.0

        @staticmethod
        def backward(ctx, g):
            (tmp,) = ctx.saved_tensors
            return g * 3.0

    x = tg.ones(4, requires_grad=True)
    y = SaveTemp.apply(x)
    node = y.grad_fn
    cells = [c.cell_contents for c in node._backward.__closure__]
    ctx = next(c for c in cells if isinstance(c, tg.autograd.FunctionCtx))
    ref = weakref.ref(ctx)
    tmp_ref = weakref.ref(ctx.saved_tensors[0])
    del ctx, cells
    y.sum().backward()
    gc.collect()
    # As in PyTorch, backward frees the saved tensors; ctx (the Node's, with its other
    # attributes) lives as long as the graph does (Note [Backward twice]).
    assert tmp_ref() is None
    assert ref() is not None
    del node, y
    gc.collect()
    assert ref() is None
    y = SaveTemp.apply(x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()  # backward reads ctx.saved_tensors, freed by the first pass


def test_backward_in_tapegrad_ops_is_differentiable(torch_mod):
    res = []
    for m in (tg, torch_mod):
        x = m.tensor(X, requires_grad=True)
        y = make_cube(m).apply(x).sum() + make_exp(m).apply(x * 0.5).sum()
        (g,) = m.autograd.grad(y, x, create_graph=True)
        (gg,) = m.autograd.grad(g.sum(), x, create_graph=True)
        (ggg,) = m.autograd.grad((gg * gg).sum(), x)
        res.append((g, gg, ggg))
    assert_close(res[0], res[1])


def test_gradcheck_and_gradgradcheck_on_functions():
    x = tg.tensor(X, requires_grad=True, dtype=tg.float64)
    y = tg.tensor(Y, requires_grad=True, dtype=tg.float64)
    Scale = make_scale(tg)
    assert tg.autograd.gradcheck(lambda a, b: Scale.apply(a, 1.5, b), (x, y))
    assert tg.autograd.gradgradcheck(lambda a, b: Scale.apply(a, 1.5, b), (x, y))
    assert tg.autograd.gradgradcheck(make_exp(tg).apply, (x,))


def test_vjp_alias_and_setup_context(torch_mod):
    class ViaVjp(tg.autograd.Function):
        @staticmethod
        def forward(x):
            return x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def vjp(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2.0 * x

    x = tg.tensor(X, requires_grad=True)
    ViaVjp.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * X)


def test_no_graph_when_nothing_requires_grad():
    y = make_cube(tg).apply(tg.tensor(X))
    assert y.grad_fn is None and not y.requires_grad
    with tg.no_grad():
        y = make_cube(tg).apply(tg.tensor(X, requires_grad=True))
    assert y.grad_fn is None


def test_function_cannot_be_instantiated():
    with pytest.raises(RuntimeError, match="apply"):
        make_cube(tg)()
