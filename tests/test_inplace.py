"""In-place ops: version counters, the stale-saved-tensor error, leaf and view rules,
non-leaf rebasing, the no-graph fast path, dtype/shape rules, and read-only memory."""

import inspect

import numpy as np
import pytest

import tapegrad as tg

HERE = __file__.rsplit("/", 1)[-1]


def _line():
    return inspect.currentframe().f_back.f_lineno


def test_each_op_bumps_the_version_counter():
    x = tg.zeros(3)
    ops = [
        lambda: x.add_(1),
        lambda: x.sub_(1, alpha=2),
        lambda: x.mul_(2),
        lambda: x.div_(2),
        lambda: x.zero_(),
        lambda: x.fill_(3),
        lambda: x.copy_(tg.ones(3)),
        lambda: x.clamp_(0, 1),
        lambda: x.__iadd__(1),
        lambda: x.__isub__(1),
        lambda: x.__imul__(2),
        lambda: x.__itruediv__(2),
    ]
    for i, op in enumerate(ops, start=1):
        assert op() is x
        assert x._version == i
    x[0] = 5.0
    assert x._version == len(ops) + 1


def test_views_share_the_bump():
    x = tg.zeros(2, 3)
    v = x[0]
    v.add_(1)
    assert x._version == 1 and v._version == 1
    np.testing.assert_array_equal(x.numpy()[0], [1, 1, 1])


def test_saved_output_modified_in_place_names_op_versions_and_line():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.add_(1)
    line = _line() - 1  # the line above
    with pytest.raises(RuntimeError) as err:
        y.sum().backward()
    msg = str(err.value)
    assert "ExpBackward" in msg and "version 0" in msg and "version 1" in msg
    assert "add_ at " in msg and f"{HERE}:{line}" in msg


def test_saved_non_leaf_input_modified_in_place():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    b = tg.tensor([3.0, 4.0], requires_grad=True)
    a = x * 1.0
    w = a * b
    a.mul_(2)
    line = _line() - 1  # the line above
    with pytest.raises(
        RuntimeError, match=rf"MulBackward.*version 0.*version 1.*mul_ at .*{HERE}:{line}"
    ):
        w.sum().backward()


def test_setitem_on_non_leaf_gives_correct_gradient(torch_mod):
    got = []
    for m in (tg, torch_mod):
        x = m.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x * 2
        y[0] = 0
        y[2:] = x[:2] * 3.0
        (y * m.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
        got.append((y.detach().numpy(), x.grad.numpy(), y._version))
    for a, b in zip(*got):
        np.testing.assert_array_equal(a, b)
    assert y.grad_fn is not None


def test_inplace_chain_on_non_leaf_matches_torch(torch_mod):
    def run(m, x):
        y = x * 2
        y += 1
        y *= y  # operand is self: must use the old value
        y -= x
        y /= 3.0
        y[1:] = y[:1] * 0 + x[0]  # the view y[:1] is consumed before y changes
        y[0] = y[1] * y[2]  # views of y saved by mul, then y changes: torch raises too
        return y

    data = np.array([0.5, -1.0, 2.0])
    for m, x in (
        (tg, tg.tensor(data, requires_grad=True)),
        (torch_mod, torch_mod.tensor(data, requires_grad=True)),
    ):
        with pytest.raises(RuntimeError, match="modified by an in-?place operation"):
            run(m, x).sum().backward()

    def run_ok(m, x):
        y = x * 2
        y += 1
        y *= x
        y -= x
        y /= 3.0
        y[1:] = y[:1] * 0 + x[0]
        y[0] = y[1] * 4
        return y

    x = tg.tensor(data, requires_grad=True)
    xt = torch_mod.tensor(data, requires_grad=True)
    out, ref = run_ok(tg, x), run_ok(torch_mod, xt)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy())
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


def test_operand_that_is_self_reads_the_old_value():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y *= y  # y = 9 x^2
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [18.0, 36.0])


def test_setitem_value_requiring_grad_receives_gradient(torch_mod):
    def run(m, v, w):
        buf = m.zeros(3, 2, dtype=m.float64)
        buf[[0, 2]] = v  # broadcast (2,) into two rows
        buf[1, 1] = w
        return (buf * m.tensor(np.arange(6.0).reshape(3, 2))).sum()

    v, w = (
        tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True),
        tg.tensor(3.0, dtype=tg.float64, requires_grad=True),
    )
    vt, wt = (
        torch_mod.tensor([1.0, 2.0], requires_grad=True, dtype=torch_mod.float64),
        torch_mod.tensor(3.0, requires_grad=True, dtype=torch_mod.float64),
    )
    run(tg, v, w).backward()
    run(torch_mod, vt, wt).backward()
    np.testing.assert_allclose(v.grad.numpy(), vt.grad.numpy())
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy())


