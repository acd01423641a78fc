"""Survivors of the mutation sample seed 2303 (docs/mutation-run-seed2303.md), each killed
by a test of the behaviour it changed (second file)."""

import importlib
import inspect
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg

from ._fake_world import fake_world_of_one


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int8", "int64"])
def test_trace_of_an_integer_matrix_sums_in_int64_like_torch(dtype):
    """torch.trace of an integer matrix is an int64 sum (no wrap-around in the input's
    narrow dtype), tapegrad's too."""
    a = (np.arange(12).reshape(3, 4) * 60 + 7).astype(dtype)
    mine, theirs = tg.trace(tg.tensor(a)), torch.trace(torch.tensor(a))
    assert mine.dtype == tg.int64 and theirs.dtype == torch.int64
    assert mine.item() == theirs.item()


def test_trace_of_a_bool_matrix_raises_like_torch():
    a = np.eye(3, dtype=bool)
    with pytest.raises(NotImplementedError, match="\"trace\" not implemented for 'Bool'"):
        torch.trace(torch.tensor(a))
    with pytest.raises(NotImplementedError, match="\"trace\" not implemented for 'Bool'"):
        tg.trace(tg.tensor(a))


@pytest.mark.parametrize("bias", [True, False])
def test_lazy_linear_before_its_first_call_has_in_features_zero_like_torch(bias):
    """Until its first input, a LazyLinear reports in_features=0 (attribute and repr), as
    torch's, and builds without a warning (no zero-element weight is initialised)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mine, theirs = tg.nn.LazyLinear(3, bias=bias), torch.nn.LazyLinear(3, bias=bias)
    assert mine.in_features == theirs.in_features == 0
    assert mine.out_features == theirs.out_features == 3
    assert repr(mine) == repr(theirs)
    y = mine(tg.ones(2, 5))
    assert tuple(y.shape) == (2, 3) and tuple(mine.weight.shape) == (3, 5)
    assert mine.in_features == 5


_NO_DEVICE = [
    "device_time_total",
    "self_device_time_total",
    "device_time",
    "cpu_memory_usage",
    "self_cpu_memory_usage",
    "device_memory_usage",
    "self_device_memory_usage",
    "flops",
    "is_async",
    "is_remote",
    "is_legacy",
    "node_id",
]


def test_cpu_profile_events_report_no_device_time_or_memory_like_torch():
    """A CPU-only profile (no memory profiling): every event and key average reports
    device times and memory use 0, no flops, not async/remote/legacy, node_id -1."""
    rows = []
    for lib in (tg, torch):
        with lib.autograd.profiler.profile() as prof:
            with lib.autograd.profiler.record_function("outer_range"):
                lib.ones(2) + 1
        event = next(e for e in prof.function_events if e.name == "outer_range")
        avg = next(a for a in prof.key_averages() if a.key == "outer_range")
        rows.append([(getattr(event, n), getattr(avg, n)) for n in _NO_DEVICE])
    assert rows[0] == rows[1]


@pytest.mark.parametrize("batch_first", [False, True])
def test_pad_packed_sequence_to_exactly_the_longest_length_matches_torch(batch_first):
    """total_length may equal the longest sequence's length (only a shorter one raises)."""
    x = np.arange(24.0).reshape(4, 3, 2)
    results = []
    for lib in (tg, torch):
        rnn = lib.nn.utils.rnn
        packed = rnn.pack_padded_sequence(
            lib.tensor(x), lib.tensor([4, 2, 3]), enforce_sorted=False
        )
        padded, lengths = rnn.pad_packed_sequence(packed, batch_first, -1.0, total_length=4)
        results.append((padded.numpy(), lengths.numpy()))
        with pytest.raises(ValueError, match="total_length=3 and max sequence length being 4"):
            rnn.pad_packed_sequence(packed, batch_first, total_length=3)
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


