"""The backward engine: accumulation, release, retain_graph, roots, inputs=, higher order."""

import gc
import threading
import tracemalloc
import weakref

import numpy as np
import pytest

import tapegrad as tg


def test_worked_example_and_accumulation():
    a = tg.tensor(2.0, requires_grad=True)
    b = tg.tensor(3.0, requires_grad=True)
    (a * b + a).sum().backward()
    assert a.grad.item() == 4.0 and b.grad.item() == 2.0
    (a * b + a).sum().backward()  # gradients accumulate until zeroed
    assert a.grad.item() == 8.0 and b.grad.item() == 4.0
    a.grad = None
    b.grad = None
    (a * b + a).sum().backward()
    assert a.grad.item() == 4.0 and b.grad.item() == 2.0


def test_bias_gradient_is_column_sums():
    x = tg.randn(32, 4)
    w = tg.randn(32, 4)
    bias = tg.zeros(4, requires_grad=True)
    ((x + bias) * w).sum().backward()
    assert bias.grad.shape == (4,)
    np.testing.assert_allclose(bias.grad.numpy(), w.numpy().sum(0), rtol=1e-5)


def test_paths_are_summed_and_leaf_grads_never_alias():
    a = tg.ones(3, requires_grad=True)
    b = tg.ones(3, requires_grad=True)
    (a + b).sum().backward()  # AddBackward hands the same g to both
    assert not np.shares_memory(a.grad._data, b.grad._data)
    a.grad._data += 1
    assert b.grad.numpy().tolist() == [1.0, 1.0, 1.0]
    g = tg.ones(3)
    c = tg.ones(3, requires_grad=True)
    (c * 1.0).backward(g)
    assert not np.shares_memory(c.grad._data, g._data)


def test_diamond_graph_sums_every_path():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    z = y * y + y.exp() + y
    z.sum().backward()
    y_ = np.array([3.0, 6.0])
    np.testing.assert_allclose(x.grad.numpy(), 3 * (2 * y_ + np.exp(y_) + 1), rtol=1e-5)


def test_second_backward_raises_with_hint_and_retain_graph_allows_it():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()


def test_non_scalar_root_needs_gradient():
    x = tg.ones(2, 3, requires_grad=True)
    y = x * 2.0
    with pytest.raises(RuntimeError, match=r"shape \[2, 3\]"):
        y.backward()
    y.backward(tg.full((2, 3), 0.5))
    np.testing.assert_allclose(x.grad.numpy(), np.ones((2, 3)))
    with pytest.raises(RuntimeError, match="mismatch in shape"):
        (x * 2.0).backward(tg.ones(3))


def test_backward_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        tg.ones(3).sum().backward()


def test_inputs_restricts_accumulation():
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = tg.tensor([3.0, 4.0], requires_grad=True)
    h = a * b
    (h * h).sum().backward(inputs=[a])
    assert b.grad is None
    # d/da sum((a*b)^2) = 2*(a*b)*b
    np.testing.assert_allclose(a.grad.numpy(), 2 * np.array([3.0, 8.0]) * np.array([3.0, 4.0]))


def test_inputs_accepts_non_leaf():
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    h = a * 2.0
    (h * h).sum().backward(inputs=[h])
    np.testing.assert_allclose(h.grad.numpy(), [4.0, 8.0])
    assert a.grad is None


def test_third_derivative_via_create_graph():
    x = tg.tensor([0.5, 1.5], dtype=tg.float64, requires_grad=True)
    y = (x.tanh() * x**3).sum()
    (g1,) = tg.autograd.grad(y, x, create_graph=True)
    (g2,) = tg.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = tg.autograd.grad(g2.sum(), x)
    h = 1e-4
    xs = x.detach().numpy()

    def second(v):
        t = tg.tensor(v, dtype=tg.float64, requires_grad=True)
        (d1,) = tg.autograd.grad((t.tanh() * t**3).sum(), t, create_graph=True)
        (d2,) = tg.autograd.grad(d1.sum(), t)
        return d2.numpy()

    numeric = (second(xs + h) - second(xs - h)) / (2 * h)
    np.testing.assert_allclose(g3.numpy(), numeric, rtol=1e-5)


def test_create_graph_backward_records_grad():
    x = tg.tensor(3.0, requires_grad=True)
    y = x**3
    y.backward(create_graph=True)
    assert x.grad.grad_fn is not None
    (gg,) = tg.autograd.grad(x.grad, x)
    assert gg.item() == pytest.approx(18.0)


def test_grad_does_not_touch_dot_grad_and_reports_unused():
    a = tg.tensor([1.0], requires_grad=True)
    b = tg.tensor([1.0], requires_grad=True)
    y = (a * 2.0).sum()
    with pytest.raises(RuntimeError, match="input 1"):
        tg.autograd.grad(y, [a, b], retain_graph=True)
    ga, gb = tg.autograd.grad(y, [a, b], allow_unused=True)
    assert gb is None and ga.item() == 2.0
    assert a.grad is None


def test_hooks_run_in_order_and_can_replace_gradient():
    calls = []
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    y.register_hook(lambda g: calls.append("y1"))
    h = y.register_hook(lambda g: g * 10.0)
    y.register_hook(lambda g: calls.append(("y3", g.numpy().tolist())))
    x.register_hook(lambda g: calls.append(("x", g.numpy().tolist())))
    y.sum().backward()
    assert calls == ["y1", ("y3", [10.0, 10.0]), ("x", [20.0, 20.0])]
    np.testing.assert_allclose(x.grad.numpy(), [20.0, 20.0])
    h.remove()
    calls.clear()
    x.grad = None
    y2 = x * 2.0
    y2.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_node_prehook_and_hook_and_retain_grad_and_post_accumulate():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    y.retain_grad()
    seen = []
    y.grad_fn.register_prehook(lambda gouts: seen.append("pre"))
    y.grad_fn.register_hook(lambda gins, gouts: seen.append("post"))
    x.register_post_accumulate_grad_hook(lambda t: seen.append(("acc", t.grad.numpy().tolist())))
    y.sum().backward()
    assert seen == ["pre", "post", ("acc", [3.0, 3.0])]
    np.testing.assert_allclose(y.grad.numpy(), [1.0, 1.0])