def test_leaf_requiring_grad_refuses_in_place():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    for op in (lambda: x.add_(1), lambda: x.__setitem__(0, 1.0), lambda: x.zero_()):
        with pytest.raises(
            RuntimeError,
            match="a leaf Variable that requires grad is being used in an in-place operation",
        ):
            op()
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0:1].mul_(2)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x.reshape(2, 1).transpose(0, 1).fill_(0)
    assert x._version == 0


def test_no_grad_allows_in_place_on_leaf_and_only_bumps():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with tg.no_grad():
        x.sub_(0.5)
        x[0] = 7.0
    assert x.is_leaf and x.grad_fn is None and x.requires_grad
    assert x._version == 2
    np.testing.assert_array_equal(x.detach().numpy(), [7.0, 1.5])


def _row_mul(m, x):
    y = x * 2
    y[1].mul_(3)
    return y


def _view_then_use(m, x):
    y = x * 2
    v = y[0:2]
    v.mul_(3)
    return v * y[0:2]


def _strided_flat_view(m, x):
    y = x + 1
    y.view(-1)[::3].mul_(5)
    return y


def _chained_views(m, x):
    y = x * x
    y[1:][0][1:3].zero_()
    return y


def _transposed_view(m, x):
    y = x * 1.5
    t = y.t() if m is not tg else y.T
    t[0].mul_(2.0)
    t[2].add_(x[0, :3])
    return y


@pytest.mark.parametrize(
    "fn", [_row_mul, _view_then_use, _strided_flat_view, _chained_views, _transposed_view]
)
def test_in_place_through_a_view_is_recorded_on_its_base(fn, torch_mod):
    """PyTorch's CopySlices: writing through a view of a non-leaf rewires the base."""
    data = np.random.default_rng(0).standard_normal((3, 4))
    w = np.random.default_rng(1).standard_normal((3, 4))
    results = []
    for m in (tg, torch_mod):
        x = m.tensor(data, requires_grad=True)
        out = fn(m, x)
        weights = m.tensor(w[: out.shape[0]] if out.shape != (3, 4) else w)
        (out * weights).sum().backward()
        results.append((out.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0])
    np.testing.assert_allclose(results[0][1], results[1][1])


def _sibling_view(m, x):
    y = x * 2
    sibling = y[1:]  # taken before the write below: recorded again when next used
    y[0:2].mul_(3)
    return sibling * 1.0


def _base_changed_after_view(m, x):
    y = x * 2
    v = y[0:2]
    y.mul_(3)
    return v.exp()


def _channels_last_base(m, x):
    y = (x * 2).permute(1, 0).contiguous().permute(1, 0)  # a non-contiguous base
    y[1:, 1].mul_(4)
    return y


@pytest.mark.parametrize("fn", [_sibling_view, _base_changed_after_view, _channels_last_base])
def test_views_taken_before_an_in_place_change_are_recorded_again(fn, torch_mod):
    test_in_place_through_a_view_is_recorded_on_its_base(fn, torch_mod)


def test_column_assigned_from_another_column_matches_torch(torch_mod):
    def run(m, x):
        y = x * 2
        y[:, 0] = y[:, 1] * 3
        return (y * y).sum()

    data = np.arange(6.0).reshape(2, 3)
    x = tg.tensor(data, requires_grad=True)
    xt = torch_mod.tensor(data, requires_grad=True)
    run(tg, x).backward()
    run(torch_mod, xt).backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


def test_in_place_making_a_constant_require_grad():
    x = tg.zeros(3)
    w = tg.tensor(2.0, requires_grad=True)
    x.mul_(w).add_(w)
    assert x.grad_fn is not None and not x.is_leaf
    x.sum().backward()
    assert w.grad.item() == 3.0


def test_fast_path_records_nothing_and_keeps_memory():
    x = tg.zeros(3)
    array = x._data
    x.add_(tg.ones(3)).mul_(2.0)
    assert x._data is array and x.grad_fn is None and not x.requires_grad
    y = tg.tensor([1.0, 2.0], requires_grad=True)
    with tg.no_grad():
        y.mul_(3)
    assert y.grad_fn is None


