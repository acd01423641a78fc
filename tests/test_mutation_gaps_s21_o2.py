"""Tests for surviving mutants in src/tapegrad/ops (session 21, second list o2), each seen to
fail on its mutant: binary_table.py:45 (copysign's gradient at a == 0), covariance.py:117
(corrcoef of a 3-D input), elementwise.py:216 (relu's cached zeros are read-only),
misc_math.py:258 (equal of equal tensors; the registered equal was shadowed by a second
implementation in _tensor_compat.py, now removed, so this line is tg.equal), reduction.py:172
(mean's first-order path in the Tensor rule), solve.py:79 (the order of the failing minor in a
batch of more than one batch dim) and strided.py:42 (the storage offset of an array NumPy
cannot lay flat). linalg.py:73 was dead (matmul's backward never casts: a, b and g share one
dtype), deleted with its twin for b; the matmul test below checks the gradient dtypes."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.ops import elementwise, reduction


def test_copysign_gradient_is_zero_where_the_magnitude_is_zero_like_torch(torch_mod):
    """binary_table.py:45 [binop] 'g * _mask(ratio, ...)' -> '(g / _mask(ratio, ...))': the
    ratio out / a is ±1 (the same under * and /) but 0 where a == 0, where / gives inf."""
    a = np.array([0.0, -0.0, 2.0, -3.0, 0.5])
    b = np.array([1.0, -1.0, -1.0, 1.0, -2.0])
    g = np.array([1.5, -2.0, 3.0, 0.25, -1.0])
    grads = []
    for lib in (torch_mod, tg):
        x = lib.tensor(a, requires_grad=True)
        lib.copysign(x, lib.tensor(b)).backward(lib.tensor(g))
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])
    np.testing.assert_array_equal(grads[1], [0.0, 0.0, -3.0, -0.25, 1.0])


def test_corrcoef_of_a_3d_input_names_corrcoef_like_torch(torch_mod):
    """covariance.py:117 [drop] 'raise RuntimeError("corrcoef(): expected input to have two
    or fewer dimensions ...")' -> 'pass': cov then refuses it, naming cov() instead."""
    want = "corrcoef\\(\\): expected input to have two or fewer dimensions but got an input"
    with pytest.raises(RuntimeError, match=want):
        torch_mod.corrcoef(torch_mod.ones(2, 2, 2))
    with pytest.raises(RuntimeError, match=want + " with 3 dimensions"):
        tg.corrcoef(tg.ones(2, 2, 2))


def test_relu_compares_with_a_read_only_cached_zeros_array():
    """elementwise.py:216 [drop] 'zeros.flags.writeable = False' -> 'pass' (and [const]
    'False' -> 'True' there): the zeros array relu shares between calls (Note [relu against a
    zeros array]) must be read-only, else one stray in-place write changes every later relu."""
    x = tg.tensor(np.linspace(-1.0, 1.0, 512, dtype=np.float32).reshape(16, 32))
    elementwise._ZEROS.clear()
    np.testing.assert_array_equal(tg.relu(x).numpy(), np.maximum(x.numpy(), 0))
    zeros = elementwise._ZEROS[(x.shape, x._data.strides, x._data.dtype)]
    assert zeros is elementwise._zeros_for_maximum(x._data)
    assert not zeros.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        zeros[0, 0] = -1.0


def test_equal_of_equal_tensors_is_true_and_of_other_shapes_false_like_torch(torch_mod):
    """misc_math.py:258 [compare] 'a._data.shape == b._data.shape' -> '!=' (and its [boolop]
    'and' -> 'or'): the one equal now behind tg.equal and Tensor.equal."""
    for lib in (torch_mod, tg):
        a = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
        assert lib.equal(a, a.clone()) is True
        assert a.equal(a.to(lib.float64)) is True  # dtypes may differ
        assert lib.equal(a, a.reshape(4)) is False  # same elements, other shape
        assert lib.equal(lib.ones(1), lib.ones(1, 1)) is False  # broadcastable, other shape
        assert a.equal(a + 1) is False
        with pytest.raises(TypeError, match="argument 'other'.* must be Tensor, not list"):
            lib.equal(a, [1.0])
        with pytest.raises(TypeError, match="argument 'input'.* must be Tensor, not float"):
            lib.equal(1.0, a)