def test_grad_mode_is_per_thread():
    results = {}
    barrier = threading.Barrier(2)

    def worker(name, enabled):
        with tg.set_grad_enabled(enabled):
            barrier.wait()
            x = tg.ones(2, requires_grad=True)
            results[name] = (x * 2.0).requires_grad
            barrier.wait()

    threads = [
        threading.Thread(target=worker, args=("on", True)),
        threading.Thread(target=worker, args=("off", False)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {"on": True, "off": False}
    assert tg.is_grad_enabled()


def test_grad_mode_nesting_and_decorators():
    assert tg.is_grad_enabled()
    with tg.no_grad():
        assert not tg.is_grad_enabled()
        with tg.enable_grad():
            assert tg.is_grad_enabled()
        assert not tg.is_grad_enabled()
        with tg.set_grad_enabled(True):
            assert tg.is_grad_enabled()
        assert not tg.is_grad_enabled()
    assert tg.is_grad_enabled()

    @tg.no_grad()
    def f():
        return tg.is_grad_enabled()

    @tg.set_grad_enabled(False)
    def g():
        return tg.is_grad_enabled()

    assert tg.is_grad_enabled()
    assert f() is False and g() is False and tg.is_grad_enabled()
    tg.set_grad_enabled(False)
    assert not tg.is_grad_enabled()
    tg.set_grad_enabled(True)
    with tg.inference_mode():
        assert not tg.is_grad_enabled() and tg.is_inference_mode_enabled()
    assert not tg.is_inference_mode_enabled()
    x = tg.ones(2, requires_grad=True)
    with tg.no_grad():
        y = x * 2.0
    assert not y.requires_grad and y.grad_fn is None


def test_saved_arrays_are_freed_after_backward():
    x = tg.randn(256, 256, requires_grad=True)
    y = x.tanh()
    node = y.grad_fn
    z = (y * y).sum()
    tracemalloc.start()
    del y
    before, _ = tracemalloc.get_traced_memory()
    z.backward()
    gc.collect()
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert node._saved_output is None and node._backward is None
    # the tanh output (256 KiB) must be gone: grads of x stay (256 KiB), temporaries freed
    assert after - before < 300_000


def test_deleting_output_frees_graph_while_leaf_lives():
    x = tg.randn(100, requires_grad=True)
    y = (x * 2.0).exp()
    node_ref = weakref.ref(y.grad_fn)
    acc_ref = weakref.ref(y.grad_fn.next_functions[0][0].next_functions[0][0])
    del y
    gc.collect()
    assert node_ref() is None and acc_ref() is None
    assert x.requires_grad  # the leaf lives on


def test_accumulate_grad_is_shared_while_alive():
    x = tg.ones(2, requires_grad=True)
    y1 = x * 2.0
    y2 = x * 3.0
    acc1 = y1.grad_fn.next_functions[0][0]
    acc2 = y2.grad_fn.next_functions[0][0]
    assert acc1 is acc2 and acc1.name() == "AccumulateGrad" and acc1.variable is x


def test_node_introspection():
    a = tg.ones(2, requires_grad=True)
    b = tg.ones(2)
    y = a * b
    assert y.grad_fn.name() == "MulBackward"
    (edge_a, edge_b) = y.grad_fn.next_functions
    assert edge_a[0].name() == "AccumulateGrad" and edge_b is None
    assert "MulBackward" in repr(y)


def test_wrong_gradient_shape_from_a_rule_names_the_node():
    from tapegrad.autograd.graph import make_result

    x = tg.ones(3, requires_grad=True)
    y = make_result(x._data * 2, (x,), lambda g: (tg.ones(4),), "BadBackward")
    with pytest.raises(RuntimeError, match="BadBackward.*shape"):
        y.sum().backward()
    y = make_result(x._data * 2, (x,), lambda g: (g, g), "CountBackward")
    with pytest.raises(RuntimeError, match="CountBackward returned 2 gradients"):
        y.sum().backward()
    y = make_result(x._data * 2, (x,), lambda g: (g.double(),), "DtypeBackward")
    with pytest.raises(RuntimeError, match="DtypeBackward.*dtype"):
        y.sum().backward()


def test_deep_chain_has_no_recursion_limit():
    x = tg.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.0
    y.backward()
    assert x.grad.item() == 1.0


def test_inputs_non_leaf_does_not_run_its_own_node():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    h = x.exp()
    y = (h * h).sum()
    (gh,) = tg.autograd.grad(y, h, retain_graph=True)
    np.testing.assert_allclose(gh.numpy(), 2 * np.exp([1.0, 2.0]), rtol=1e-6)
    h.grad_fn.release()  # h's Node must not be needed to get d y / d h
    y.backward(inputs=[h])
    np.testing.assert_allclose(h.grad.numpy(), gh.numpy())
    assert x.grad is None


def test_inputs_through_a_target_to_a_deeper_target():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3.0
    y = (h * h).sum()
    gh, gx = tg.autograd.grad(y, [h, x])
    np.testing.assert_allclose(gh.numpy(), [6.0, 12.0])
    np.testing.assert_allclose(gx.numpy(), [18.0, 36.0])