@pytest.mark.parametrize("api", ["set_detect_anomaly", "detect_anomaly"])
def test_anomaly_modes_exit_returns_none_like_torch(api):
    """torch's set_detect_anomaly / detect_anomaly __exit__ returns None (an exception
    passes through), and the mode before is restored."""
    for lib in (tg, torch):
        before = lib.is_anomaly_enabled()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's detect_anomaly warns that it is slow
            ctx = (
                lib.autograd.set_detect_anomaly(True)
                if api == "set_detect_anomaly"
                else (lib.autograd.detect_anomaly())
            )
            ctx.__enter__()
        assert lib.is_anomaly_enabled()
        assert ctx.__exit__(ValueError, ValueError("x"), None) is None
        assert lib.is_anomaly_enabled() == before


def test_group_norm_of_a_two_dim_input_matches_torch():
    """F.group_norm takes an (N, C) input (each group of channels normalised on its own);
    only a 1-D input raises."""
    rng = np.random.default_rng(1)
    xs, ws, bs = rng.standard_normal((3, 6)), rng.standard_normal(6), rng.standard_normal(6)
    results = []
    for lib in (tg, torch):
        x, w, b = (lib.tensor(a, requires_grad=True) for a in (xs, ws, bs))
        out = lib.nn.functional.group_norm(x, 3, w, b)
        (out * lib.tensor(xs)).sum().backward()
        results.append([out.detach().numpy()] + [t.grad.numpy() for t in (x, w, b)])
        with pytest.raises(RuntimeError, match="Expected at least 2 dimensions"):
            lib.nn.functional.group_norm(lib.ones(6), 3)
    for mine, theirs in zip(*results, strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss", ["mse_loss", "l1_loss"])
def test_unweighted_pointwise_loss_rejects_an_unknown_reduction_like_torch(loss):
    for lib in (tg, torch):
        x, y = lib.ones(2, 3), lib.zeros(2, 3)
        with pytest.raises(ValueError, match="bogus is not a valid value for reduction"):
            getattr(lib.nn.functional, loss)(x, y, reduction="bogus")


def test_rrelu_inplace_in_eval_refuses_a_backward_only_for_a_negative_mean_slope():
    """rrelu_ in eval mode has slope (lower + upper) / 2 and, as torch's, a backward only
    when that is >= 0: lower + upper the smallest negative subnormal halves to -0.0, so the
    backward runs (torch's gradient values); a negative mean refuses it."""
    lower = -float(np.nextafter(0.0, 1.0))
    xs = np.array([-1.5, 0.5, 2.0])
    grads = []
    for lib in (tg, torch):
        x = lib.tensor(xs, requires_grad=True)
        y = x * 1.0
        lib.nn.functional.rrelu_(y, lower, 0.0, training=False)
        y.sum().backward()
        grads.append(x.grad.numpy())
        y = x * 1.0
        lib.nn.functional.rrelu_(y, -0.5, 0.25, training=False)
        with pytest.raises(RuntimeError, match="negative slope which is not supported"):
            y.sum().backward()
    np.testing.assert_array_equal(grads[0], grads[1])


@pytest.mark.parametrize(("channels", "kept"), [(15, True), (16, False)])
def test_conv2d_keeps_its_im2col_columns_only_up_to_keep_bytes(channels, kept):
    """Note [Kept im2col columns]: the forward keeps the whole batch's (P, kh·kw·C) columns
    (room counted for a bias column) when P·(kh·kw·C + 1)·itemsize <= KEEP_BYTES: with
    P = 2·32·32 and a 2x2 float64 kernel, 15 channels fit (999424 bytes) and 16 do not
    (1064960). Kept columns show in saved_bytes next to the input."""
    from tapegrad.autograd.memory import saved_bytes
    from tapegrad.nn._conv_kept import KEEP_BYTES

    assert KEEP_BYTES == 1 << 20
    x = tg.ones(2, channels, 64, 64, dtype=tg.float64)
    w = tg.ones(4, channels, 2, 2, dtype=tg.float64, requires_grad=True)
    y = tg.nn.functional.conv2d(x, w, stride=2)
    cols = 2 * 32 * 32 * 4 * channels * 8
    assert saved_bytes(y) == x.numel() * 8 + (cols if kept else 0)
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((4, channels, 2, 2), 2048.0))


