"""Backward twice without retain_graph (Note [Backward twice] in autograd/graph.py).

PyTorch frees only what a Node saved: a second backward through Nodes that saved
nothing works; one that reaches a Node whose saved tensors were freed raises. The
table tests run every op-table row: the rule itself (raise exactly when some Node on
the way saved a tensor), and against PyTorch (where PyTorch runs a second backward,
so does tapegrad, with the same gradients).

Nodes that keep index arrays or masks (``x[idx]``, ``max(dim=)``, ``where``, max
pooling) count as having saved something (``keeps_arrays``), as PyTorch saves the
indices. tapegrad is more permissive than PyTorch in one place, on purpose: a product
with a Python number (``x * 2.0``) keeps the float, while PyTorch saves it as a wrapped
0-d tensor and raises on a second backward. No program that runs under PyTorch stops here.
"""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd.graph import iter_graph

from .optable import ALL_CASES

FLOAT_CASES = [c for c in ALL_CASES if c.torch]
IDS = [c.id for c in FLOAT_CASES]


def _backward(m, outs, weights):
    pairs = [(o, w) for o, w in zip(outs, weights) if w is not None and o.requires_grad]
    m.autograd.backward([o for o, _ in pairs], [w for _, w in pairs])


def _setup(case, m, seed=4):
    dtype = tg.float64 if m is tg else m.float64
    xs = [m.tensor(a, dtype=dtype, requires_grad=True) for a in case.make_inputs(seed=seed)]
    out = case.fn(m, *xs)
    outs = out if isinstance(out, tuple) else (out,)
    rng = np.random.default_rng(5)
    ws = [
        m.tensor(rng.uniform(-1, 1, tuple(o.shape)), dtype=dtype)
        if o.dtype in (tg.float64, getattr(m, "float64", None)) and o.requires_grad
        else None
        for o in outs
    ]
    if all(w is None for w in ws):
        pytest.skip("no differentiable output")
    return xs, outs, ws


def _saved_something(outs) -> bool:
    return any(
        n._saved_versions is not None or n._saved_output is not None for n in iter_graph(outs)
    )


@pytest.mark.parametrize("case", FLOAT_CASES, ids=IDS)
def test_second_backward_raises_only_where_a_node_saved_something(case):
    xs, outs, ws = _setup(case, tg)
    saved = _saved_something(outs)
    _backward(tg, outs, ws)
    first = [None if x.grad is None else x.grad.numpy().copy() for x in xs]
    if saved:
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            _backward(tg, outs, ws)
        return
    _backward(tg, outs, ws)
    for x, g in zip(xs, first):
        if g is not None:
            np.testing.assert_allclose(x.grad.numpy(), 2 * g, rtol=1e-12, atol=1e-14)


# Nodes whose rule keeps only a Python number: PyTorch saves it as a wrapped 0-d tensor
# (and raises on a second backward), tapegrad keeps the float and runs.
SCALAR_NODES = {"MulBackward", "MulInplaceBackward", "DivBackward"}


# Rows where tapegrad's rule needs nothing at all on a 0-d input (PyTorch's general
# rule still saves its operands); row id -> why.
SAVES_NOTHING_ON_0D = {
    "cumprod-0d": "the cumulative product of one element is the identity",
    "gather-0d": "gathering from a 0-d tensor is a plain (basic) view, with no index array",
}


def _runs_only_through_scalar_products(outs) -> bool:
    nodes = [n for n in iter_graph(outs) if type(n).__name__ != "AccumulateGrad"]
    unsaved_scalar = [
        n
        for n in nodes
        if n.name() in SCALAR_NODES
        and n._saved_versions is None
        and sum(e is not None for e in n.next_functions) == 1
    ]
    return bool(unsaved_scalar)


@pytest.mark.parametrize("case", FLOAT_CASES, ids=IDS)
def test_second_backward_runs_wherever_torch_runs_it(case, torch_mod):
    theirs, refs, w_ref = _setup(case, torch_mod)
    _backward(torch_mod, refs, w_ref)
    ours, outs, ws = _setup(case, tg)
    _backward(tg, outs, ws)
    try:
        _backward(torch_mod, refs, w_ref)
    except RuntimeError:
        # PyTorch raises: so does tapegrad, unless the only difference is a product with
        # a Python number (the one place tapegrad is more permissive on purpose).
        try:
            _backward(tg, outs, ws)
        except RuntimeError as e:
            assert "backward through the graph a second time" in str(e)
        else:
            assert case.id in SAVES_NOTHING_ON_0D or _runs_only_through_scalar_products(outs), (
                f"{case.id}: PyTorch raises on a second backward, tapegrad runs"
            )
        return
    _backward(tg, outs, ws)
    for t, r in zip(ours, theirs):
        if r.grad is None:
            assert t.grad is None or np.allclose(t.grad.numpy(), 0)
        else:
            np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=1e-6, atol=1e-8)


