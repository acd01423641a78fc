"""Tests for lines of nn/ that no in-process test ran (the twelfth session's coverage map,
list n): each is seen to fail on its mutant.

Two bugs found on the way, fixed: nll_loss / cross_entropy with class indices refused a
``weight`` that requires grad with NotImplementedError also under no_grad (torch: a
RuntimeError, and only where grad mode is on); an uninitialized parameter's ``cpu()`` gave a
plain empty tensor where torch gives the parameter itself.
"""

import collections
import types

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

from ._fake_world import fake_world_of_one


@pytest.fixture
def step_mode():
    """TAPEGRAD_INTRA_OP=step (Note [One pool per step]) for one test."""
    from tapegrad import _parallel

    prev = _parallel.STEP[0]
    _parallel.STEP[0] = True
    yield
    _parallel.STEP[0] = prev


def _both(torch, fn):
    """``fn(lib)`` for tapegrad and torch, as NumPy arrays."""
    return [np.asarray(fn(lib).detach().numpy()) for lib in (tg, torch)]


# -- attention kernels ------------------------------------------------------------------


def test_attention_transposed_view_of_a_strided_array_is_a_contiguous_copy():
    """nn/_attention_ops.py:187: ``_tv`` of an array that is not C-contiguous gives the
    swapped axes as a C-contiguous copy (its callers' matmul then reads it)."""
    from tapegrad.nn._attention_ops import _tv

    a = np.arange(24.0).reshape(2, 3, 4)[:, :, ::2]
    got = _tv(a)
    np.testing.assert_array_equal(got, a.swapaxes(-1, -2))
    assert got.flags.c_contiguous
    c = np.arange(6.0).reshape(2, 3)
    assert np.shares_memory(_tv(c), c)  # the C-contiguous case stays a view


def test_attention_split_backward_declines_a_gradient_of_another_dtype(step_mode):
    """nn/_attention_split.py:69: the split backward returns None (its caller's path)
    when the incoming gradient's dtype is not the inputs'."""
    from tapegrad.nn import _attention_split as split

    q = np.ones((2, 256, 4), np.float32)
    p = np.full((2, 256, 256), 1.0 / 256, np.float32)
    assert split.backward(np.ones((2, 256, 4), np.float32), p, q, q, q, 0.5) is not None
    assert split.backward(np.ones((2, 256, 4)), p, q, q, q, 0.5) is None


# -- SWA utilities -----------------------------------------------------------------------


def test_averaged_model_moves_its_copy_to_the_device(torch_mod):
    """nn/_averaged_model.py:50: ``AveragedModel(model, device=...)`` puts its copy there."""
    for lib in (tg, torch_mod):
        swa = lib.optim.swa_utils.AveragedModel(lib.nn.Linear(2, 2), device="meta")
        assert swa.module.weight.device.type == "meta"


