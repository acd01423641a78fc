"""Tests for list D of the never-flipped condition mutants (tools/weakmut.py) in
src/tapegrad/nn: each test puts a condition of nn/ on the boundary no other test reaches
(a value equal to a bound, a length of 2, a single head, an equal pair) and compares with
torch. Each test that names a mutant was seen to fail on it. Differences from torch fixed
with these tests: nn.RNN/LSTM/GRU refuse dropout=False (any bool) and packed data that is
not 2-D with torch's errors, nn.Hardtanh raises torch's AssertionError for max_val <=
min_val, and softmax/log_softmax/softmin warn for an implicit dim as torch."""

import signal
import types
import warnings

import numpy as np
import pytest

import tapegrad as tg

from ._fake_world import fake_world_of_one


def _lstm_weights(lib, h, i):
    rng = np.random.default_rng(0)
    shapes = [(4 * h, i), (4 * h, h), (4 * h,), (4 * h,)]
    return [lib.tensor(rng.standard_normal(s).astype(np.float32)) for s in shapes]


_RNN_FLAGS = dict(has_biases=True, num_layers=1, dropout=0.0, train=False, bidirectional=False)


def test_aten_lstm_with_two_positional_arguments_picks_the_overload_like_torch(torch_mod):
    """_rnn_aten.py:50 [const] '1' -> '2' and :51 [compare] 'len(args) > 2' -> '>= 2':
    ``torch.lstm(data, batch_sizes, hx=..., params=...)`` (the packed overload) and
    ``torch.lstm(input, hx, params=...)`` (the padded one), the rest by keyword."""
    rng = np.random.default_rng(1)
    data = rng.standard_normal((5, 2)).astype(np.float32)
    x = rng.standard_normal((4, 2, 2)).astype(np.float32)
    results = []
    for lib in (torch_mod, tg):
        w = _lstm_weights(lib, 3, 2)
        hp = (lib.zeros(1, 3, 3), lib.zeros(1, 3, 3))
        packed = lib.lstm(
            lib.tensor(data), lib.tensor([3, 2]), hx=hp, params=w, **_RNN_FLAGS
        )  # fmt: skip
        h = (lib.zeros(1, 2, 3), lib.zeros(1, 2, 3))
        padded = lib.lstm(lib.tensor(x), h, params=w, batch_first=False, **_RNN_FLAGS)
        results.append([t.detach().numpy() for t in packed + padded])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_softmax2d_accepts_unbatched_3d_input(torch_mod):
    """activation_ext.py:235 [const] '3' -> '4': (C, H, W) input is softmaxed over C."""
    x = np.random.default_rng(2).standard_normal((3, 2, 2)).astype(np.float32)
    want = torch_mod.nn.Softmax2d()(torch_mod.tensor(x)).numpy()
    got = tg.nn.Softmax2d()(tg.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_adaptive_softmax_accepts_a_cutoff_of_n_classes_minus_one(torch_mod):
    """adaptive.py:61 [compare] '>' -> '>=' and [const] '1' -> '2': torch allows the last
    cutoff at n_classes - 1 (a tail cluster of one class) and refuses n_classes."""
    for lib in (torch_mod, tg):
        m = lib.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [9])
        assert tuple(m.head.weight.shape) == (10, 4)
        with pytest.raises(ValueError, match="cutoffs should be a sequence"):
            lib.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [10])


