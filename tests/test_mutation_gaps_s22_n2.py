"""Tests for lines of nn/ that no in-process test ran (the twelfth session's coverage map,
list n, second file: DistributedDataParallel, pruning, sync batch norm, transformer, fusion,
parametrize): each is seen to fail on its mutant.

A bug found on the way, fixed: a DistributedDataParallel forward that no backward followed
made the next forward raise (torch allows it; only a backward that stopped half way is an
error at the next forward).
"""

import types

import numpy as np
import pytest

import tapegrad as tg

from ._fake_world import fake_world_of_one

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