def test_update_bn_moves_each_batch_with_device(torch_mod):
    """nn/_averaged_model.py:125: ``update_bn(loader, model, device)`` sends each batch
    through ``.to(device)`` (here a dtype, as torch allows: float32 batches, float64 model)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((2, 2))
    batches = [rng.standard_normal((3, 2)).astype(np.float32) for _ in range(2)]
    means = []
    for lib in (tg, torch_mod):
        model = lib.nn.Sequential(lib.nn.Linear(2, 2, bias=False), lib.nn.BatchNorm1d(2))
        model = model.to(lib.float64)
        with lib.no_grad():
            model[0].weight.copy_(lib.tensor(w))
        lib.optim.swa_utils.update_bn([lib.tensor(b) for b in batches], model, device=lib.float64)
        means.append(model[1].running_mean.numpy())
    np.testing.assert_allclose(means[0], means[1], rtol=1e-12)


# -- losses ------------------------------------------------------------------------------


def test_ctc_loss_unbatched_takes_a_1d_target(torch_mod):
    """An unbatched (T, C) input with a 1-D target and 0-d lengths (nn/_ctc.py:108 made the
    target a padded (1, S) row: removed, as the 1-D concatenated layout reads the same labels
    for the one sample)."""
    rng = np.random.default_rng(1)
    lp = rng.standard_normal((6, 4))
    got, want = _both(
        torch_mod,
        lambda lib: (
            F.ctc_loss(
                lib.tensor(lp).log_softmax(-1), lib.tensor([1, 2, 2]), lib.tensor(6), lib.tensor(3)
            )
            if lib is tg
            else lib.nn.functional.ctc_loss(
                lib.tensor(lp).log_softmax(-1), lib.tensor([1, 2, 2]), lib.tensor(6), lib.tensor(3)
            )
        ),
    )
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_normalize_refuses_out():
    """nn/_distance.py:38: ``out=`` is a documented limitation of tapegrad's normalize
    (NotImplementedError, not silently ignored)."""
    with pytest.raises(NotImplementedError, match="normalize: out= is not supported"):
        F.normalize(tg.ones(2, 2), out=tg.empty(2, 2))


def test_class_weight_that_requires_grad(torch_mod):
    """nn/_losses.py:50: nll_loss and cross_entropy with class indices refuse a weight that
    requires grad as torch (RuntimeError) where grad mode is on, and take it under no_grad
    (a bug: NotImplementedError in both cases); soft labels stay unsupported."""
    x = np.array([[0.1, 0.2, 0.7], [0.3, -0.2, 0.5]])
    for lib in (tg, torch_mod):
        w = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        t = lib.tensor([0, 2])
        for fn in (lib.nn.functional.nll_loss, lib.nn.functional.cross_entropy):
            with pytest.raises(RuntimeError, match="not differentiable with respect to .*weight"):
                fn(lib.tensor(x), t, weight=w)
    got = []
    for lib in (tg, torch_mod):
        w = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        with lib.no_grad():
            got.append(lib.nn.functional.nll_loss(lib.tensor(x), lib.tensor([0, 2]), weight=w))
    np.testing.assert_allclose(got[0].numpy(), got[1].numpy(), rtol=1e-12)
    w = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="class weight that requires grad"):
        F.cross_entropy(tg.tensor(x), tg.tensor(x).softmax(1), weight=w)


def test_elementwise_loss_weight_of_another_size(torch_mod):
    """nn/_losses.py:259: mse_loss / l1_loss with a ``weight`` not of the input's size."""
    for lib in (tg, torch_mod):
        for fn in (lib.nn.functional.mse_loss, lib.nn.functional.l1_loss):
            with pytest.raises(ValueError, match="Weights and input must have the same size"):
                fn(lib.ones(2, 3), lib.zeros(2, 3), weight=lib.ones(3))


def test_reduce_loss_refuses_an_unknown_reduction():
    """nn/_losses_pointwise.py:53: ``reduce_loss`` raises for a reduction that is none of
    'none' | 'mean' | 'sum' (the losses check theirs first; this is the helper's contract)."""
    from tapegrad.nn._losses_pointwise import reduce_loss

    with pytest.raises(ValueError, match="my_loss: avg is not a valid value for reduction"):
        reduce_loss(tg.ones(2), "avg", "my_loss")


# -- functional odds and ends ------------------------------------------------------------


def test_full_backward_hook_module_keeps_a_namedtuple_output(torch_mod):
    """nn/_hooks.py:168: a module with a full backward hook returns its very output when no
    output requires grad, and (a bug: a list) as a namedtuple of the wrapped
    tensors when one does, as torch."""
    pair = collections.namedtuple("pair", "a b")
    for lib in (tg, torch_mod):

        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lib.nn.Linear(2, 2)

            def forward(self, x):
                y = self.lin(x)
                self.last = pair(y, y * 2)
                return self.last

        for rg in (False, True):
            m = M().requires_grad_(rg)
            m.register_full_backward_hook(lambda *a: None)
            out = m(lib.ones(2))
            assert type(out) is pair and out.b.requires_grad == rg
            assert (out is m.last) == (not rg)  # untouched when nothing needs a gradient


def test_silu_of_a_list_is_a_type_error(torch_mod):
    """nn/_inplace_functional.py:60: ``F.silu`` of a non-tensor raises TypeError."""
    for lib in (tg, torch_mod):
        with pytest.raises(TypeError, match="silu"):
            lib.nn.functional.silu([1.0, 2.0])


def test_linear_split_grads_is_off_without_step_mode():
    """nn/_linear_split.py:107: ``grads`` returns None (its caller's path) when the step
    mode is off, also for a product large enough to split."""
    from tapegrad import _parallel
    from tapegrad.nn import _linear_split

    assert not _parallel.STEP[0]
    g = np.ones((256, 128), np.float32)
    w = np.ones((128, 64), np.float32)
    x = np.ones((256, 64), np.float32)
    assert _linear_split.grads(g, w, x) is None
    _parallel.STEP[0] = True
    try:
        gx, gw = _linear_split.grads(g, w, x)
    finally:
        _parallel.STEP[0] = False
    np.testing.assert_array_equal(gx, g @ w)