@pytest.mark.parametrize("mask", [[True, False, True], np.array([True, False, True]), 1.0])
def test_native_dropout_backward_takes_only_a_tensor_mask_like_torch(mask):
    """aten's native_dropout_backward(Tensor grad_output, Tensor mask, float scale):
    torch refuses a list, array or number as the mask (RuntimeError, no schema matches)."""
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="Expected a value of type 'Tensor' for argument"):
            lib.ops.aten.native_dropout_backward(lib.ones(3), mask, 2.0)
        keep = lib.tensor([True, False, True])
        with pytest.raises(RuntimeError, match="for argument 'grad_output'"):
            lib.ops.aten.native_dropout_backward([1.0, 1.0, 1.0], keep, 2.0)
        out = lib.ops.aten.native_dropout_backward(lib.ones(3), keep, 2.0)
        np.testing.assert_array_equal(out.numpy(), [2.0, 0.0, 2.0])


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [((2, 1, 4), (4, 3)), ((2, 3, 4), (4, 1)), ((2, 2, 1, 3), (3, 1))],
    ids=["one-row", "one-column", "one-by-one"],
)
def test_matmul_of_a_stack_by_a_matrix_with_a_unit_dim_matches_torch(a_shape, b_shape):
    """A C-contiguous stack times one matrix runs as one 2-D GEMM (matmul_array): a single
    row per matrix or a single output column keeps its unit dim, as torch's."""
    rng = np.random.default_rng(2)
    a_np, b_np = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    results = []
    for lib in (tg, torch):
        a, b = lib.tensor(a_np, requires_grad=True), lib.tensor(b_np, requires_grad=True)
        out = a @ b
        (out * out).sum().backward()
        results.append([out.detach().numpy(), a.grad.numpy(), b.grad.numpy()])
    for mine, theirs in zip(*results, strict=True):
        assert mine.shape == theirs.shape
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(
    ("size_average", "reduce"), [(False, None), (None, False), (True, True)], ids=str
)
def test_cosine_embedding_loss_legacy_reduction_args_match_torch(size_average, reduce):
    """size_average / reduce (deprecated) still choose the reduction: sum, none, mean."""
    rng = np.random.default_rng(3)
    x1, x2 = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    target = np.array([1, -1, 1, -1])
    results = []
    for lib in (tg, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the deprecation warning
            loss = lib.nn.functional.cosine_embedding_loss(
                lib.tensor(x1), lib.tensor(x2), lib.tensor(target), 0.1, size_average, reduce
            )
        results.append(loss.numpy())
    assert results[0].shape == results[1].shape
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(
    ("dims", "side"),
    [((1, 0), "dims_self"), (([1], 0), "dims_other"), ((1, [0]), "dims_self")],
    ids=str,
)
def test_tensordot_refuses_a_side_of_dims_given_as_an_int_like_torch(dims, side):
    """tensordot's dims: an int (a count) or a pair of sequences; torch refuses an int on
    either side of the pair (TypeError), and takes tuples or lists."""
    rng = np.random.default_rng(4)
    a_np, b_np = rng.standard_normal((2, 3, 4)), rng.standard_normal((3, 4, 5))
    results = []
    for lib in (tg, torch):
        a, b = lib.tensor(a_np), lib.tensor(b_np)
        with pytest.raises(TypeError, match=f"argument '{side}' .* must be tuple of ints"):
            lib.tensordot(a, b, dims=dims)
        results.append(
            [lib.tensordot(a, b, dims=d).numpy() for d in (((1,), [0]), ([2, 1], (1, 0)))]
        )
    for mine, theirs in zip(*results, strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-14)


def test_reflect_pad_of_a_tensor_with_size_one_dims_matches_torch_without_warnings():
    """Reflect padding leaves a size-1 batch/channel dim alone (its reflection period is 1,
    no remainder by zero), silently, as torch."""
    x_np = np.arange(10.0).reshape(1, 2, 5)
    results = []
    for lib in (tg, torch):
        x = lib.tensor(x_np, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = lib.nn.functional.pad(x, (2, 3), mode="reflect")
            (out * out).sum().backward()
        results.append([out.detach().numpy(), x.grad.numpy()])
    for mine, theirs in zip(*results, strict=True):
        np.testing.assert_array_equal(mine, theirs)


@pytest.mark.parametrize("batch", [(), (2,)])
def test_ldl_factor_ex_check_errors_names_the_zero_block_of_d(batch):
    """info = k > 0 marks D[k-1, k-1] exactly zero; check_errors=True raises a LinAlgError
    (a RuntimeError, as torch's) naming that block, as ldl_factor does."""
    a = np.broadcast_to(np.diag([1.0, 2.0, 0.0]), batch + (3, 3))
    assert np.all(tg.linalg.ldl_factor_ex(tg.tensor(a)).info.numpy() == 3)
    for fn, kwargs in (
        (tg.linalg.ldl_factor_ex, {"check_errors": True}),
        (tg.linalg.ldl_factor, {}),
    ):
        with pytest.raises(RuntimeError, match=r"the block D\[2, 2\] of the factorization"):
            fn(tg.tensor(a), **kwargs)
    with pytest.raises(RuntimeError):
        torch.linalg.ldl_factor_ex(torch.tensor(a), check_errors=True)


def test_attention_gradients_of_head_views_keep_the_projections_layout_like_torch():
    """q, k, v as (N, H, L, E) views of one (N, L, 3·H·E) projection: the gradients that
    reach them (seen by hooks) are laid out as the views are, (N, L, H, E) in memory, as
    torch's; L != E, so a gradient shaped with the wrong trailing size would not be."""
    n, h, seq, e = 2, 3, 4, 6
    x_np = np.random.default_rng(5).standard_normal((n, seq, 3 * h * e))
    results = []
    for lib in (tg, torch):
        x = lib.tensor(x_np, requires_grad=True)
        q, k, v = (t.reshape(n, seq, h, e).transpose(1, 2) for t in x.chunk(3, -1))
        seen = {}
        for name, t in (("q", q), ("k", k), ("v", v)):
            t.register_hook(lambda g, name=name: seen.__setitem__(name, tuple(g.stride())))
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v)
        (out * out).sum().backward()
        results.append((seen, x.grad.numpy()))
    assert results[0][0] == results[1][0] == dict.fromkeys("qkv", (72, 6, 18, 1))
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-10, atol=1e-12)


