"""Tests for survivors of the 21st mutation session in src/tapegrad/autograd (batched.py,
checkgraph.py, engine.py, forward_ad.py, gradcheck.py, graph.py, profiler.py), each seen
to fail on its mutant. Where both ways compute the same values (a fast path), the test
checks which path runs, as tests/test_mutation_gaps_seed1807.py does."""

import threading
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import batched, engine, forward_ad, graph


def _counting(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def wrapper(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return calls


# -- batched.py: autograd.grad(..., is_grads_batched=True) -----------------------------------


def test_batched_grad_probe_leaves_grad_alone_and_records_nothing(torch_mod):
    """batched.py:70 [const] 'False' -> 'True' (both): the probe that checks a batched
    result is one plain backward: it records no graph (a hook sees a gradient that does
    not require grad, as in torch) and accumulates into no ``.grad``."""
    for lib in (torch_mod, tg):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * x
        seen = []
        y.register_hook(lambda g, seen=seen: seen.append(g.requires_grad))
        v = lib.tensor([[1.0, 0.0, 2.0], [0.5, 1.0, -1.0]])
        (g,) = lib.autograd.grad(y * y, x, v, is_grads_batched=True)
        np.testing.assert_allclose(g.numpy(), 4 * x.detach().numpy() ** 3 * v.numpy(), rtol=1e-6)
        assert seen and not any(seen), (lib.__name__, seen)
        assert x.grad is None and not g.requires_grad


def test_batched_grad_accepts_a_batched_result_with_the_same_infinities(torch_mod, monkeypatch):
    """batched.py:102 [drop] 'return bool(np.array_equal(np.isfinite(a), np.isfinite(b)))'
    -> 'pass': a batched gradient with inf (sqrt at 0) is kept when the probe has
    non-finite values in the same places (inf - inf is NaN there): no fallback to one
    backward per row. The probe's inf - inf warned (RuntimeWarning from NumPy) before;
    torch warns nothing."""

    def refuse(*args, **kwargs):
        raise AssertionError("fell back to one backward per row")

    v = np.array([[1.0, 2.0, 3.0], [2.0, 1.0, 1.0], [1.0, 1.0, 5.0]], np.float32)
    xt = torch_mod.tensor([0.0, 1.0, 4.0], requires_grad=True)
    (want,) = torch_mod.autograd.grad(xt.sqrt(), xt, torch_mod.tensor(v), is_grads_batched=True)
    monkeypatch.setattr(batched, "_row_loop", refuse)
    x = tg.tensor([0.0, 1.0, 4.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch warns nothing (nor does the probe's inf - inf)
        (got,) = tg.autograd.grad(x.sqrt(), x, tg.tensor(v), is_grads_batched=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert np.isinf(got.numpy()[:, 0]).all()


class _Twice(tg.autograd.Function):
    """2x with a backward that knows no batch dimension (so is_grads_batched falls back
    to one backward per row)."""

    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape) * 2


def test_batched_grad_row_loop_with_create_graph_matches_torch(torch_mod, monkeypatch):
    """batched.py:128 [binop] 'Tensor._wrap(pick) @ flat' -> '(Tensor._wrap(pick) * flat)':
    one backward per row picks row b of grad_outputs that require grad (create_graph=True)
    with a one-hot matmul, differentiably."""
    loops = _counting(monkeypatch, batched, "_row_loop")
    v0 = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    w = np.array([[0.5, -1.0, 2.0], [1.0, 3.0, -2.0]])
    res = []
    for lib, f in ((torch_mod, lambda x: x * 2), (tg, _Twice.apply)):
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        v = lib.tensor(v0, requires_grad=True)
        (g,) = lib.autograd.grad(f(x), x, v, is_grads_batched=True, create_graph=True)
        (gv,) = lib.autograd.grad((g * lib.tensor(w)).sum(), v)
        res.append((g.detach().numpy(), gv.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-12)
    np.testing.assert_allclose(res[1][1], 2 * w, rtol=1e-12)
    assert len(loops) == 1  # _Twice's backward cannot run batched


def test_batched_grad_of_no_outputs_raises_index_error_like_torch(torch_mod):
    """batched.py:183 [drop] 'engine._target_of(t, i)' -> 'pass' (the redundant check was
    deleted: vjp_rows checks every input first): with no outputs torch's batched grad
    fails on the missing batch size (IndexError) before looking at the inputs."""
    for lib in (torch_mod, tg):
        with pytest.raises(IndexError):
            lib.autograd.grad([], [lib.ones(2)], [], is_grads_batched=True)
        with pytest.raises(RuntimeError, match="does not require grad"):
            x = lib.ones(2)
            y = lib.ones(2, requires_grad=True) * 2
            lib.autograd.grad([y], [x], [lib.ones(2, 2)], is_grads_batched=True)


# -- engine.py ----------------------------------------------------------------------------


class _Pair(tg.autograd.Function):
    """(2x, 3x); its backward hands the second output's gradient on unchanged, to both
    inputs."""

    @staticmethod
    def forward(ctx, x, y):
        return x * 2, y * 3

    @staticmethod
    def backward(ctx, ga, gb):
        return gb, gb


def test_a_summed_gradient_a_hook_kept_is_not_changed_in_place_later(torch_mod):
    """engine.py:325 [const] '1' -> '2' and engine.py:326 [drop] 'owned.pop(id(g), None)'
    -> 'pass': a sum the engine made for a Node's second output stops being the engine's
    once the Node runs (its backward may pass it on, here to both inputs of one tensor,
    where the two arrivals are summed): the gradient a hook on that output was shown stays
    as it was (as torch)."""

    class TorchPair(torch_mod.autograd.Function):
        forward = _Pair.forward
        backward = _Pair.backward

    seen = {}
    for lib, pair in ((torch_mod, TorchPair), (tg, _Pair)):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 1
        a, b = pair.apply(h, h)
        b.register_hook(lambda g, lib=lib: seen.setdefault(lib.__name__, []).append(g))
        (b * 2 + b * 5 + a).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [14.0, 14.0])
    torch_seen, tg_seen = seen["torch"], seen["tapegrad"]
    np.testing.assert_array_equal(tg_seen[0].numpy(), torch_seen[0].numpy())
    np.testing.assert_array_equal(tg_seen[0].numpy(), [7.0, 7.0])


def test_array_rules_whose_gradients_fit_skip_the_gradient_check(monkeypatch):
    """engine.py:364 [compare] 'gi.shape != shape' -> '(gi.shape == shape)': on the array
    path (Note [Array backward]) a gradient of its input's shape and dtype is passed on
    without engine._check_grad (a speed rule; the values are the same either way)."""
    checks = _counting(monkeypatch, engine, "_check_grad")
    x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    ((x * 2).exp().sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2 * x.detach().numpy()), rtol=1e-6)
    assert checks == []


def test_a_first_gradient_into_a_one_output_node_is_stored_without_add_to_buffer(monkeypatch):
    """engine.py:473 [const] '0' -> '1': on the Tensor path (create_graph=True) the first
    gradient arriving at output 0 of a one-output Node is stored directly, not through
    _add_to_buffer (a speed rule; only the roots' gradients go through it here)."""
    adds = _counting(monkeypatch, engine, "_add_to_buffer")
    x = tg.tensor([0.5, 1.0], dtype=tg.float64, requires_grad=True)
    (g,) = tg.autograd.grad(x.exp().sin().sum(), x, create_graph=True)
    e = np.exp(x.detach().numpy())
    np.testing.assert_allclose(g.detach().numpy(), np.cos(e) * e, rtol=1e-12)
    assert len(adds) == 1  # the root's


def test_a_batched_gradient_of_the_wrong_shape_raises_batching_error_at_once(monkeypatch):
    """engine.py:607 [drop] 'raise graph.BatchingError(...)' -> 'pass': a Node (here a
    Node hook) that hands on a gradient whose shape is neither the batch prefix + its
    input's shape nor its input's shape makes the batched pass raise BatchingError at that
    edge (then one backward per row gives the result), not run on with it."""
    raised = []
    real = engine.run_backward

    def run_backward(*args, **kwargs):
        try:
            return real(*args, **kwargs)
        except Exception as e:
            raised.append(type(e))
            raise

    monkeypatch.setattr(engine, "run_backward", run_backward)
    x = tg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=tg.float64, requires_grad=True)
    y = x * 3
    # a batched gradient (B, 2, 3) comes back as (2, B, 3): positive dims ignore the batch
    y.grad_fn.register_hook(
        lambda gin, gout: tuple(
            g.transpose(0, 1) if g is not None and g.ndim == 3 else g for g in gin
        )
    )
    v = np.arange(24.0).reshape(4, 2, 3)
    (g,) = tg.autograd.grad(y, x, tg.tensor(v), is_grads_batched=True)
    np.testing.assert_allclose(g.numpy(), 3 * v, rtol=1e-12)
    assert raised == [graph.BatchingError]


def test_a_fresh_gradient_from_an_array_rule_goes_into_grad_without_a_copy(monkeypatch):
    """graph.py:365 [drop] 'owned[id(array)] = array' -> 'pass': fresh_array hands the
    engine a gradient it may keep (Note [Fresh gradients]): mean's array rule makes one, and
    the leaf's empty .grad takes it by _store_owned instead of a copying accumulate_into."""
    stores = _counting(monkeypatch, engine, "_store_owned")
    copies = _counting(monkeypatch, engine, "accumulate_into")
    x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    x.mean().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 2), 0.25, np.float32))
    assert [a[0] is x for a in stores] == [True] and copies == []