def test_multihead_attention_sizes_of_zero_and_one(torch_mod):
    """attention.py:47 [compare] 'embed_dim <= 0' -> '< 0' and both [const] '0' -> '1':
    embed_dim 0 or num_heads 0 raise torch's ValueError; embed_dim 1 with one head works."""
    for lib in (torch_mod, tg):
        for e, h in ((0, 1), (4, 0)):
            with pytest.raises(ValueError, match="must be greater than 0"):
                lib.nn.MultiheadAttention(e, h)
    x = np.arange(3.0, dtype=np.float32).reshape(3, 1, 1)
    outs = []
    for lib in (torch_mod, tg):
        lib.manual_seed(0)
        m = lib.nn.MultiheadAttention(1, 1)
        with lib.no_grad():
            m.in_proj_weight.copy_(lib.tensor([[0.5], [-1.0], [2.0]]))
            m.out_proj.weight.fill_(1.5)
        out, attn = m(lib.tensor(x), lib.tensor(x), lib.tensor(x))
        outs.append((out.detach().numpy(), attn.detach().numpy()))
    for got, want in zip(outs[1], outs[0]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_sequential_insert_at_zero_and_negative_positions(torch_mod):
    """container.py:84 [compare] 'index < 0' -> '<= 0' and [const] '0' -> '1':
    Sequential.insert(0, m) puts m first; a negative index counts from the end, as torch."""
    names = []
    for lib in (torch_mod, tg):
        seq = lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh())
        seq.insert(0, lib.nn.Sigmoid())
        seq.insert(-1, lib.nn.Identity())
        seq.insert(-4, lib.nn.ELU())
        names.append([type(m).__name__ for m in seq])
        with pytest.raises(IndexError, match="Index out of range: -6"):
            seq.insert(-6, lib.nn.ELU())
    assert names[1] == names[0] == ["ELU", "Sigmoid", "ReLU", "Identity", "Tanh"]


@pytest.mark.parametrize("p", [1.005, -0.005])
def test_dropout_rejects_a_probability_just_outside_0_1(torch_mod, p):
    """dropout.py:17 and functional.py:318 [const] '1.0' -> '1.01'."""
    for lib in (torch_mod, tg):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            lib.nn.Dropout(p)
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            lib.nn.functional.dropout(lib.ones(3), p)
        assert lib.nn.Dropout(1.0).p == 1.0