def test_float32_normal_cdf_never_calls_scipys_erf(monkeypatch):
    """ops/gelu_kernels.py: float32 Φ(x) uses the Eigen/XLA rational erf in NumPy calls
    (SciPy's scalar erf is ~40x slower per element); only other dtypes use SciPy's. Path
    test: float32 0-d GELU and the slope-less gelu_backward run with SciPy's erf gone;
    they stay within float32 rounding of torch."""
    from tapegrad.ops import activation
    from tapegrad.ops.gelu_kernels import gelu_backward

    def no_scipy(x):
        raise AssertionError("SciPy's erf called for float32")

    xs = np.array([-2.5, -0.3, 0.0, 0.7, 3.1], np.float32)
    monkeypatch.setattr(activation, "_erf_array", no_scipy)
    mine = [tg.nn.functional.gelu(tg.tensor(v)).item() for v in xs]
    back = gelu_backward(tg.ones(5), tg.tensor(xs)).numpy()
    monkeypatch.undo()
    theirs = [torch.nn.functional.gelu(torch.tensor(v)).item() for v in xs]
    np.testing.assert_allclose(mine, theirs, rtol=4e-7, atol=4e-7)
    tb = torch.ops.aten.gelu_backward(torch.ones(5), torch.tensor(xs)).numpy()
    np.testing.assert_allclose(back, tb, rtol=4e-7, atol=4e-7)
    with pytest.raises(AssertionError, match="SciPy's erf"):  # float64 does use it
        monkeypatch.setattr(activation, "_erf_array", no_scipy)
        tg.nn.functional.gelu(tg.tensor([0.5], dtype=tg.float64))


