"""Tests for lines of nn/ that no in-process test ran (the twelfth session's coverage map,
list n, first file; DDP, pruning, fusion and the rest in test_mutation_gaps_s22_n2.py): each
is seen to fail on its mutant.

Bugs found on the way, fixed: nll_loss / cross_entropy with class indices refused a
``weight`` that requires grad with NotImplementedError also under no_grad (torch: a
RuntimeError, and only where grad mode is on); a module with a full backward hook turned a
namedtuple output into a list; batch_norm of a 1-D input raised ValueError (torch:
IndexError); an uninitialized parameter's ``cpu()`` gave a plain empty tensor where torch
gives the parameter itself.
"""

import collections

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

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
    got = [
        lib.nn.functional.ctc_loss(
            lib.tensor(lp).log_softmax(-1), lib.tensor([1, 2, 2]), lib.tensor(6), lib.tensor(3)
        ).numpy()
        for lib in (tg, torch_mod)
    ]
    np.testing.assert_allclose(got[0], got[1], rtol=1e-10)


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