def test_mean_backward_takes_its_first_order_path_in_the_tensor_rule(torch_mod, monkeypatch):
    """reduction.py:172 [drop] 'return (fresh_grad(fast),)' -> 'pass': where a pass runs
    mean's Tensor rule without recording (here: the output retains its grad), the first-order
    array path of Note [First-order fast paths] gives the gradient; the slow path it falls to
    computes the same values, so the test checks which path runs (and the values)."""
    made, original = [], reduction.fresh_grad

    def fresh_grad(array):
        made.append(array.shape)
        return original(array)

    monkeypatch.setattr(reduction, "fresh_grad", fresh_grad)
    grads = []
    for lib in (torch_mod, tg):
        x = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        y = x.mean(0)
        y.retain_grad()
        (y * lib.tensor([1.0, -2.0, 3.0])).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])
    assert made == [(2, 3)]


def test_cholesky_names_a_failing_minor_beyond_the_second_batch_size_like_torch(torch_mod):
    """solve.py:79 [binop] 'data.shape[-1]' -> 'data.shape[1]': the minors searched run to the
    matrix order, not to the size of batch dim 1 (2 here, where the failing minor is 3)."""
    bad = np.diag([1.0, 1.0, -1.0])
    a = np.stack([np.eye(3), np.eye(3), bad, np.eye(3)]).reshape(2, 2, 3, 3)
    want = (
        r"linalg.cholesky: \(Batch element 2\): The factorization could not be completed "
        r"because the input is not positive-definite \(the leading minor of order 3 is not "
        r"positive-definite\)\."
    )
    for lib in (torch_mod, tg):
        with pytest.raises(lib.linalg.LinAlgError, match=want):
            lib.linalg.cholesky(lib.tensor(a))
    info = tg.linalg.cholesky_ex(tg.tensor(a)).info
    np.testing.assert_array_equal(
        info.numpy(), torch_mod.linalg.cholesky_ex(torch_mod.tensor(a)).info
    )
    assert info.dtype == tg.int32


def test_storage_offset_of_an_array_numpy_cannot_lay_flat_is_zero_like_torch(torch_mod):
    """strided.py:42 [const] '0' -> '1': an array over memory NumPy cannot lay flat (a strided
    array over a bytearray) is its own storage, a copy, where it starts at 0."""
    buf = bytearray(np.arange(8, dtype=np.float32).tobytes())
    arr = np.ndarray((2, 2), dtype=np.float32, buffer=buf, strides=(16, 4))  # [[0, 1], [4, 5]]
    assert not arr.flags.c_contiguous and not isinstance(arr.base, np.ndarray)
    for lib in (torch_mod, tg):
        t = lib.from_numpy(arr)
        assert t.storage_offset() == 0
        np.testing.assert_array_equal(lib.as_strided(t, (2,), (1,)).numpy(), [0.0, 1.0])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64"])
@pytest.mark.parametrize("shapes", [((2, 2, 3), (3, 2)), ((3,), (2, 3, 2)), ((2, 3), (3,))])
def test_matmul_gradients_keep_the_operands_dtype_like_torch(torch_mod, dtype, shapes):
    """linalg.py:73 [drop] 'ga = ga._cast(ad.dtype)' -> 'pass' was dead code (deleted, with its
    twin for b): matmul refuses mixed dtypes and the engine hands g in the output's dtype, so
    G @ B.mT already has a's. This checks that holds: first and second order, broadcast
    batch dims, promoted vectors, the half dtypes."""
    got = []
    for lib in (torch_mod, tg):
        dt = getattr(lib, dtype)
        a = lib.ones(*shapes[0], dtype=dt, requires_grad=True)
        b = lib.ones(*shapes[1], dtype=dt, requires_grad=True)
        (a @ b).sum().backward(lib.tensor(2.0, dtype=dt))
        ga, gb = lib.autograd.grad((a @ b).sum(), (a, b), create_graph=True)
        got.append([str(t.dtype).split(".")[-1] for t in (a.grad, b.grad, ga, gb)])
        got.append([a.grad.float().numpy(), b.grad.float().numpy()])
    assert got[0] == got[2] == [dtype] * 4
    for want, ours in zip(got[1], got[3]):
        np.testing.assert_array_equal(ours, want)