def test_batch_norm_trains_on_two_values_per_channel(torch_mod):
    """functional.py:269 [const] '1' -> '2': two values per channel are enough (one is not)."""
    x = np.array([[1.0, 2.0, 3.0], [4.0, 6.0, 9.0]], np.float32)
    outs = []
    for lib in (torch_mod, tg):
        rm, rv = lib.zeros(3), lib.ones(3)
        out = lib.nn.functional.batch_norm(lib.tensor(x), rm, rv, training=True)
        outs.append([out.numpy(), rm.numpy(), rv.numpy()])
        with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
            lib.nn.functional.batch_norm(lib.tensor(x[:1]), None, None, training=True)
    for got, want in zip(outs[1], outs[0]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("missing", ["running_mean", "running_var"])
def test_batch_norm_eval_without_one_running_statistic_raises(torch_mod, missing):
    """functional.py:284 [boolop] 'or' -> 'and': one of the two missing is enough for
    torch's RuntimeError in evaluation mode."""
    for lib in (torch_mod, tg):
        stats = {"running_mean": lib.zeros(3), "running_var": lib.ones(3), missing: None}
        with pytest.raises(RuntimeError, match="running_(mean|var)"):
            lib.nn.functional.batch_norm(lib.ones(2, 3), **stats, training=False)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_softmax_without_dim_warns_and_takes_dim_0_of_a_0d_tensor(torch_mod, name):
    """functional.py:338 [const] '0' -> '1' (the 0 of ``(0, 1, 3)``): the implicit dim of a
    0-d tensor is 0. torch warns that the implicit choice is deprecated, naming the
    function; tapegrad did not warn (fixed)."""
    match = f"Implicit dimension choice for {name} has been deprecated"
    with pytest.warns(UserWarning, match=match):
        want = getattr(torch_mod.nn.functional, name)(torch_mod.tensor(2.0)).numpy()
    with pytest.warns(UserWarning, match=match) as record:
        got = getattr(tg.nn.functional, name)(tg.tensor(2.0))
    assert record[0].filename == __file__  # the user's line (Note [Warning locations])
    assert got.shape == ()
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("shape", [(), (2,)])
@pytest.mark.parametrize("dim", [1, -2])
def test_softmax_of_0d_and_1d_rejects_dims_past_one(torch_mod, shape, dim):
    """functional.py:339 [const] '1' -> '2' (both): a 0-d or 1-d tensor has the dims -1 and
    0 only; torch raises IndexError."""
    x = np.ones(shape, np.float32)
    for lib in (torch_mod, tg):
        with pytest.raises(IndexError, match="out of range"):
            lib.nn.functional.softmax(lib.tensor(x), dim)


def test_embedding_padding_idx_bounds(torch_mod):
    """functional.py:403 [compare] 'padding_idx > 0' -> '>= 0' and [const] '0' -> '1', :406
    [compare] 'padding_idx < -n' -> '<= -n': padding_idx 0 on an empty table is allowed,
    padding_idx 1 of one row is not, padding_idx -n is row 0 (its gradient is zero)."""
    w = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    grads = []
    for lib in (torch_mod, tg):
        f = lib.nn.functional
        empty = f.embedding(lib.zeros(0, dtype=lib.int64), lib.zeros(0, 3), padding_idx=0)
        assert tuple(empty.shape) == (0, 3)
        with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
            f.embedding(lib.zeros(2, dtype=lib.int64), lib.zeros(1, 3), padding_idx=1)
        weight = lib.tensor(w, requires_grad=True)
        out = f.embedding(lib.tensor([0, 2, 0, 1]), weight, padding_idx=-3)
        out.sum().backward()
        grads.append((out.detach().numpy(), weight.grad.numpy()))
    for got, want in zip(grads[1], grads[0]):
        np.testing.assert_array_equal(got, want)


def _copy_params(src, dst, lib):
    with lib.no_grad():
        for name, p in src.named_parameters():
            getattr(dst, name).copy_(lib.tensor(p.detach().numpy()))


def test_rnn_with_hidden_size_one_draws_nonzero_weights(torch_mod):
    """rnn.py:61 [const] '0' -> '1' and :109 [const] '0' -> '1' (RNNBase), :415 [const]
    '0' -> '1' (RNNCellBase): hidden_size 1 is valid and the weights are drawn from
    U(-1, 1) (stdv 1/sqrt(1)), as torch's."""
    for lib in (torch_mod, tg):
        for m in (lib.nn.GRU(2, 1), lib.nn.RNNCell(2, 1)):
            w = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
            assert np.all(np.abs(w) <= 1.0) and np.count_nonzero(w) == w.size


def test_reset_parameters_with_hidden_size_zero_zeroes_the_weights(torch_mod):
    """rnn.py:109 and :415 [compare] 'self.hidden_size > 0' -> '>= 0': torch's stdv is 0
    for hidden_size 0 (no division by zero): an RNNCell(3, 0) builds (empty weights), and
    an RNN or RNNCell whose hidden_size is set to 0 resets to zeros."""
    for lib in (torch_mod, tg):
        cell = lib.nn.RNNCell(3, 0)
        assert tuple(cell(lib.ones(2, 3)).shape) == (2, 0)
        for m in (lib.nn.RNN(2, 3), lib.nn.RNNCell(2, 3)):
            m.hidden_size = 0
            m.reset_parameters()
            assert all(not p.detach().numpy().any() for p in m.parameters())


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
def test_lstm_with_proj_size_one_matches_torch(torch_mod):
    """rnn.py:84, :97 and :192 [const] '0' -> '1': proj_size 1 projects h to one feature
    (weight_hr of shape (1, H), h_0 of width 1)."""
    x = np.random.default_rng(3).standard_normal((4, 2, 2)).astype(np.float32)
    theirs = torch_mod.nn.LSTM(2, 3, proj_size=1)
    ours = tg.nn.LSTM(2, 3, proj_size=1)
    assert tuple(ours.weight_hr_l0.shape) == (1, 3) and tuple(ours.weight_hh_l0.shape) == (12, 1)
    _copy_params(theirs, ours, tg)
    want, (wh, wc) = theirs(torch_mod.tensor(x))
    got, (gh, gc) = ours(tg.tensor(x))
    for g, w in ((got, want), (gh, wh), (gc, wc)):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_lstm_rejects_a_hidden_state_tuple_of_three(torch_mod):
    """rnn.py:225 [boolop] 'or' -> 'and': a tuple of three is refused with torch's
    RuntimeError (not an unpacking ValueError)."""
    for lib in (torch_mod, tg):
        lstm = lib.nn.LSTM(2, 3)
        with pytest.raises(RuntimeError):
            lstm(lib.ones(4, 1, 2), (lib.zeros(1, 1, 3),) * 3)


@pytest.mark.parametrize("dropout", [True, False])
def test_rnn_rejects_a_boolean_dropout_like_torch(torch_mod, dropout):
    """rnn.py:56 [const] 'True' -> 'False' (``dropout is True``): torch refuses any bool
    (``isinstance(dropout, bool)``), False too, which tapegrad accepted (fixed)."""
    for lib in (torch_mod, tg):
        with pytest.raises(ValueError, match="dropout should be a number in range"):
            lib.nn.LSTM(2, 3, dropout=dropout)
        assert lib.nn.LSTM(2, 3, dropout=0).dropout == 0


@pytest.mark.parametrize("mode", ["RNN", "GRU", "LSTM"])
def test_rnn_rejects_packed_data_of_three_dims_like_torch(torch_mod, mode):
    """rnn.py:186 [binop] 'data.shape[-1]' -> 'data.shape[1]' is equivalent once packed data
    must be 2-D: torch raises RuntimeError for a packed (T, B, H1, H2) batch, where tapegrad
    raised a broadcasting ValueError (fixed)."""
    for lib in (torch_mod, tg):
        m = getattr(lib.nn, mode)(4, 3)
        for shape in ((5, 2, 3, 4), (5, 2, 4, 3)):
            p = lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(*shape), lib.tensor([5, 3]))
            # torch's LSTM fails its hidden-state shape check first (another message)
            msg = None if lib is torch_mod else "input must have 2 dimensions, got 3"
            with pytest.raises(RuntimeError, match=msg):
                m(p)