def test_layer_norm_over_an_empty_shape_in_step_mode(step_mode, torch_mod):
    """nn/_norm_ops.py:115: layer norm with a weight and a bias over a normalized shape of
    size 0 (the split forward declines it)."""
    for lib in (tg, torch_mod):
        out = lib.nn.functional.layer_norm(lib.ones(3, 0), (0,), lib.ones(0), lib.zeros(0))
        assert tuple(out.shape) == (3, 0)


def test_max_pool2d_fourth_derivative(torch_mod):
    """nn/_pool_link.py:27: the gather's gradient is a scatter with no pooled input; its own
    gradient (a fourth derivative of max_pool2d) has no input gradient to add."""
    rng = np.random.default_rng(2)
    x0, u0 = rng.standard_normal((1, 1, 4, 4)), rng.standard_normal((1, 1, 4, 4))
    w0, z0 = rng.standard_normal((1, 1, 2, 2)), rng.standard_normal((1, 1, 2, 2))
    res = []
    for lib in (tg, torch_mod):
        x = lib.tensor(x0, requires_grad=True)
        w = lib.tensor(w0, requires_grad=True)
        u = lib.tensor(u0, requires_grad=True)
        z = lib.tensor(z0, requires_grad=True)
        y = lib.nn.functional.max_pool2d(x, 3, 1)
        (gx,) = lib.autograd.grad((y * w).sum(), x, create_graph=True)  # scatter(w; x)
        (gw,) = lib.autograd.grad((gx * u).sum(), w, create_graph=True)  # gather(u)
        (gu,) = lib.autograd.grad((gw * z).sum(), u, create_graph=True)  # scatter(z)
        (gz,) = lib.autograd.grad((gu * lib.tensor(u0)).sum(), z)  # gather again
        res.append(gz.numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-12)


# -- torch.gru and friends (nn/_rnn_aten.py) ----------------------------------------------


def _gru_args(lib, input_size=4):
    """(x, h, params) of a one-layer GRU 4 -> 5 over a (3, 2, input_size) input."""
    rng = np.random.default_rng(3)
    x = lib.tensor(rng.standard_normal((3, 2, input_size)), dtype=lib.float32)
    shapes = [(15, 4), (15, 5), (15,), (15,)]
    params = [lib.tensor(rng.standard_normal(s), dtype=lib.float32) for s in shapes]
    return x, lib.zeros(1, 2, 5), params


def test_aten_gru_binds_its_arguments_as_torch(torch_mod):
    """nn/_rnn_aten.py:33, :37, :41, :63: too many arguments, an unknown or repeated
    keyword, missing arguments and an hx that is not a tensor are TypeErrors."""
    for lib in (tg, torch_mod):
        x, h, ps = _gru_args(lib)
        rest = (True, 1, 0.0, False, False)
        with pytest.raises(TypeError, match="gru"):
            lib.gru(x, h, ps, *rest, False, 7)
        with pytest.raises(TypeError, match="gru"):
            lib.gru(x, h, ps, *rest, bogus=1)
        with pytest.raises(TypeError, match="gru"):
            lib.gru(x, h, ps, *rest, batch_first=False, train=False)
        with pytest.raises(TypeError, match="gru"):
            lib.gru(x, h, ps, True, 1, 0.0)
        with pytest.raises(TypeError, match="gru"):
            lib.gru(x, [h], ps, *rest, False)
    x, h, ps = _gru_args(tg)
    rest = (True, 1, 0.0, False, False)
    with pytest.raises(TypeError, match=r"takes 9 arguments but 10 were given"):
        tg.gru(x, h, ps, *rest, False, 7)
    with pytest.raises(TypeError, match="unexpected or repeated argument 'bogus'"):
        tg.gru(x, h, ps, *rest, bogus=1)
    with pytest.raises(TypeError, match="unexpected or repeated argument 'train'"):
        tg.gru(x, h, ps, *rest, batch_first=False, train=False)
    with pytest.raises(TypeError, match="missing required arguments: bidirectional, batch_first"):
        tg.gru(x, h, ps, True, 1, 0.0, False)
    with pytest.raises(TypeError, match="argument 'hx' must be Tensor, not list"):
        tg.gru(x, [h], ps, *rest, False)


