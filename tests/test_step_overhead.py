"""The short paths of a training step (issue 16) keep every check of the general ones:
in-place ops with nothing to record, AccumulateGrad made per graph, linear without a
recorded rule, and cross entropy's target checks."""

import inspect

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

HERE = __file__.rsplit("/", 1)[-1]


def _line():
    return inspect.currentframe().f_back.f_lineno


@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_"])
def test_unrecorded_inplace_op_bumps_and_names_the_users_line(op):
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    c = tg.tensor([3.0, 4.0])  # needs no grad: the in-place op below records nothing
    y = x * c
    getattr(c, op)(2.0)
    line = _line() - 1
    assert c._version == 1
    with pytest.raises(RuntimeError, match=rf"MulBackward.*version 0.*version 1.*{op} at "):
        y.sum().backward()
    assert c._vc.where[0].endswith(HERE) and c._vc.where[1] == line


def test_unrecorded_inplace_values_match_torch(torch_mod):
    got = []
    for m in (tg, torch_mod):
        b = m.tensor([1.0, -2.0, 3.0])
        g = m.tensor([0.5, 0.25, -1.0])
        with m.no_grad():
            b.mul_(0.9).add_(g).sub_(g, alpha=2).div_(m.tensor(4.0))
            b.add_(g, alpha=0.5)
        got.append(b.numpy().copy())
    np.testing.assert_allclose(got[0], got[1], rtol=1e-6)
    assert got[0].dtype == np.float32


def test_unrecorded_inplace_errors_leave_the_tensor_unchanged():
    a = tg.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"add_: cannot apply an operand of shape \[3\]"):
        a.add_(tg.tensor([1.0, 2.0, 3.0]))
    i = tg.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired"):
        i.mul_(1.5)
    e = tg.zeros(3).expand(2, 3)
    with pytest.raises(RuntimeError, match="read-only"):
        e.add_(1.0)
    np.testing.assert_array_equal(a.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(i.numpy(), [1, 2])
    assert a._version == 0 and i._version == 0


def test_mul_and_div_take_no_alpha_add_and_sub_do():
    t = tg.ones(2)
    with pytest.raises(TypeError):
        t.mul_(2.0, alpha=2)
    with pytest.raises(TypeError):
        t.div_(2.0, alpha=2)
    t.add_(tg.ones(2), alpha=3)
    np.testing.assert_array_equal(t.numpy(), [4.0, 4.0])


def test_each_graph_gets_a_leaf_node_with_the_leafs_shape_and_dtype():
    p = tg.nn.Parameter(tg.ones(3, 2, dtype=tg.float64))
    y = (p * 2.0).sum()
    acc = y.grad_fn.next_functions[0][0].next_functions[0][0]
    assert acc.name() == "AccumulateGrad" and acc.variable is p
    assert acc._out_meta == (((3, 2), np.dtype(np.float64)),)
    y.backward()
    np.testing.assert_array_equal(p.grad.numpy(), np.full((3, 2), 2.0))
    p.grad = None
    (p * 3.0).sum().backward()  # a new graph after the first one was freed
    np.testing.assert_array_equal(p.grad.numpy(), np.full((3, 2), 3.0))


def test_linear_records_nothing_when_no_input_needs_grad():
    x, w, b = tg.ones(2, 3), tg.ones(4, 3), tg.ones(4)
    y = F.linear(x, w, b)
    assert y.grad_fn is None and not y.requires_grad
    w.requires_grad_()
    with tg.no_grad():
        assert F.linear(x, w, b).grad_fn is None
    assert F.linear(x, w, b).grad_fn.name() == "AddmmBackward"


def test_linear_with_mixed_dtypes_raises_naming_them():
    x = tg.ones(2, 3, dtype=tg.float64)
    # torch's message (linear with a bias is addmm(bias, x, weight.T))
    with pytest.raises(
        RuntimeError, match="self and mat2 must have the same dtype, but got Float and Double"
    ):
        F.linear(x, tg.ones(4, 3, dtype=tg.float64), tg.ones(4))


@pytest.mark.parametrize("ignore_index", [-100, 2, -1])
def test_cross_entropy_with_ignored_targets_matches_torch(torch_mod, ignore_index):
    logits = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    target = np.array([0, 2, 3, 2, 1])
    if ignore_index == -1:
        target[1] = -1
    got = []
    for m in (tg, torch_mod):
        x = m.tensor(logits, requires_grad=True)
        loss = (
            F.cross_entropy(x, m.tensor(target), ignore_index=ignore_index)
            if m is tg
            else (m.nn.functional.cross_entropy(x, m.tensor(target), ignore_index=ignore_index))
        )
        loss.backward()
        got.append((loss.item(), x.grad.numpy().copy()))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-5)
    np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("bad", [4, -2])
