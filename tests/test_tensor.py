"""Tensor basics: creation, dtypes, weak scalars, conversion, repr, errors."""

import numpy as np
import pytest

import tapegrad as tg


def test_default_dtype_and_weak_scalars():
    assert tg.tensor([1.0, 2.0]).dtype == tg.float32
    assert tg.tensor([1, 2]).dtype == tg.int64
    assert tg.tensor([True]).dtype == tg.bool
    x = tg.ones(3)
    assert (x * 2.0).dtype == tg.float32
    assert (2.0 * x).dtype == tg.float32
    assert (x + 1).dtype == tg.float32
    assert (tg.ones(3, dtype=tg.float64) * 2.0).dtype == tg.float64
    assert (x * tg.ones(3, dtype=tg.float64)).dtype == tg.float64  # NumPy 2 promotion
    assert (tg.arange(3) * 2.5).dtype == tg.float32  # int tensor * float -> default float
    assert (tg.arange(3) / 2).dtype == tg.float32
    assert (tg.arange(3) * 2).dtype == tg.int64


def test_creation_functions():
    assert tg.zeros(2, 3).shape == (2, 3)
    assert tg.zeros((2, 3)).shape == (2, 3)
    assert tg.ones(4).numpy().tolist() == [1.0] * 4
    assert tg.full((2,), 7).dtype == tg.int64
    assert tg.full((2,), 7.0).numpy().tolist() == [7.0, 7.0]
    assert tg.arange(5).numpy().tolist() == [0, 1, 2, 3, 4]
    assert tg.arange(0, 1, 0.25).dtype == tg.float32
    assert tg.linspace(0, 1, 5).shape == (5,)
    assert np.array_equal(tg.eye(3).numpy(), np.eye(3, dtype=np.float32))
    x = tg.randn(3, 4)
    assert tg.zeros_like(x).shape == (3, 4) and tg.ones_like(x).dtype == tg.float32
    tg.manual_seed(5)
    a = tg.rand(3)
    tg.manual_seed(5)
    b = tg.rand(3)
    assert np.array_equal(a.numpy(), b.numpy())
    r = tg.randint(0, 10, (100,))
    assert r.dtype == tg.int64 and 0 <= r.numpy().min() and r.numpy().max() < 10
    with pytest.raises(ValueError, match="non-negative"):
        tg.zeros(-1)


def test_tensor_copies_and_from_numpy_shares():
    arr = np.ones(3, dtype=np.float32)
    t = tg.tensor(arr)
    arr[0] = 5
    assert t.numpy()[0] == 1
    s = tg.from_numpy(arr)
    arr[1] = 7
    assert s.numpy()[1] == 7


def test_requires_grad_rules():
    with pytest.raises(RuntimeError, match="floating point"):
        tg.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point"):
        tg.arange(3).requires_grad_()
    x = tg.ones(2, requires_grad=True)
    y = x * 2.0
    assert not y.is_leaf and x.is_leaf
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad_(False)
    assert (x > 0).dtype == tg.bool and not (x > 0).requires_grad
    d = y.detach()
    assert d.is_leaf and not d.requires_grad and np.shares_memory(d._data, y._data)


def test_conversions():
    x = tg.tensor([[1.0, 2.0]])
    assert x.tolist() == [[1.0, 2.0]]
    assert tg.tensor(3.5).item() == 3.5
    assert float(tg.tensor([2.0])) == 2.0
    with pytest.raises(ValueError, match="one element"):
        x.item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(x)
    assert np.asarray(x).shape == (1, 2)
    with pytest.raises(RuntimeError, match="detach"):
        tg.ones(2, requires_grad=True).numpy()
    assert x.double().dtype == tg.float64 and x.to(tg.float64).dtype == tg.float64
    assert x.to("cpu") is x and x.device == "cpu"
    assert x.size() == (1, 2) and x.size(1) == 2 and x.size(-1) == 2 and x.numel() == 2
    assert x.ndim == 2 and x.dim() == 2 and len(x) == 1


def test_cast_is_differentiable():
    x = tg.ones(2, requires_grad=True)
    y = x.double() * 3.0
    assert y.dtype == tg.float64
    y.sum().backward()
    assert x.grad.dtype == tg.float32
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_repr_like_pytorch():
    assert repr(tg.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(tg.tensor([1.0], requires_grad=True)) == "tensor([1.], requires_grad=True)"
    assert repr(tg.tensor([1.0], dtype=tg.float64)) == "tensor([1.], dtype=tapegrad.float64)"
    assert repr(tg.tensor([1, 2])) == "tensor([1, 2])"
    y = tg.tensor([1.0], requires_grad=True) * 2.0
    assert repr(y) == "tensor([2.], grad_fn=<MulBackward>)"
    assert "size=(0, 3)" in repr(tg.zeros(0, 3))


def test_shape_errors_name_op_and_shapes():
    with pytest.raises(ValueError, match=r"add: shapes \[2, 3\] and \[4\]"):
        tg.ones(2, 3) + tg.ones(4)
    with pytest.raises(RuntimeError, match=r"matmul: shapes \[2, 3\] and \[2, 3\]"):
        tg.ones(2, 3) @ tg.ones(2, 3)
    with pytest.raises(RuntimeError, match="reshape: shape"):
        tg.ones(6).reshape(4, 2)
    with pytest.raises(IndexError, match="sum: dimension 2 out of range"):
        tg.ones(2, 3).sum(dim=2)
    with pytest.raises(IndexError, match="transpose"):
        tg.ones(2, 3).transpose(0, 5)
    with pytest.raises(TypeError, match="mul: unsupported operand"):
        tg.ones(2) * "a"


def test_mean_of_integers_is_an_error():
    with pytest.raises(RuntimeError, match="floating point"):
        tg.arange(4).mean()
    assert tg.arange(4).sum().dtype == tg.int64


def test_numpy_array_on_the_left_defers_to_tensor():
    x = tg.ones(2, requires_grad=True)
    y = np.ones(2, dtype=np.float32) * x
    assert isinstance(y, tg.Tensor) and y.requires_grad
