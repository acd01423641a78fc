"""Note [Array backward]: first-order passes run Nodes' array rules; the results must be
bit-identical to the Tensor rules', and every pass that needs Tensors must get them."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import engine
from tapegrad.autograd.graph import iter_graph
from tapegrad.ops import OPS
from tapegrad.ops._table import NOT_IMPLEMENTED, ROWS, Unary

from .optable import ALL_CASES, OpCase


def _outputs(out):
    return [o for o in (out if isinstance(out, tuple) else (out,)) if o.requires_grad]


def _array_nodes(outs):
    return [n for n in iter_graph(outs) if n._array_backward is not None]


def _grads(case, arrays, dtype, array_rules, spy=None):
    xs = [tg.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
    outs = _outputs(case.fn(tg, *xs))
    rng = np.random.default_rng(5)
    ws = [tg.tensor(rng.uniform(-1, 1, o.shape), dtype=o.dtype) for o in outs]
    nodes = _array_nodes(outs)
    if spy is not None:
        for node in nodes:
            spy.setdefault(node.name(), 0)
            node._array_backward = _counting(node._array_backward, node.name(), spy)
    engine.ARRAY_RULES[0] = array_rules
    try:
        grads = tg.autograd.grad(outs, xs, ws, allow_unused=True)
    finally:
        engine.ARRAY_RULES[0] = True
    return nodes, grads


def _counting(fn, name, calls):
    def counted(*args):
        calls[name] += 1
        return fn(*args)

    return counted


def _embedding(m, w, padding_idx=None):
    idx = m.tensor([[0, 2, 2], [3, 0, 1]])
    return m.nn.functional.embedding(idx, w, padding_idx=padding_idx)


def _dropout(m, x):
    m.manual_seed(3)  # the same mask for both passes
    return m.nn.functional.dropout(x, 0.4)


def _nll(m, x):
    return m.nn.functional.nll_loss(m.log_softmax(x, 1), m.tensor([1, 0, 3]))


def _mlp(m, x, w1, b1, w2):
    h = m.tanh(m.nn.functional.linear(x, w1, b1)).reshape(2, 3, 5)
    z = (h.permute(0, 2, 1) @ m.tensor(np.ones((3, 2)), dtype=h.dtype)).flatten(1)
    z = m.nn.functional.linear(z, w2).softmax(-1)
    return m.nn.functional.mse_loss(z.sqrt(), m.zeros_like(z)) + z.mean(0).pow(2).sum()


# Training-step functions that are no registered op (so no op-table row): their Nodes'
# array rules (linear's AddmmBackward, embedding's, the losses' parts) checked the same way.
STEP_CASES = [
    OpCase("linear", lambda m, x, w, b: m.nn.functional.linear(x, w, b), ((4, 3), (5, 3), (5,))),
    OpCase("linear", lambda m, x, w: m.nn.functional.linear(x, w), ((2, 4, 3), (5, 3)), name="3d"),
    OpCase("embedding", _embedding, ((4, 3),)),
    OpCase("embedding", lambda m, w: _embedding(m, w, 2), ((4, 3),), name="padding_idx"),
    OpCase("dropout", _dropout, ((4, 5),)),
    OpCase("nll_loss", _nll, ((3, 4),)),
    OpCase("mlp", _mlp, ((6, 4), (5, 4), (5,), (3, 10)), domain=(0.1, 1.0)),
]


def _cases_with_array_rules():
    """``(case, dtype)`` for the op-table rows whose graph has a Node with an array rule
    (every such op), in float64 and, where the row runs in it, float32."""
    found = []
    for case in ALL_CASES + STEP_CASES:
        for dtype in (tg.float64, tg.float32):
            xs = [tg.tensor(a, dtype=dtype, requires_grad=True) for a in case.make_inputs()]
            try:
                outs = _outputs(case.fn(tg, *xs))
            except Exception:  # noqa: BLE001 - rows for float64 only (float_power_, ...)
                continue
            if outs and _array_nodes(outs):
                found.append((case, dtype))
    return found


PAIRS = _cases_with_array_rules()


# The Nodes an ordinary training step records (issue 16): each must have an array rule
# that some row above runs and checks.
STEP_NODES = {
    "AddBackward", "SubBackward", "MulBackward", "DivBackward", "NegBackward", "PowBackward",
    "ExpBackward", "LogBackward", "TanhBackward", "SigmoidBackward", "SqrtBackward",
    "RsqrtBackward", "SquareBackward", "MatmulBackward", "AddmmBackward",
    "ReshapeBackward", "TransposeBackward", "PermuteBackward", "ExpandBackward",
    "SumBackward", "MeanBackward", "SoftmaxBackward", "LogSoftmaxBackward",
    "WhereBackward", "MaskedFillBackward", "SliceBackward", "IndexBackward",
    "CatBackward", "StackBackward", "SplitBackward", "EmbeddingBackward", "CloneBackward",
    "ReluBackward",
}  # fmt: skip


def test_the_hot_ops_have_array_rules():
    for dtype in (tg.float64, tg.float32):
        names = set()
        for case, d in PAIRS:
            if d is dtype:
                xs = [tg.tensor(a, dtype=d, requires_grad=True) for a in case.make_inputs()]
                names |= {n.name() for n in _array_nodes(_outputs(case.fn(tg, *xs)))}
        assert STEP_NODES <= names, sorted(STEP_NODES - names)


@pytest.mark.parametrize(
    ("case", "dtype"), PAIRS, ids=[f"{c.id}-{str(d).split('.')[-1]}" for c, d in PAIRS]
)
def test_array_rules_give_the_tensor_rules_bits(case, dtype):
    arrays = case.make_inputs(seed=4)
    calls = {}
    nodes, fast = _grads(case, arrays, dtype, True, spy=calls)
    _, full = _grads(case, arrays, dtype, False)
    assert nodes and all(calls.values()), calls  # the array rules ran
    for f, s in zip(fast, full):
        assert (f is None) == (s is None)
        if f is not None:
            assert isinstance(f, tg.Tensor) and f.dtype == s.dtype and f.shape == s.shape
            np.testing.assert_array_equal(f.numpy(), s.numpy())


def _chain(x):
    y = x * 0.5
    y = y + 0.25
    y = y.tanh()
    return tg.sigmoid(y).exp() * x


def _spied(y, calls):
    for node in _array_nodes([y]):
        calls.setdefault(node.name(), 0)
        node._array_backward = _counting(node._array_backward, node.name(), calls)


def _reference_grad(data):
    engine.ARRAY_RULES[0] = False
    try:
        x = tg.tensor(data, requires_grad=True)
        _chain(x).sum().backward()
        return x.grad.numpy()
    finally:
        engine.ARRAY_RULES[0] = True


DATA = np.linspace(-1.5, 2.0, 7).astype(np.float32)


def test_first_order_backward_uses_array_rules():
    x = tg.tensor(DATA, requires_grad=True)
    y = _chain(x)
    calls = {}
    _spied(y, calls)
    y.sum().backward()
    assert set(calls) >= {"MulBackward", "AddBackward", "TanhBackward", "ExpBackward"}
    assert all(calls.values())
    np.testing.assert_array_equal(x.grad.numpy(), _reference_grad(DATA))


def test_hooks_see_tensors_on_the_tensor_path():
    x = tg.tensor(DATA, requires_grad=True)
    y = x * 0.5
    z = y.tanh()
    seen = []
    y.register_hook(lambda g: seen.append(("tensor", type(g))))
    z.grad_fn.register_hook(lambda gi, go: seen.append(("node", type(gi[0]), type(go[0]))))
    z.grad_fn.register_prehook(lambda go: seen.append(("pre", type(go[0]))))
    assert y.grad_fn._array_backward is None and z.grad_fn._array_backward is None
    z.retain_grad()
    (z * 2.0).sum().backward()
    assert ("tensor", tg.Tensor) in seen
    assert ("node", tg.Tensor, tg.Tensor) in seen and ("pre", tg.Tensor) in seen
    assert isinstance(z.grad, tg.Tensor)
    np.testing.assert_array_equal(z.grad.numpy(), np.full(7, 2.0, np.float32))


def test_create_graph_records_with_the_tensor_rules():
    x = tg.tensor(DATA.astype(np.float64), requires_grad=True)
    y = _chain(x)
    calls = {}
    _spied(y, calls)
    (g,) = tg.autograd.grad(y.sum(), x, create_graph=True)
    assert not any(calls.values())
    assert g.requires_grad
    (gg,) = tg.autograd.grad(g.sum(), x)
    torch = pytest.importorskip("torch")
    t = torch.tensor(DATA.astype(np.float64), requires_grad=True)
    ty = torch.sigmoid((t * 0.5 + 0.25).tanh()).exp() * t
    (tg_,) = torch.autograd.grad(ty.sum(), t, create_graph=True)
    (tgg,) = torch.autograd.grad(tg_.sum(), t)
    np.testing.assert_allclose(g.detach().numpy(), tg_.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-10)


def test_anomaly_mode_checks_tensors():
    x = tg.tensor(DATA, requires_grad=True)
    with tg.autograd.detect_anomaly():
        y = _chain(x)
        calls = {}
        _spied(y, calls)
        y.sum().backward()
    assert not any(calls.values())
    np.testing.assert_array_equal(x.grad.numpy(), _reference_grad(DATA))


def test_retain_graph_runs_again_and_release_still_refuses():
    x = tg.tensor(DATA, requires_grad=True)
    y = _chain(x).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), first + first)
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_in_place_change_of_a_saved_output_is_caught():
    x = tg.tensor(DATA, requires_grad=True)
    y = (x * 1.0).tanh()
    y.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()


def test_grad_of_an_intermediate_is_captured_as_a_tensor():
    x = tg.tensor(DATA, requires_grad=True)
    y = x * 0.5
    z = y.tanh().exp()
    (gy,) = tg.autograd.grad(z.sum(), y)
    assert isinstance(gy, tg.Tensor)
    ty = np.tanh(DATA * np.float32(0.5))
    np.testing.assert_allclose(gy.numpy(), np.exp(ty) * (1 - ty * ty), rtol=1e-6)


def test_vmap_of_grad_and_batched_grads_match_the_tensor_path():
    batch = tg.tensor(np.stack([DATA, DATA[::-1] * 0.5]), requires_grad=False)

    def f(v):
        return _chain(v).sum()

    fast = tg.func.vmap(tg.func.grad(f))(batch)
    engine.ARRAY_RULES[0] = False
    try:
        full = tg.func.vmap(tg.func.grad(f))(batch)
    finally:
        engine.ARRAY_RULES[0] = True
    np.testing.assert_array_equal(fast.numpy(), full.numpy())
    # is_grads_batched pushes a batch prefix through the rules, which the Tensor rules take
    eye = tg.tensor(np.eye(7, dtype=np.float32))
    jacs = []
    for array_rules in (True, False):
        x = tg.tensor(DATA, requires_grad=True)
        engine.ARRAY_RULES[0] = array_rules
        try:
            jacs.append(tg.autograd.grad(_chain(x), x, eye, is_grads_batched=True)[0].numpy())
        finally:
            engine.ARRAY_RULES[0] = True
    np.testing.assert_array_equal(jacs[0], jacs[1])
    np.testing.assert_array_equal(np.diag(jacs[0]), _reference_grad(DATA))


def test_a_batched_pass_runs_the_tensor_rules(monkeypatch):
    x = tg.tensor(DATA, requires_grad=True)
    y = _chain(x)
    calls = {}
    _spied(y, calls)
    monkeypatch.setattr(tg.autograd.graph.BATCH, "prefix", (1,))
    g = tg.tensor(np.ones((1, 7), np.float32))
    engine.run_backward((y,), [g], True, False, [engine._target_of(x, 0)], False)
    assert not any(calls.values())


def test_graph_cache_replays_the_same_gradients():
    def step(x):
        _chain(x).sum().backward()

    cached = tg.jit.cache(step)
    x = tg.tensor(DATA, requires_grad=True)
    for _ in range(4):
        x.grad = None
        cached(x)
    np.testing.assert_array_equal(x.grad.numpy(), _reference_grad(DATA))


def test_complex_products_drop_the_array_rule():
    a = tg.tensor(np.array([1 + 2j, -0.5j], np.complex64), requires_grad=True)
    b = tg.tensor(np.array([0.5 - 1j, 2.0 + 0j], np.complex64), requires_grad=True)
    y = a * b
    assert y.grad_fn._array_backward is None
    (y.abs() ** 2).sum().backward()
    want = 2 * a.detach().numpy() * np.abs(b.detach().numpy()) ** 2
    np.testing.assert_allclose(a.grad.numpy(), want, rtol=1e-5)


def test_check_graph_finds_a_wrong_array_rule(monkeypatch):
    from tapegrad.ops import elementwise

    monkeypatch.setattr(elementwise, "_tanh_array", lambda g, out: (g * out,))
    x = tg.tensor(DATA.astype(np.float64), requires_grad=True)
    with tg.autograd.checkable():
        y = (x * 0.5).tanh().exp()
    report = tg.autograd.check_graph(y, raise_exception=False)
    assert report is not None and report.name == "TanhBackward"


def _both_paths(fn, *arrays):
    """``fn(*leaves)`` backward with the array rules and with the Tensor rules: the leaves'
    ``.grad`` arrays of each pass."""
    out = []
    for array_rules in (True, False):
        xs = [tg.tensor(a, requires_grad=True) for a in arrays]
        engine.ARRAY_RULES[0] = array_rules
        try:
            fn(*xs).backward()
        finally:
            engine.ARRAY_RULES[0] = True
        out.append([x.grad.numpy() for x in xs])
    return out


def test_fresh_arrays_sum_in_place_and_reach_leaves():
    rng = np.random.default_rng(0)
    x1, x2 = rng.standard_normal((2, 4, 3)).astype(np.float32)
    w, b = rng.standard_normal((5, 3)).astype(np.float32), np.ones(5, np.float32)

    def two_uses(x, w, b):  # w gets two fresh GEMM results: the second added into the first
        lin = tg.nn.functional.linear
        return (lin(x, w, b) * lin(tg.tensor(x2), w) + (x @ w.T).sum(0)).sum()

    fast, full = _both_paths(two_uses, x1, w, b)
    for f, s in zip(fast, full):
        np.testing.assert_array_equal(f, s)
    # a second backward accumulates into the .grad the first one stored without a copy
    xs = [tg.tensor(a, requires_grad=True) for a in (x1, w, b)]
    two_uses(*xs).backward()
    first = [x.grad.numpy().copy() for x in xs]
    two_uses(*xs).backward()
    for x, f in zip(xs, first):
        np.testing.assert_array_equal(x.grad.numpy(), f + f)


def test_split_pieces_without_a_gradient_get_zeros():
    data = np.arange(12.0).reshape(6, 2)

    def step(x):
        a, _, c = x.split(2)
        return (a * 2.0).sum() + c.exp().sum()

    fast, full = _both_paths(step, data)
    np.testing.assert_array_equal(fast[0], full[0])
    assert not fast[0][2:4].any()


def test_a_gradient_kept_by_an_array_rule_is_not_written_into():
    # t + t hands the same array to both operands of the product's rule; the owned sum
    # made for the leaf must be a new array, not one of them
    x = tg.tensor(DATA, requires_grad=True)
    y = x.reshape(7, 1).expand(7, 3)
    (y.sum(1) + x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(7, 4.0, np.float32))


def _runs_on_arrays(row, x):
    """Whether the row's derivative, given arrays for g, x and out, computes an array: it is
    then written in operators alone, which is what ``arrays=True`` certifies."""
    try:
        with np.errstate(all="ignore"):
            return isinstance(row.grad(np.ones_like(x), x, row.kernel(x)), np.ndarray)
    except Exception:  # noqa: BLE001 - a rule in tapegrad ops refuses arrays
        return False


def test_unary_rows_whose_rule_runs_on_arrays_get_array_rules():
    """Note [Rules in operators]: a Unary row whose derivative runs on arrays gives its
    Node an array rule. The set is derived from the rules themselves, not from the rows'
    ``arrays`` flags: a flag that drifted to False silently drops the fast path, which the
    bit comparison above cannot notice (it compares only the Nodes that have one)."""
    rows = {row.name: row for row in ROWS.values() if isinstance(row, Unary)}
    fast, missing = [], []
    for name, row in sorted(rows.items()):
        if row.grad is None or row.grad is NOT_IMPLEMENTED:
            continue
        lo, hi = row.domain
        x = np.linspace(lo, hi, 5)[1:-1]
        if not _runs_on_arrays(row, x):
            continue
        fast.append(name)
        if OPS[name].fn(tg.tensor(x, requires_grad=True)).grad_fn._array_backward is None:
            missing.append(name)
    assert len(fast) >= 10, fast  # the rows above really were found
    assert not missing, missing