def test_cross_entropy_out_of_range_target_names_it(bad):
    x = tg.zeros(3, 4, requires_grad=True)
    with pytest.raises(IndexError, match=rf"Target {bad} is out of bounds"):
        F.cross_entropy(x, tg.tensor([0, bad, 1]))


@pytest.mark.parametrize("create_graph", [False, True])
def test_relu_gradient_at_nan_zero_and_negative_zero_matches_torch(torch_mod, create_graph):
    values = [float("nan"), -1.0, 0.0, -0.0, 2.0, float("inf")]
    got = []
    for m in (tg, torch_mod):
        x = m.tensor(values, requires_grad=True)
        (g,) = m.autograd.grad(m.relu(x).sum(), x, create_graph=create_graph)
        got.append(g.detach().numpy())
    np.testing.assert_array_equal(got[0], got[1])


def test_cross_entropy_gradient_scaled_by_upstream_gradient_matches_torch(torch_mod):
    logits = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    got = []
    for m in (tg, torch_mod):
        x = m.tensor(logits, requires_grad=True)
        loss = m.nn.functional.cross_entropy(x, m.tensor([0, 2, 1, 2])) * 3.0
        loss.backward()
        got.append(x.grad.numpy().copy())
    np.testing.assert_allclose(got[0], got[1], rtol=1e-5, atol=1e-7)
    assert got[0].dtype == np.float32


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3,), (64, 256), (2, 300, 300)])
def test_relu_against_a_zeros_array_is_bit_identical_to_maximum_with_zero(dtype, shape):
    special = np.array([-0.0, 0.0, -3.0, np.nan, -np.nan, np.inf, -np.inf, 2.0, 1e-45, -1e-45])
    values = np.resize(special, shape).astype(dtype)
    values.flat[::7] = np.random.default_rng(0).standard_normal(values.flat[::7].size)
    out = tg.relu(tg.tensor(values)).numpy()
    expected = np.maximum(values, 0)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.view(np.uint8), expected.view(np.uint8))


def test_relu_of_an_integer_tensor_keeps_its_dtype(torch_mod):
    x = np.arange(-300, 300).reshape(2, 300)
    got = tg.relu(tg.tensor(x)).numpy()
    want = torch_mod.relu(torch_mod.tensor(x)).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("layout", ["c", "channels_last", "sliced"])
def test_relu_keeps_the_layout_maximum_with_zero_gives(layout):
    x = np.random.default_rng(2).standard_normal((4, 8, 6, 6)).astype(np.float32)
    if layout == "channels_last":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    elif layout == "sliced":
        x = x[:, ::2]
    for _ in range(2):  # the second call takes the cached zeros
        out = tg.relu(tg.Tensor._wrap(x))._data
        expected = np.maximum(x, 0)
        assert out.strides == expected.strides
        np.testing.assert_array_equal(out, expected)


def test_relu_zeros_made_while_recording_serve_later_recordings():
    # A zeros array first made inside a recording must not be one of its traced arrays:
    # the next recording (another batch size) and eager calls reuse it.
    from tapegrad.ops import elementwise

    elementwise._ZEROS.clear()
    w = tg.tensor(np.random.default_rng(3).standard_normal((24, 8)), requires_grad=True)

    def step(x):
        loss = tg.relu(x @ w).sum()
        loss.backward()
        g = w.grad
        w.grad = None
        return loss, g

    cached = tg.jit.cache(step, verify_every=1)
    for rows in (40, 40, 40, 64, 64, 64, 40):  # relu inputs of 320 and 512 elements
        x = tg.tensor(np.random.default_rng(rows).standard_normal((rows, 24)))
        loss, g = cached(x)
        want_loss, want_g = step(x)
        np.testing.assert_allclose(loss.detach().numpy(), want_loss.detach().numpy())
        np.testing.assert_allclose(g.numpy(), want_g.numpy())
    assert all(type(z) is np.ndarray or z == 0 for z in elementwise._ZEROS.values())
    assert cached.cache_info().hits > 0