def test_cast_reused_by_two_graphs_like_an_lbfgs_closure():
    # The program: a float64 leaf cast once, reused by every closure call.
    x = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64, requires_grad=True).float()
    leaf = x.grad_fn.next_functions[0][0].variable
    for _ in range(3):
        loss = (x.exp() * x).sum()
        loss.backward()
    e = np.exp(np.float32([0.5, -1.0, 2.0]))
    want = 3 * (e * np.float32([0.5, -1.0, 2.0]) + e)
    np.testing.assert_allclose(leaf.grad.numpy(), want, rtol=1e-6)


def test_same_graph_twice_through_add_sum_view_and_cast(torch_mod):
    def build(m, x):
        y = x.float()
        return (y.view(2, 2) + 1.0).sum(1)[0] + y.reshape(-1).sum()

    a = np.arange(4.0)
    x = tg.tensor(a, dtype=tg.float64, requires_grad=True)
    xt = torch_mod.tensor(a, dtype=torch_mod.float64, requires_grad=True)
    out, ref = build(tg, x), build(torch_mod, xt)
    for _ in range(2):
        out.backward()
        ref.backward()
    np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())


def test_second_backward_raises_at_a_saving_node_with_the_usual_message():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x + 1.0).exp().sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"ExpBackward has already freed its saved arrays"):
        y.backward()
    z = (x + 1.0).exp().sum()
    z.backward(retain_graph=True)
    z.backward()  # retain_graph still keeps everything
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.exp([2.0, 3.0]), rtol=1e-6)


def test_autograd_grad_twice_without_retain_graph():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 3.0 + x).sum()
    (g1,) = tg.autograd.grad(y, x)
    (g2,) = tg.autograd.grad(y, x)
    np.testing.assert_array_equal(g1.numpy(), g2.numpy())


def _functions(m):
    class SavesUnused(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class ReadsSaved(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x

    class ReadsNothingSaved(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            assert ctx.saved_tensors == ()
            return g * 2

    return SavesUnused, ReadsSaved, ReadsNothingSaved


@pytest.mark.parametrize("which", [0, 1, 2], ids=["saves-unused", "reads-saved", "reads-empty"])
def test_custom_function_second_backward_matches_torch(which, torch_mod):
    results = []
    for m in (tg, torch_mod):
        fn = _functions(m)[which]
        x = m.tensor([1.0, 3.0], requires_grad=True)
        y = fn.apply(x).sum()
        y.backward()
        try:
            y.backward()
            results.append(("ok", np.asarray(x.grad.detach().numpy())))
        except RuntimeError as e:
            assert "backward through the graph a second time" in str(e)
            results.append(("raises", None))
    (ours, g_ours), (theirs, g_theirs) = results
    assert ours == theirs
    if g_theirs is not None:
        np.testing.assert_allclose(g_ours, g_theirs)


def test_backward_frees_index_arrays_and_masks():
    """Nodes that keep index arrays or masks (max pooling, x[idx], where, max(dim=)) free
    them in backward like saved tensors: after one backward the graph holds no array."""
    from tapegrad import nn
    from tapegrad.autograd.graph import saved_bytes

    model = nn.Sequential(
        nn.Conv2d(1, 2, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(18, 3)
    )
    x = tg.randn(4, 1, 8, 8)
    h = model(x)
    idx = tg.tensor([0, 2, 2])
    loss = (tg.where(h > 0, h, h * 0.1)[:, idx].max(dim=1).values + h[1:].sum()).sum()
    assert saved_bytes(loss) > 0
    loss.backward()
    assert saved_bytes(loss) == 0
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_max_pool_second_backward_raises_like_torch(torch_mod):
    for m in (tg, torch_mod):
        x = m.ones(1, 1, 4, 4, requires_grad=True)
        y = m.nn.functional.max_pool2d(x, 2).sum()
        y.backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            y.backward()


def test_nodes_that_run_twice_do_not_keep_their_inputs_alive():
    """cat, stack and a custom Function keep only shapes and dtypes after backward, so
    the inputs they joined are freed as soon as nothing else holds them."""
    import gc
    import weakref

    class Double(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * 2.0

    w = tg.ones(3, requires_grad=True)
    a, b = w * 1.5, w + 1.0  # activations, held only by the graph after this line
    refs = [weakref.ref(a), weakref.ref(b)]
    joined = tg.cat([a, b]).sum() + tg.stack([a, b]).sum() + Double.apply(a).sum()
    del a, b
    joined.backward()
    gc.collect()
    assert all(r() is None for r in refs)
    joined.backward()  # every Node on the way saved nothing
    # d/dw per pass: cat 1.5 + 1, stack 1.5 + 1, Double 2 * 1.5
    np.testing.assert_allclose(w.grad.numpy(), np.full(3, 2 * (2.5 + 2.5 + 3.0)))


def test_custom_function_second_backward_names_its_node():
    # like the built-in nodes (ExpBackward above), the message names the Function's node
    class Square(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = Square.apply(x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"\(SquareBackward has already freed its saved"):
        y.backward()