def test_aten_gru_checks_dtypes_and_sizes(torch_mod):
    """nn/_rnn_aten.py:108, :113-115, :119: an input of another dtype than the weights, an
    input size that is not weight_ih_l0's (also a 1-D weight or packed data: RuntimeError,
    not an IndexError while building the message) and an hx of the wrong shape."""
    rest = (True, 1, 0.0, False, False)
    for lib in (tg, torch_mod):
        x, h, ps = _gru_args(lib)
        bad = [
            lambda: lib.gru(x.double(), h.double(), ps, *rest, False),
            lambda: lib.gru(_gru_args(lib, 3)[0], h, ps, *rest, False),
            lambda: lib.gru(x, h, [lib.ones(3)] + ps[1:], *rest, False),
            lambda: lib.gru(lib.ones(6), lib.tensor([3, 3]), lib.zeros(1, 3, 5), ps, *rest),
            lambda: lib.gru(x, lib.zeros(2, 2, 5), ps, *rest, False),
            lambda: lib.gru(x, lib.zeros(1, 3, 5), ps, *rest, False),
        ]
        for fn in bad:
            with pytest.raises(RuntimeError):
                fn()
    x, h, ps = _gru_args(tg)
    with pytest.raises(RuntimeError, match="same dtype, but got float64 and float32"):
        tg.gru(x.double(), h.double(), ps, *rest, False)
    with pytest.raises(
        RuntimeError, match=r"input size 3 does not match weight_ih_l0's \(15, 4\) \(expected 4\)"
    ):
        tg.gru(_gru_args(tg, 3)[0], h, ps, *rest, False)
    with pytest.raises(RuntimeError, match=r"input size 4 does not match .*\(3,\) \(expected 3\)"):
        tg.gru(x, h, [tg.ones(3)] + ps[1:], *rest, False)
    with pytest.raises(RuntimeError, match="input size 6 does not match"):
        tg.gru(tg.ones(6), tg.tensor([3, 3]), tg.zeros(1, 3, 5), ps, *rest)
    with pytest.raises(RuntimeError, match=r"expected hx of shape \(1, 2, H\), got \[2, 2, 5\]"):
        tg.gru(x, tg.zeros(2, 2, 5), ps, *rest, False)


# -- uninitialized parameters and buffers --------------------------------------------------


def test_uninitialized_tensor_allowed_methods(torch_mod):
    """nn/_uninitialized.py:125, :128, :131-132, :135, :138, :141, :147: what an
    uninitialized parameter or buffer allows (dtype queries, conversions, an empty copy_)
    answers as torch; ``cpu()`` on the CPU is the tensor itself (a bug: a plain tensor)."""
    for lib in (tg, torch_mod):
        par, buf = lib.nn.parameter.UninitializedParameter, lib.nn.parameter.UninitializedBuffer
        assert (par().is_complex(), par(dtype=lib.complex64).is_complex()) == (False, True)
        assert par().get_device() == -1
        b = buf()
        assert b.copy_(lib.empty(0)) is b
        with pytest.raises(RuntimeError):
            buf().copy_(lib.ones(2))  # a 2-element source does not fit the empty tensor
        moved = par(dtype=lib.float64).to(lib.float32)
        assert moved.dtype == lib.float32 and moved.requires_grad
        assert par().half().dtype == lib.float16
        assert par(dtype=lib.float64).float().dtype == lib.float32
        assert par().cpu().__class__ is par and buf().cpu().__class__ is buf


def test_uninitialized_tensor_refuses_shared_memory_and_pickles(torch_mod):
    """nn/_uninitialized.py:150, :159: ``share_memory_`` raises; a pickle round trip gives an
    uninitialized tensor of the same kind and requires_grad."""
    import pickle

    for lib in (tg, torch_mod):
        par, buf = lib.nn.parameter.UninitializedParameter, lib.nn.parameter.UninitializedBuffer
        for t in (par(), buf()):
            with pytest.raises(RuntimeError, match="Can't share memory on an uninitialized"):
                t.share_memory_()
        for t in (par(requires_grad=False), buf(requires_grad=True)):
            back = pickle.loads(pickle.dumps(t))
            assert type(back) is type(t) and back.requires_grad == t.requires_grad


# -- modules, functional, init -----------------------------------------------------------


def test_adaptive_log_softmax_reset_parameters_redraws_every_weight(torch_mod):
    """nn/adaptive.py:91, :93, :94: ``reset_parameters`` draws the head and both linears
    of each tail cluster again."""
    for lib in (tg, torch_mod):
        m = lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 7], div_value=2.0)
        with lib.no_grad():
            for p in m.parameters():
                p.zero_()
        m.reset_parameters()
        names = [n for n, p in m.named_parameters() if not p.detach().abs().sum().item()]
        assert names == []