def test_ddp_keeps_its_dim_argument_with_torchs_default(monkeypatch):
    """DistributedDataParallel(module, dim=0): torch keeps ``dim`` as an attribute (its
    device_ids path scatters inputs along it); tapegrad accepts and keeps it likewise."""
    ddp = fake_world_of_one(monkeypatch)
    sig = inspect.signature(ddp.DistributedDataParallel).parameters["dim"]
    assert (
        sig.default
        == inspect.signature(torch.nn.parallel.DistributedDataParallel).parameters["dim"].default
    )
    assert ddp.DistributedDataParallel(tg.nn.Linear(2, 1)).dim == 0
    assert ddp.DistributedDataParallel(tg.nn.Linear(2, 1), dim=1).dim == 1


@pytest.mark.parametrize(("shape", "index"), [((0, 3), []), ((3, 0), [2, 0, 2]), ((2, 0, 4), [1])])
def test_gradient_of_integer_indexing_into_an_empty_tensor_matches_torch(shape, index):
    """Integer-array indexing of a tensor with no elements: an empty gradient of its shape
    (the scatter-add of the backward has no rows to sum)."""
    grads = []
    for lib in (tg, torch):
        x = lib.zeros(shape, dtype=lib.float64, requires_grad=True)
        x[lib.tensor(index, dtype=lib.int64)].sum().backward()
        grads.append(x.grad.numpy())
    assert grads[0].shape == grads[1].shape == shape


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_backward_split_over_rows_gives_the_one_thread_bits(dtype):
    """gelu_backward without the forward's slope on a large array computes Φ(x) row-split
    (_cdf_kernel, Note [Intra-op parallelism]): the same bits as the one-thread path on
    pieces below the split size, and torch's values."""
    from tapegrad._parallel import MIN_ELEMENTS
    from tapegrad.ops.gelu_kernels import gelu_backward

    n = 2 * MIN_ELEMENTS
    x = np.linspace(-9.0, 9.0, n).astype(dtype)
    g = np.random.default_rng(6).standard_normal(n).astype(dtype)
    whole = gelu_backward(tg.tensor(g), tg.tensor(x)).numpy()
    parts = [
        gelu_backward(tg.tensor(g[i : i + 1000]), tg.tensor(x[i : i + 1000])).numpy()
        for i in range(0, n, 1000)
    ]
    np.testing.assert_array_equal(whole, np.concatenate(parts))
    theirs = torch.ops.aten.gelu_backward(torch.tensor(g), torch.tensor(x)).numpy()
    tol = 1e-6 if dtype == "float32" else 1e-14
    np.testing.assert_allclose(whole, theirs, rtol=tol, atol=tol)


def test_renorm_with_maxnorm_zero_zeroes_every_nonzero_slice_like_torch():
    """maxnorm = 0 is allowed (only a negative one raises): each slice of nonzero norm is
    scaled to 0, a zero slice stays; gradients as torch's."""
    x_np = np.array([[1.0, -2.0], [0.0, 0.0], [3.0, 0.5]])
    results = []
    for lib in (tg, torch):
        x = lib.tensor(x_np, requires_grad=True)
        out = lib.renorm(x, 2, 0, 0.0)
        (out * lib.tensor(x_np + 1.0)).sum().backward()
        results.append([out.detach().numpy(), x.grad.numpy()])
        with pytest.raises(RuntimeError, match="maxnorm"):
            lib.renorm(x, 2, 0, -1.0)
    for mine, theirs in zip(*results, strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-15)


def test_complex_logaddexp_with_equal_finite_or_one_infinite_real_part_matches_torch():
    """torch's complex logaddexp special-cases only real parts that are both infinite and
    equal: equal finite real parts, or one -inf real part, take the general formula."""
    a = np.array([-1.0 + 0.5j, -1.0 + 0.0j, complex(-np.inf, 0.0), 2.0 + 1.0j])
    b = np.array([-1.0 - 0.25j, -1.0 + 2.0j, 1.0 + 0.5j, complex(-np.inf, 0.0)])
    mine = tg.logaddexp(tg.tensor(a), tg.tensor(b)).numpy()
    theirs = torch.logaddexp(torch.tensor(a), torch.tensor(b)).numpy()
    np.testing.assert_allclose(mine, theirs, rtol=1e-14, atol=1e-15)


