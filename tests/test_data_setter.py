"""``t.data = value`` (issue 17, item 2): PyTorch 2.13's rules, checked against torch."""

import numpy as np
import pytest

import tapegrad as tg


def _both(torch_mod):
    return (tg, torch_mod)


def test_assigning_a_tensor_keeps_a_leaf_its_grad_and_hooks(torch_mod):
    results = []
    for m in _both(torch_mod):
        p = m.ones(3, requires_grad=True)
        p.grad = m.ones(3)
        seen = []
        p.register_hook(lambda g, seen=seen: seen.append(1) or g * 2)
        v0 = p._version
        p.data = m.full((3,), 5.0)
        assert p.is_leaf and p.requires_grad and p.grad_fn is None
        assert p._version == v0  # PyTorch does not bump the version here
        (p * p).sum().backward()
        results.append((p.detach().numpy().copy(), p.grad.numpy().copy(), len(seen)))
    (a, ga, na), (b, gb, nb) = results
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ga, gb)  # old grad 1 + hooked 2 * 2 * 5
    assert na == nb == 1


def test_assignment_shares_memory_with_the_value(torch_mod):
    for m in _both(torch_mod):
        p = m.ones(3)
        t = m.zeros(3)
        p.data = t
        t.add_(1.0)
        np.testing.assert_array_equal(p.numpy(), [1.0, 1.0, 1.0])


@pytest.mark.parametrize(
    "value",
    [
        lambda m: m.zeros(4),
        lambda m: m.zeros(2, 2, dtype=m.float64),
        lambda m: m.zeros(3, dtype=m.float16),
    ],
    ids=["shape", "shape-and-float64", "float16"],
)
def test_shape_and_float_dtype_changes_are_allowed(value, torch_mod):
    got = []
    for m in _both(torch_mod):
        p = m.ones(3, requires_grad=True)
        p.data = value(m)
        (p * 2.0).sum().backward()
        got.append((tuple(p.shape), str(p.dtype).split(".")[-1], p.grad.numpy(), p.is_leaf))
    (s1, d1, g1, l1), (s2, d2, g2, l2) = got
    assert (s1, d1, l1) == (s2, d2, l2)
    np.testing.assert_array_equal(g1, g2)


def test_shape_change_after_a_graph_used_the_leaf():
    p = tg.ones(3, requires_grad=True)
    y = (p * 2.0).sum()  # made p's AccumulateGrad for shape (3,)
    p.data = tg.zeros(2, 2)
    (p * 3.0).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), np.full((2, 2), 3.0))
    del y


def test_integer_data_on_a_tensor_that_requires_grad_is_rejected(torch_mod):
    for m in _both(torch_mod):
        p = m.ones(3, requires_grad=True)
        for dtype in (m.int64, m.bool):
            with pytest.raises(RuntimeError, match="must be floating point or complex"):
                p.data = m.zeros(3, dtype=dtype)
        assert p.dtype == m.float32  # unchanged


def test_integer_data_without_requires_grad_is_allowed(torch_mod):
    for m in _both(torch_mod):
        p = m.ones(3)
        p.data = m.arange(3)
        assert p.dtype == m.int64
        np.testing.assert_array_equal(p.numpy(), [0, 1, 2])


@pytest.mark.parametrize("value", [np.zeros(3), [1.0, 2.0, 3.0], 5], ids=["ndarray", "list", "int"])
def test_non_tensors_are_rejected_at_the_assignment(value, torch_mod):
    for m in _both(torch_mod):
        p = m.ones(3)
        with pytest.raises(TypeError, match="has to be a tensor"):
            p.data = value
        np.testing.assert_array_equal(p.numpy(), np.ones(3))


def test_non_leaf_keeps_its_grad_fn(torch_mod):
    for m in _both(torch_mod):
        x = m.ones(3, requires_grad=True)
        y = x * 2.0
        y.data = m.zeros(3)
        assert y.grad_fn is not None and y.requires_grad
        y.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_a_saved_tensor_sees_the_new_values(torch_mod):
    grads = []
    for m in _both(torch_mod):
        p = m.ones(3, requires_grad=True)
        y = p * p
        p.data = m.full((3,), 4.0)
        y.sum().backward()  # no version error: PyTorch reads the new data
        grads.append(p.grad.numpy().copy())
    np.testing.assert_array_equal(grads[0], grads[1])


def test_parameter_data_assignment_as_in_training_code(torch_mod):
    for m in _both(torch_mod):
        lin = m.nn.Linear(2, 3)
        new = m.zeros(3, 2)
        lin.weight.data = new
        assert isinstance(lin.weight, m.nn.Parameter) and lin.weight.requires_grad
        lin.weight.data.add_(1.0)  # through the shared memory
        np.testing.assert_array_equal(new.numpy(), np.ones((3, 2)))
        out = lin(m.ones(1, 2)).sum()
        out.backward()
        assert lin.weight.grad.shape == (3, 2)