# -- forward_ad.py --------------------------------------------------------------------------


def test_a_dual_level_closed_on_another_thread_leaves_this_threads_level_working():
    """forward_ad.py:118 [const] '0' -> '1' (both): the forward hook stays installed while
    any thread still has a dual level open; closing one on another thread keeps tangents
    flowing here."""
    fw = tg.autograd.forward_ad
    other_open, other_done = threading.Event(), threading.Event()
    errors = []

    def other():
        try:
            with fw.dual_level():
                other_open.set()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
        finally:
            other_open.set()
            other_done.set()

    with fw.dual_level():
        x = fw.make_dual(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 1.0]))
        t = threading.Thread(target=other)
        t.start()
        other_done.wait(10)
        t.join(10)
        tangent = fw.unpack_dual(x * x).tangent
    assert errors == []
    assert tangent is not None
    np.testing.assert_array_equal(tangent.detach().numpy(), [2.0, 4.0])


def test_make_dual_of_a_tensor_with_a_tangent_computes_no_tangent_for_its_identity(
    monkeypatch,
):
    """forward_ad.py:194 [drop] '_STATE.busy = True' -> 'pass': make_dual's identity of
    the primal runs with tangents off; the new tangent alone is filed (a speed rule: the
    identity's own tangent would be overwritten). torch refuses a primal that already has a
    tangent, but tapegrad's unpack_dual(...).primal is the dual tensor itself, so it is
    accepted here."""
    fw = tg.autograd.forward_ad
    with fw.dual_level():
        a = fw.make_dual(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 0.0]))
        stores = _counting(monkeypatch, forward_ad, "_store")
        b = fw.make_dual(a, tg.tensor([0.0, 5.0]))
        assert len(stores) == 1
        np.testing.assert_array_equal(fw.unpack_dual(b).tangent.detach().numpy(), [0.0, 5.0])
        np.testing.assert_array_equal(fw.unpack_dual(a).tangent.detach().numpy(), [1.0, 0.0])