def test_legacy_variable_defaults_and_volatile_like_torch():
    """Variable(t) does not require grad; volatile (removed in torch 0.4) only warns, and
    with requires_grad warns, then raises ValueError, as torch's legacy constructor."""
    for lib in (tg, torch):
        variable = lib.autograd.Variable
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert not variable(lib.ones(2)).requires_grad
            assert variable(lib.ones(2), True).requires_grad
            assert tuple(variable().shape) == (0,)
        with pytest.warns(UserWarning, match="volatile was removed and now has no effect") as w:
            assert not variable(lib.ones(2), volatile=True).requires_grad
        if lib is tg:
            assert w[0].filename == __file__  # the user's line (Note [Warning locations])
        with pytest.warns(UserWarning, match="volatile was removed"):  # first the warning
            with pytest.raises(ValueError, match="can't be volatile and require_grad"):
                variable(lib.ones(2), requires_grad=True, volatile=True)


@pytest.mark.parametrize(
    "method",
    ["identity", "random_unstructured", "l1_unstructured", "random_structured", "ln_structured"],
)
def test_prune_functions_return_the_module_like_torch(method):
    args = {
        "identity": (),
        "random_unstructured": (0.5,),
        "l1_unstructured": (2,),
        "random_structured": (1, 0),
        "ln_structured": (1, 2, 0),
    }[method]
    torch_prune = importlib.import_module("torch.nn.utils.prune")
    for lib, prune in ((tg, tg.nn.utils.prune), (torch, torch_prune)):
        module = lib.nn.Linear(3, 2)
        assert getattr(prune, method)(module, "weight", *args) is module
        assert tuple(module.weight_mask.shape) == (2, 3)


def test_linear_split_forward_splits_from_two_rows(step_mode):
    """nn/_linear_split.py: in step mode a product of m·n·k >= 2·BLOCK_MNK splits into row
    blocks from m = 2 rows (two blocks of one row, each >= BLOCK_MNK); one row, however long,
    is not split (the caller's one GEMM). Values within a row split's rounding of the whole
    product."""
    from tapegrad.nn import _linear_split

    n_in = n_out = 1024
    assert 2 * n_out * n_in == 2 * _linear_split.BLOCK_MNK
    rng = np.random.default_rng(8)
    w = rng.standard_normal((n_out, n_in)).astype(np.float32)
    x = rng.standard_normal((2, n_in)).astype(np.float32)
    out = _linear_split.forward(x, w, None)
    assert out is not None
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-5, atol=1e-4)
    wide = np.ones((n_out, 2 * n_in), np.float32)  # one row of m·n·k = 2·BLOCK_MNK
    assert _linear_split.forward(np.ones((1, 2 * n_in), np.float32), wide, None) is None


def test_as_strided_of_a_dtype_view_reads_the_storage_in_the_views_dtype_like_torch():
    """The storage of a view with another dtype (view_as_real, view_as_complex) is the
    base's memory read in the view's dtype: as_strided over view_as_real of complex128 sees
    2x as many float64 parts, over view_as_complex of float64 half as many complex, as
    torch."""
    c = np.array([1 + 2j, 3 + 4j, 5 + 6j])
    f = np.array([[1.5, -2.0], [3.25, 4.0], [-5.0, 6.5]])
    results = []
    for lib in (tg, torch):
        real = lib.view_as_real(lib.tensor(c))[1:]
        comp = lib.view_as_complex(lib.tensor(f))[1:]
        results.append(
            [
                real.as_strided((3,), (2,), 1).numpy(),
                real.as_strided((2, 2), (1, 2), 2).numpy(),
                comp.as_strided((2,), (2,), 0).numpy(),
                np.array([real.storage_offset(), comp.storage_offset()]),
            ]
        )
    for mine, theirs in zip(*results, strict=True):
        np.testing.assert_array_equal(mine, theirs)