def test_linear_and_conv2d_let_other_attribute_errors_through(monkeypatch):
    """nn/functional.py:107, :121: an AttributeError from the kernel that is not vmap's
    ``BatchedAccess`` propagates (it is not taken for a batched argument)."""

    calls = []

    def broken(*args):
        calls.append(args)
        raise AttributeError("broken kernel")

    monkeypatch.setattr(F, "_linear", broken)
    monkeypatch.setattr(F, "_conv2d", broken)
    with pytest.raises(AttributeError, match="broken kernel"):
        F.linear(tg.ones(2), tg.ones(3, 2))
    with pytest.raises(AttributeError, match="broken kernel"):
        F.conv2d(tg.ones(1, 1, 3, 3), tg.ones(1, 1, 2, 2))
    assert len(calls) == 2  # once each: not retried as a vmap call


def test_batch_norm_of_a_1d_input_is_an_index_error(torch_mod):
    """nn/functional.py:264: a 1-D input has no channel dim (torch: IndexError; a bug: it
    was a ValueError)."""
    for lib in (tg, torch_mod):
        with pytest.raises(IndexError):
            lib.nn.functional.batch_norm(lib.ones(3), None, None, training=True)


def test_embedding_padding_idx_out_of_range(torch_mod):
    """nn/functional.py:405: a padding_idx of num_embeddings or more is an AssertionError."""
    for lib in (tg, torch_mod):
        for pad in (3, 5, -4):
            with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
                lib.nn.functional.embedding(lib.tensor([0]), lib.ones(3, 2), padding_idx=pad)


def test_orthogonal_init_of_an_empty_tensor_returns_it(torch_mod):
    """nn/init.py:244: ``orthogonal_`` of a tensor with no elements returns that tensor."""
    for lib in (tg, torch_mod):
        t = lib.empty(0, 3)
        assert lib.nn.init.orthogonal_(t) is t


def test_lazy_module_errors(torch_mod):
    """nn/lazy.py:61, :81, :132, :145-146: a lazy mixin without ``initialize_parameters``,
    DataParallel replication before the first forward, in_channels not divisible by groups
    and an input of the wrong rank (the message names both ranks)."""
    for lib in (tg, torch_mod):
        lazy = lib.nn.modules.lazy

        class Bare(lazy.LazyModuleMixin, lib.nn.Module):
            pass

        with pytest.raises(NotImplementedError, match="initialize_parameters is not implemented"):
            Bare().initialize_parameters(lib.ones(2))
        with pytest.raises(RuntimeError, match="can't be used with `DataParallel`"):
            lib.nn.LazyLinear(3)._replicate_for_data_parallel()
        with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
            lib.nn.LazyConv2d(4, 3, groups=2)(lib.ones(1, 3, 5, 5))
        with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\)"):
            lib.nn.LazyConv2d(4, 3)(lib.ones(5, 5))
        with pytest.raises(RuntimeError, match=r"Expected 2D \(unbatched\) or 3D \(batched\)"):
            lib.nn.LazyConv1d(4, 3)(lib.ones(1, 2, 3, 5))


def test_buffer_assigned_before_module_init(torch_mod):
    """nn/module.py:105: assigning an nn.Buffer before ``Module.__init__`` is an
    AttributeError."""
    for lib in (tg, torch_mod):

        class M(lib.nn.Module):
            def __init__(self):
                self.b = lib.nn.Buffer(lib.ones(2))

        with pytest.raises(AttributeError, match="cannot assign buffer before Module.__init__"):
            M()


def test_parameter_from_a_list():
    """nn/parameter.py:35: tapegrad's Parameter also takes array-like data (torch wants a
    tensor), with its values."""
    p = tg.nn.Parameter([1.0, 2.0])
    assert p.requires_grad
    np.testing.assert_array_equal(p.detach().numpy(), [1.0, 2.0])


# -- DistributedDataParallel (a fake world of one rank) ----------------------------------