# -- gradcheck.py ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_gradcheck_weights_outputs_with_uniform_numbers_in_minus_one_to_one(dtype):
    """gradcheck.py:39 [const] '1.0' -> '1.01' (both; and line 43's, the real weights): an
    output is reduced with weights PCG64(seed).uniform(-1, 1) (real and imaginary parts for
    a complex output; the module's documented weights): with no analytic gradient, the
    reported numeric derivative along (the real part of) element 0 is Re(w[0])."""
    values = [0.5 + 1.0j, -1.0 + 0.25j] if dtype == "complex128" else [0.5, -1.0]
    x = tg.tensor(values, dtype=getattr(tg, dtype), requires_grad=True)
    with pytest.raises(tg.autograd.GradcheckError) as err:
        tg.autograd.gradcheck(lambda t: t.detach() * 1, (x,), seed=3)
    shape = (2, 2) if dtype == "complex128" else (2,)
    w = np.random.Generator(np.random.PCG64(3)).uniform(-1.0, 1.0, shape).reshape(2, -1)
    assert f"numeric {w[0, 0]:.6g} " in str(err.value), (str(err.value), w)


def test_gradcheck_passes_an_exact_gradient_with_zero_tolerances(torch_mod):
    """gradcheck.py:157 [compare] '<=' -> '<': an element passes when
    |analytic - numeric| <= atol + rtol |numeric|, equality included (torch's allclose):
    the identity at 0 with eps=0.5 has exact differences, so atol=rtol=0 passes."""
    for lib in (torch_mod, tg):
        x = lib.zeros(3, dtype=lib.float64, requires_grad=True)
        assert lib.autograd.gradcheck(lambda t: t * 1, (x,), eps=0.5, atol=0.0, rtol=0.0)