def test_dtype_is_kept_and_bad_casts_raise():
    x = tg.zeros(3, dtype=tg.float32)
    x.add_(tg.ones(3, dtype=tg.float64))
    x += np.ones(3)
    assert x.dtype == tg.float32
    y = tg.tensor([1.0, 2.0], dtype=tg.float32) * 1.0  # a constant; the operand needs grad
    w = tg.tensor([1.0, 1.0], dtype=tg.float64, requires_grad=True)
    y.add_(w)
    assert y.dtype == tg.float32
    y.sum().backward()
    assert w.grad.dtype == tg.float64
    with pytest.raises(  # torch's message (tests/test_int_numbers.py compares them)
        RuntimeError, match="result type Float can't be cast to the desired output type Long"
    ):
        tg.tensor([1, 2]).add_(1.5)
    with pytest.raises(RuntimeError, match="desired output type Long"):
        tg.tensor([1, 2]).div_(2)


def test_in_place_cannot_broadcast_self():
    x = tg.zeros(3)
    with pytest.raises(RuntimeError, match=r"add_: .*\[2, 3\].*\[3\]"):
        x.add_(tg.zeros(2, 3))
    y = tg.tensor([1.0, 2.0, 3.0], requires_grad=True) * 1.0
    with pytest.raises(RuntimeError, match=r"mul_: .*\[2, 3\].*\[3\]"):
        y.mul_(tg.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"copy_: source of shape \[4\]"):
        x.copy_(tg.zeros(4))


def test_read_only_memory_raises_clearly():
    e = tg.zeros(3).expand(2, 3)
    with pytest.raises(RuntimeError, match="read-only"):
        e.add_(1)
    with pytest.raises(RuntimeError, match="read-only"):
        e[0] = 1.0


def test_setitem_errors():
    x = tg.zeros(2, 3)
    with pytest.raises(IndexError, match=r"setitem.*\[2, 3\]"):
        x[5] = 1.0
    with pytest.raises(
        RuntimeError, match=r"setitem: shape mismatch: value tensor of shape \[4\] .* \[3\]"
    ):
        x[0] = tg.zeros(4)


def test_clamp_in_place():
    x = tg.tensor([-2.0, 0.5, 3.0])
    x.clamp_(min=-1.0)
    np.testing.assert_array_equal(x.numpy(), [-1.0, 0.5, 3.0])
    x.clamp_(max=1.0)
    np.testing.assert_array_equal(x.numpy(), [-1.0, 0.5, 1.0])
    with pytest.raises(RuntimeError, match="at least one of 'min' or 'max'"):
        x.clamp_()


def test_clamp_in_place_on_non_leaf(torch_mod):
    got = []
    for m in (tg, torch_mod):
        x = m.tensor([-2.0, 0.5, 3.0, 0.9], requires_grad=True)
        y = x * 2.0
        y.clamp_(-1.0, 1.0)
        (y * m.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
        got.append((y.detach().numpy(), x.grad.numpy(), y.grad_fn.name()))
    np.testing.assert_array_equal(got[0][0], got[1][0])
    np.testing.assert_array_equal(got[0][1], got[1][1])
    np.testing.assert_array_equal(got[0][1], [0.0, 4.0, 0.0, 0.0])


def _write_into_buffer_through_views(m, x):
    buf = m.zeros(3, 4, dtype=m.float64)  # requires no grad until a value that does lands
    buf[1][2] = x[0, 0] * 5
    buf[2].copy_(x[1])
    buf[0, 1:3].add_(x[2, :2])
    return buf * buf


def test_writes_through_views_of_a_buffer_make_it_join_the_graph(torch_mod):
    test_in_place_through_a_view_is_recorded_on_its_base(
        _write_into_buffer_through_views, torch_mod
    )


@pytest.mark.parametrize("grad_of", ["base", "exponent"])
def test_pow_checks_the_saved_operands_when_one_needs_grad(grad_of, torch_mod):
    """Base and exponent are both saved when either needs grad: changing the other one
    in place before backward is an error, as in PyTorch (not a silently wrong gradient)."""
    for m in (tg, torch_mod):
        a = m.tensor([1.5, 2.0], requires_grad=grad_of == "base")
        b = m.tensor([2.0, 3.0], requires_grad=grad_of == "exponent")
        y = a**b
        with m.no_grad():
            (b if grad_of == "base" else a).add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an in-?place operation"):
            y.sum().backward()


def test_a_stale_view_as_the_root_of_backward_is_recorded_again(torch_mod):
    # The view itself (not an op on it) is the root of backward: its graph must be
    # taken again from its base changed in place since, as PyTorch does.
    def run(m):
        x = m.tensor([1.0, 2.0, 3.0], dtype=m.float64, requires_grad=True)
        b = x * 1.0
        v = b[:2]
        b.mul_(2.0)
        v.backward(m.tensor([1.0, 10.0], dtype=m.float64))
        return x.grad.numpy()

    np.testing.assert_allclose(run(tg), run(torch_mod), rtol=1e-12)