class _Boom(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise ValueError("boom")


class _Two(tg.nn.Module):
    def __init__(self, boom=False):
        super().__init__()
        self.a, self.b, self.boom = tg.nn.Linear(2, 2), tg.nn.Linear(2, 2), boom

    def forward(self, x):
        h = self.a(x)
        return self.b(_Boom.apply(h) if self.boom else h)


def test_ddp_forward_after_a_backward_that_raised(monkeypatch):
    """nn/parallel/distributed.py:146, :232, :234: a forward after a backward that stopped
    half way (some gradients came, the reduction never finished) names the parameters
    without a gradient, as torch refuses such a forward; a forward that no backward followed
    is no error (a bug: it raised too)."""
    ddp = fake_world_of_one(monkeypatch)
    model = ddp.DistributedDataParallel(_Two())
    model(tg.ones(1, 2))
    model(tg.ones(1, 2)).sum().backward()  # no backward after the first forward: fine
    model = ddp.DistributedDataParallel(_Two(boom=True))
    with pytest.raises(ValueError, match="boom"):
        model(tg.ones(1, 2)).sum().backward()
    with pytest.raises(RuntimeError, match=r"without gradients for parameters \['a.weight'"):
        model(tg.ones(1, 2))


def test_ddp_find_unused_parameters_looks_into_nested_outputs(monkeypatch):
    """nn/parallel/distributed.py:291, :293, :295-297: with find_unused_parameters the
    output's tensors are found in dicts, lists and tuples (other items skipped): the
    parameters reached count as used and their gradients are what is all-reduced."""
    sent = []

    def iallreduce(send, recv, op):
        sent.append((op, recv.copy()))
        return types.SimpleNamespace(Test=lambda: True, Wait=lambda: None)

    ddp = fake_world_of_one(monkeypatch, Iallreduce=iallreduce)
    lin = tg.nn.Linear(2, 1)

    class Nested(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lin

        def forward(self, x):
            return [{"y": (self.lin(x), 3)}, "label"]

    model = ddp.DistributedDataParallel(Nested(), find_unused_parameters=True)
    out = model(tg.tensor([[1.0, 2.0]]))
    out[0]["y"][0].sum().backward()
    by_op = dict(sent)
    np.testing.assert_array_equal(by_op["max"], [1, 1])  # both parameters used
    np.testing.assert_array_equal(np.sort(by_op["sum"]), [1.0, 1.0, 2.0])  # bias, weight
    np.testing.assert_array_equal(lin.weight.grad.numpy(), [[1.0, 2.0]])


def test_ddp_broadcasts_half_precision_tensors_one_by_one_from_rank_0(monkeypatch):
    """nn/parallel/distributed.py:311: float16 (and bfloat16) tensors, no MPI type, go out
    one broadcast each, from rank 0; empty ones not at all."""
    ddp = fake_world_of_one(monkeypatch)
    calls = []
    monkeypatch.setattr(ddp.dist, "broadcast", lambda t, src, group: calls.append((t, src)))
    model = tg.nn.Linear(2, 2)
    model.register_buffer("h16", tg.ones(3, dtype=tg.float16))
    model.register_buffer("h16b", tg.zeros(2, dtype=tg.float16))
    model.register_buffer("none", tg.ones(0, dtype=tg.float16))
    ddp.DistributedDataParallel(model)
    assert [(t is model.h16 or t is model.h16b, src) for t, src in calls] == [(True, 0)] * 2


# -- pruning --------------------------------------------------------------------------------


def _prune_module(lib):
    """``lib`` with its ``nn.utils.prune`` imported (torch does not import it itself)."""
    if lib is not tg:
        import torch.nn.utils.prune  # noqa: F401, PLC0415
    return lib


def test_prune_method_not_yet_applied(torch_mod):
    """nn/utils/_prune_base.py:55, :116: a pruning method on no tensor (``_tensor_name``
    None) has no mask to apply and no pruning to remove (AssertionError)."""
    for lib in (tg, _prune_module(torch_mod)):
        prune = lib.nn.utils.prune
        lin = lib.nn.Linear(2, 2)
        method = prune.L1Unstructured(0.5)
        method._tensor_name = None
        with pytest.raises(AssertionError, match="has to be pruned"):
            method.apply_mask(lin)
        with pytest.raises(AssertionError, match="has to be pruned before pruning can be removed"):
            method.remove(lin)


def test_prune_refuses_a_second_bare_pruning_hook(torch_mod):
    """nn/utils/_prune_base.py:131: two pruning hooks on one tensor outside a container
    (added by hand) make the next pruning an AssertionError."""
    for lib in (tg, torch_mod):
        prune = _prune_module(lib).nn.utils.prune
        lin = lib.nn.Linear(4, 2)
        prune.l1_unstructured(lin, "weight", amount=1)
        extra = prune.L1Unstructured(1)
        extra._tensor_name = "weight"
        lin.register_forward_pre_hook(extra)
        with pytest.raises(AssertionError, match="Avoid adding multiple pruning hooks"):
            prune.l1_unstructured(lin, "weight", amount=1)


def test_pruning_container_of_several_methods(torch_mod):
    """nn/utils/_prune_base.py:161, :209, :215, :218: a container built from several
    methods holds them all (its ``_tensor_name`` set beforehand, as torch needs); its mask
    refuses a last method whose PRUNING_TYPE is structured without ``dim`` (AttributeError),
    with a ``dim`` out of range (IndexError) or unknown (ValueError)."""
    for lib in (tg, _prune_module(torch_mod)):
        prune = lib.nn.utils.prune

        class Named(prune.PruningContainer):
            _tensor_name = "weight"

        a, b = prune.L1Unstructured(1), prune.RandomUnstructured(1)
        a._tensor_name = b._tensor_name = "weight"
        box = Named(a, b)
        assert len(box) == 2 and box[0] is a and box[1] is b

        class Odd(prune.BasePruningMethod):
            PRUNING_TYPE = "structured"

            def compute_mask(self, t, default_mask):
                return default_mask

        odd = Odd()
        odd._tensor_name = "weight"
        box = Named(odd)
        t, mask = lib.ones(2, 3), lib.ones(2, 3)
        with pytest.raises(AttributeError, match="need to have the attribute `dim` defined"):
            box.compute_mask(t, mask)
        odd.dim = -3
        with pytest.raises(IndexError, match="Index is out of bounds for tensor with dimensions 2"):
            box.compute_mask(t, mask)
        Odd.PRUNING_TYPE = "sideways"
        with pytest.raises(ValueError, match="Unrecognized PRUNING_TYPE sideways"):
            box.compute_mask(t, mask)


def test_prune_topk_on_the_meta_device():
    """nn/utils/_prune_ties.py:37: a tensor that is not on the CPU keeps its own ``topk``
    (k indices, on its device, as torch's ``ones(4, 8, device="meta").view(-1).topk(5)``)."""
    from tapegrad.nn.utils._prune_ties import topk_flat_indices

    idx = topk_flat_indices(tg.ones(4, 8).to("meta"), 5, False)
    assert tuple(idx.shape) == (5,) and idx.device.type == "meta"


def _killer(n, nth):
    """Values on which libstdc++'s introselect (median of three, Hoare partition) runs out
    of depth before the segment is small, for ``nth``: McIlroy's adversary (items stay
    "gas", above everything, until a comparison of two gas items freezes one to the next
    small value). Gas items are compared with frozen ones only, so any values above those
    keep every comparison: here decreasing with the position, two by two (ties)."""
    val = [None] * n
    frozen = [0]
    arr = list(range(n))

    def lt(x, y):
        if val[x] is None and val[y] is None:
            val[x] = frozen[0]
            frozen[0] += 1
        vx = np.inf if val[x] is None else val[x]
        vy = np.inf if val[y] is None else val[y]
        return vx < vy

    def swap(i, j):
        arr[i], arr[j] = arr[j], arr[i]

    first, last = 0, n
    depth = 2 * (n.bit_length() - 1)
    while last - first > 3 and depth:
        depth -= 1
        mid = first + (last - first) // 2
        a, b, c = arr[first + 1], arr[mid], arr[last - 1]
        if lt(a, b):
            swap(first, mid if lt(b, c) else (last - 1 if lt(a, c) else first + 1))
        else:
            swap(first, first + 1 if lt(a, c) else (last - 1 if lt(b, c) else mid))
        lo, hi, pivot = first + 1, last, arr[first]
        while True:
            while lt(arr[lo], pivot):
                lo += 1
            hi -= 1
            while lt(pivot, arr[hi]):
                hi -= 1
            if not lo < hi:
                break
            swap(lo, hi)
            lo += 1
        if lo <= nth:
            first = lo
        else:
            last = lo
    assert depth == 0
    out = np.array([-1 if v is None else v for v in val], np.float32)
    gas = np.flatnonzero(out < 0)
    out[gas] = frozen[0] + (gas.shape[0] - np.arange(gas.shape[0])) // 2
    return out


def test_l1_unstructured_ties_after_introselect_runs_out_of_depth(torch_mod, monkeypatch):
    """nn/utils/_prune_ties.py:80-83: when introselect's depth runs out, libstdc++ heap-
    selects the rest of the segment; the mask keeps what torch's topk keeps among the tied
    values (the cut splits a pair of equal values)."""
    from tapegrad.nn.utils import _prune_ties

    heap = []
    select = _prune_ties._heap_select
    monkeypatch.setattr(
        _prune_ties, "_heap_select", lambda key, k: heap.append(k) or select(key, k)
    )
    amount = 24
    w = _killer(32, amount - 1).reshape(4, 8)
    masks = []
    for lib in (tg, _prune_module(torch_mod)):
        lin = lib.nn.Linear(8, 4)
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(w))
        lib.nn.utils.prune.l1_unstructured(lin, "weight", amount=amount)
        masks.append(lin.weight_mask.numpy())
    assert heap == [4]  # the introselect path, heap select on the last segment
    np.testing.assert_array_equal(masks[0], masks[1])
    assert masks[0].sum() == 32 - amount


# -- sync batch norm, transformer, fusion, parametrize ---------------------------------------


def test_convert_sync_batchnorm_keeps_qconfig(torch_mod):
    """nn/sync_batchnorm.py:81: the converted layer keeps the batch norm's ``qconfig``."""
    for lib in (tg, torch_mod):
        bn = lib.nn.BatchNorm2d(3)
        bn.qconfig = "q"
        out = lib.nn.SyncBatchNorm.convert_sync_batchnorm(lib.nn.Sequential(bn))
        assert out[0].qconfig == "q"


def test_transformer_encoder_with_a_per_head_mask_is_not_causal(torch_mod):
    """nn/transformer.py:59: a mask that is not (L, L) (here one (L, L) mask per batch
    element and head) is no causal hint: the encoder applies it as given."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    mask = np.where(rng.random((4, 3, 3)) < 0.3, -np.inf, 0.0).astype(np.float32)
    mask[:, :, 0] = 0.0  # every query sees key 0
    outs, state = [], None
    for lib in (torch_mod, tg):
        layer = lib.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True)
        enc = lib.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        if state is None:
            state = {k: v.detach().numpy() for k, v in enc.state_dict().items()}
        else:
            enc.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
        with lib.no_grad():
            outs.append(enc(lib.tensor(x), mask=lib.tensor(mask)).numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-6)


def test_fusion_checks_and_a_linear_without_bias(torch_mod):
    """nn/utils/fusion.py:30, :60, :69, :81: fusing needs eval mode and running stats; a
    Linear without bias fuses with a zero bias."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    stats = [rng.standard_normal(3).astype(np.float32) for _ in range(4)]
    fused = []
    for lib in (tg, torch_mod):
        fusion = lib.nn.utils.fusion
        conv, lin = lib.nn.Conv2d(2, 3, 1).eval(), lib.nn.Linear(2, 3, bias=False).eval()
        plain = lib.nn.BatchNorm2d(3, track_running_stats=False).eval()
        with pytest.raises(AssertionError, match="running_mean and bn.running_var must not be"):
            fusion.fuse_conv_bn_eval(conv, plain)
        with pytest.raises(AssertionError, match="Fusion only for eval!"):
            fusion.fuse_linear_bn_eval(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3).eval())
        with pytest.raises(AssertionError, match="running_mean and bn.running_var must not be"):
            fusion.fuse_linear_bn_eval(lin, lib.nn.BatchNorm1d(3, track_running_stats=False).eval())
        bn = lib.nn.BatchNorm1d(3).eval()
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(w))
            for t, v in zip((bn.running_mean, bn.weight, bn.bias), stats[:3]):
                t.copy_(lib.tensor(v))
            bn.running_var.copy_(lib.tensor(np.abs(stats[3]) + 0.5))
        out = fusion.fuse_linear_bn_eval(lin, bn)
        fused.append((out.weight.detach().numpy(), out.bias.detach().numpy()))
    for a, b in zip(*fused):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_parametrization_right_inverse_of_another_length(torch_mod):
    """nn/utils/parametrize.py:131: a parametrization of several originals whose
    ``right_inverse`` later returns a sequence of another length is a ValueError."""
    for lib in (tg, torch_mod):
        parametrize = lib.nn.utils.parametrize

        class Split(lib.nn.Module):
            short = False

            def forward(self, a, b):
                return a + b

            def right_inverse(self, x):
                return (x,) if self.short else (x, lib.zeros_like(x))

        lin = lib.nn.Linear(2, 2)
        split = Split()
        parametrize.register_parametrization(lin, "weight", split)
        split.short = True
        with pytest.raises(ValueError, match="must return a sequence of tensors of length 2"):
            lin.weight = lib.ones(2, 2)