# -- checkgraph.py, graph.py, profiler.py ---------------------------------------------------


class _Drifting(tg.autograd.Function):
    """k·x with k growing at every call: its backward is right for its own call, but a
    replay never reproduces the recorded output."""

    calls = [0]

    @staticmethod
    def forward(ctx, x):
        _Drifting.calls[0] += 1
        ctx.k = float(_Drifting.calls[0])
        return x * ctx.k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k


def test_check_graph_skips_a_function_whose_replay_does_not_reproduce():
    """checkgraph.py:204 [compare] 'recorded is not None' -> '(recorded is None)': a Node
    whose replay gives another output than the recorded one is skipped, never blamed."""
    with tg.autograd.checkable():
        x = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64, requires_grad=True)
        y = (_Drifting.apply(x) ** 2).sum()
    assert tg.autograd.check_graph(y, raise_exception=False) is None


def test_accumulate_grad_cannot_be_constructed_like_torch(torch_mod):
    """graph.py:273, 278, 279 (AccumulateGrad.__init__ and .apply, which nothing ran: the
    engine makes a leaf's Node with accumulator_of and accumulates itself): as in torch,
    users cannot make one; a leaf's Node is reached through grad_fn.next_functions."""
    x = torch_mod.ones(2, requires_grad=True)
    node = (x * 2).grad_fn.next_functions[0][0]
    with pytest.raises(RuntimeError, match="Cannot construct"):
        type(node)(x)
    x = tg.ones(2, requires_grad=True)
    node = (x * 2).grad_fn.next_functions[0][0]
    assert type(node) is tg.autograd.AccumulateGrad and node.variable is x
    with pytest.raises(RuntimeError, match="Cannot construct"):
        tg.autograd.AccumulateGrad(x)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"with_flops": True, "record_shapes": True, "profile_memory": True},
        {"with_stack": True, "with_modules": True},
    ],
)
def test_profile_keeps_its_options_like_torch(torch_mod, kwargs):
    """profiler.py:87 [drop] 'self.with_flops = with_flops' -> 'pass'."""
    want = torch_mod.autograd.profiler.profile(**kwargs)
    got = tg.autograd.profiler.profile(**kwargs)
    for name in ("with_flops", "record_shapes", "profile_memory", "with_stack", "with_modules"):
        assert getattr(got, name) == getattr(want, name), name
    assert got.use_cpu == want.use_cpu