@pytest.mark.parametrize("bounds", [(0.5, 0.5), (1.0, -1.0)])
def test_hardtanh_module_needs_max_val_above_min_val(torch_mod, bounds):
    """activation_ext.py:101 [compare] 'min_val > max_val' -> '>=': torch's nn.Hardtanh
    raises AssertionError when max_val <= min_val (equal bounds too), where tapegrad
    accepted equal bounds and raised ValueError otherwise (fixed); F.hardtanh allows equal
    bounds in both."""
    lo, hi = bounds
    for lib in (torch_mod, tg):
        with pytest.raises(AssertionError, match=rf"max_val \({hi}\) must be greater than"):
            lib.nn.Hardtanh(lo, hi)
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    want = torch_mod.nn.functional.hardtanh(torch_mod.tensor(x), 0.5, 0.5).numpy()
    np.testing.assert_array_equal(tg.nn.functional.hardtanh(tg.tensor(x), 0.5, 0.5).numpy(), want)


def test_linear_cross_entropy_loss_label_smoothing_of_one(torch_mod):
    """linear_cross_entropy_loss.py:43 [compare] '>' -> '>=' and [const] '1.0' -> '1.01':
    label_smoothing 1.0 is allowed (a uniform target), 1.005 is not."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    losses = []
    for lib in (torch_mod, tg):
        m = lib.nn.LinearCrossEntropyLoss(3, 4, label_smoothing=1.0)
        with lib.no_grad():
            m.linear.weight.copy_(lib.tensor(w))
        losses.append(m(lib.tensor(x), lib.tensor([1, 2])).item())
        with pytest.raises(RuntimeError, match=r"label_smoothing to be in range \[0, 1\]"):
            lib.nn.LinearCrossEntropyLoss(3, 4, label_smoothing=1.005)
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-6)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_circular_pad_of_unbatched_input(torch_mod, dims):
    """padding.py:70 [binop] 'self.dims + 1' -> '- 1' and [const] '1' -> '2': CircularPadNd
    takes (C, *spatial) input, dims + 1 dimensions."""
    x = np.arange(2.0 * 3**dims, dtype=np.float32).reshape((2,) + (3,) * dims)
    name = f"CircularPad{dims}d"
    want = getattr(torch_mod.nn, name)(1)(torch_mod.tensor(x)).numpy()
    np.testing.assert_array_equal(getattr(tg.nn, name)(1)(tg.tensor(x)).numpy(), want)


def _prune(lib):
    import importlib

    return importlib.import_module(lib.__name__ + ".nn.utils.prune")


def test_prune_amount_float_bounds(torch_mod):
    """utils/_prune_base.py:226 [compare] '>' -> '>=', '<' -> '<=' and both [const]: the
    float amounts 1.0 and 0.0 are allowed (prune all, none), 1.005 and -0.0005 are not,
    0.0005 is (prunes round(0.0005 * 6) = 0 entries)."""
    for lib in (torch_mod, tg):
        kept = []
        for amount in (1.0, 0.0, 0.0005):
            m = lib.nn.Linear(3, 2)
            _prune(lib).l1_unstructured(m, "weight", amount=amount)
            kept.append(int(m.weight_mask.sum()))
        assert kept == [0, 6, 6]
        for amount in (1.005, -0.0005):
            with pytest.raises(ValueError, match="should either be a float in the range"):
                _prune(lib).l1_unstructured(lib.nn.Linear(3, 2), "weight", amount=amount)


@pytest.mark.parametrize("missing", ["running_mean", "running_var"])
def test_fusing_with_one_running_statistic_missing_raises(torch_mod, missing):
    """utils/fusion.py:29 [boolop] 'or' -> 'and': torch asserts both statistics exist."""
    import importlib

    for lib in (torch_mod, tg):
        fusion = importlib.import_module(lib.__name__ + ".nn.utils.fusion")
        bn = lib.nn.BatchNorm2d(2).eval()
        setattr(bn, missing, None)
        with pytest.raises(AssertionError, match="must not be None"):
            fusion.fuse_conv_bn_eval(lib.nn.Conv2d(2, 2, 1).eval(), bn)


@pytest.mark.parametrize("child", ["Sequential", "Linear"])
def test_is_parametrized_ignores_a_child_named_parametrizations(torch_mod, child):
    """utils/parametrize.py:174 [boolop] 'or' -> 'and': a submodule called
    ``parametrizations`` that is not a ModuleDict does not make a module parametrized."""
    for lib in (torch_mod, tg):
        m = lib.nn.Module()
        m.parametrizations = (
            lib.nn.Sequential(lib.nn.ReLU()) if child == "Sequential" else lib.nn.Linear(2, 2)
        )
        assert lib.nn.utils.parametrize.is_parametrized(m) is False


def test_pack_and_pad_sequences_of_equal_lengths(torch_mod):
    """utils/rnn.py:96 [compare] 'np.diff(lens) > 0' -> '>= 0': equal lengths are sorted;
    :134 [compare] 'total_length < t_max' -> '<=': total_length may equal the longest."""
    x = np.arange(12.0, dtype=np.float32).reshape(3, 2, 2)
    outs = []
    for lib in (torch_mod, tg):
        r = lib.nn.utils.rnn
        p = r.pack_padded_sequence(lib.tensor(x), lib.tensor([3, 3]))
        padded, lengths = r.pad_packed_sequence(p, total_length=3)
        outs.append((p.data.numpy(), p.batch_sizes.numpy(), padded.numpy(), lengths.numpy()))
        with pytest.raises(ValueError, match="Expected total_length to be at least"):
            r.pad_packed_sequence(p, total_length=2)
    for got, want in zip(outs[1], outs[0]):
        np.testing.assert_array_equal(got, want)


def _ddp_counting(monkeypatch, **kwargs):
    calls = []
    done = types.SimpleNamespace(Test=lambda: True, Wait=lambda: None)

    def iallreduce(send, recv, op):
        calls.append(recv.nbytes)
        return done

    ddp = fake_world_of_one(monkeypatch, [], Iallreduce=iallreduce)
    return ddp.DistributedDataParallel(tg.nn.Linear(2, 1), **kwargs), calls


def test_ddp_parameters_that_fill_the_cap_exactly_share_a_bucket(monkeypatch):
    """parallel/distributed.py:130 [compare] 'size + nbytes > cap' -> '>=': Linear(2, 1)'s
    bias (4 bytes) and weight (8 bytes) fill a 12-byte cap exactly: one bucket, one
    all-reduce of 12 bytes per backward; an 11-byte cap splits them."""
    model, calls = _ddp_counting(monkeypatch, bucket_cap_mb=12 / 2**20)
    assert model.bucket_bytes_cap == 12
    model(tg.ones(3, 2)).sum().backward()
    assert calls == [12]
    model, calls = _ddp_counting(monkeypatch, bucket_cap_mb=11 / 2**20)
    model(tg.ones(3, 2)).sum().backward()
    assert sorted(calls) == [4, 8]


def test_ddp_forward_under_no_sync_backward_after_it_stays_local(monkeypatch):
    """parallel/distributed.py:182 [boolop] 'not armed or not sync' -> 'and': as torch (its
    forward prepares the reducer only outside no_sync), a forward run inside no_sync does
    not all-reduce, even when its backward runs after the block."""
    model, calls = _ddp_counting(monkeypatch)
    with model.no_sync():
        out = model(tg.ones(3, 2))
    out.sum().backward()
    assert calls == []
    np.testing.assert_array_equal(model.module.bias.grad.numpy(), [3.0])
    model(tg.ones(3, 2)).sum().backward()
    assert sorted(calls) == [12]
    np.testing.assert_array_equal(model.module.bias.grad.numpy(), [6.0])


def _trunc_normal_warns(lib, mean, std, a, b):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib.nn.init.trunc_normal_(lib.empty(5), mean, std, a, b)
    return any("more than 2 std from [a, b]" in str(w.message) for w in caught)


@pytest.mark.parametrize(
    "mean, warns",
    [(-3.0, False), (3.0, False), (-3.25, True), (3.25, True), (-4.0, True), (4.0, True)],
)
def test_trunc_normal_warns_for_a_mean_more_than_two_std_outside(torch_mod, mean, warns):
    """init.py:197 [compare] '<' -> '<=', '>' -> '>=', [binop] '2 * std' -> '2 / std' and
    [const] '2' -> '3' (each side): with std 0.5 on [-2, 2] the bounds are -3 and 3 (no
    warning there, exactly 2 std), and -3.25 or -4 (3.25 or 4) warn, as torch."""
    assert _trunc_normal_warns(torch_mod, mean, 0.5, -2.0, 2.0) is warns
    assert _trunc_normal_warns(tg, mean, 0.5, -2.0, 2.0) is warns


def _alarm(signum, frame):
    raise TimeoutError("trunc_normal_ did not finish")


def test_trunc_normal_of_a_far_tail_with_a_small_std_finishes():
    """init.py:208 [binop] '(a - mean) / std' -> '* std': [1, 2] with std 0.1 holds ~1e-23 of
    the normal's mass, so torch's (and tapegrad's) uniform-proposal sampler is taken; the
    mutant's mass (> 0.3) picks the redraw loop, which never ends (stopped by an alarm)."""
    w = tg.empty(20)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, 3.0)
    try:
        with pytest.warns(UserWarning, match="more than 2 std"):
            tg.nn.init.trunc_normal_(w, 0.0, 0.1, 1.0, 2.0, generator=tg.Generator().manual_seed(0))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    x = w.numpy()
    assert x.min() >= 1.0 and x.max() <= 2.0 and x.mean() < 1.1


def test_softmax_module_without_dim_warns_at_the_users_line():
    """nn.Softmax() calls F.softmax one frame deeper: the warning still names the caller."""
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax") as record:
        tg.nn.Softmax()(tg.ones(2, 3))
    assert record[0].filename == __file__
