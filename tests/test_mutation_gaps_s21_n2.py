"""Tests for the second list of survivors of the 21st mutation run in src/tapegrad/nn (helper
h21n): the attention backward's value-gradient layout, instance_norm's spatial-size check,
Hardswish's extra_repr, Buffer's shared version counter, trunc_normal_'s closed interval,
DDP's buffer broadcast and unused-parameter bookkeeping, remove_spectral_norm, pruning's
return values and stateless.functional_call's warning location. Each test was seen to fail
on its mutant."""

import importlib

import numpy as np
import pytest

import tapegrad as tg

from ._fake_world import fake_world_of_one


def test_attention_value_gradient_is_laid_out_heads_last_like_its_input():
    """_attention_ops.py:204 [const] '2' -> '3' (``pd.shape[:-2]`` -> ``[:-3]``): the value
    gradient takes v's (N, L, H, E) memory order (Note on _grad_like), so the backward of
    ``.view().transpose(1, 2)`` is a view. q needs no gradient, so the split kernel is off."""
    n, seq, h, e = 2, 3, 2, 4
    proj = tg.tensor(np.random.default_rng(0).standard_normal((n, seq, 3 * h * e)))
    proj.requires_grad_(True)
    q, k, v = (t.view(n, seq, h, e).transpose(1, 2) for t in proj.split(h * e, dim=-1))
    strides = []
    v.register_hook(lambda g: strides.append(g.stride()))
    tg.nn.functional.scaled_dot_product_attention(q.detach(), k, v).sum().backward()
    assert strides == [(seq * h * e, e, h * e, 1)]


def test_instance_norm_accepts_two_spatial_elements_like_torch(torch_mod):
    """_layers_functional.py:90 [const] '1' -> '2' (``<= 1`` -> ``<= 2``): only a single
    spatial element is refused in training."""
    x = np.random.default_rng(1).standard_normal((2, 3, 2))
    want = torch_mod.nn.functional.instance_norm(torch_mod.tensor(x)).numpy()
    got = tg.nn.functional.instance_norm(tg.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="Expected more than 1 spatial element"):
        tg.nn.functional.instance_norm(tg.tensor(x[..., :1]))


@pytest.mark.parametrize("name", ["Hardsigmoid", "Hardswish"])
def test_hard_activations_extra_repr_is_empty_like_torch(torch_mod, name):
    """activation_ext.py:135 [drop] 'return ""' -> 'pass' (Hardswish.extra_repr returned
    None)."""
    want = getattr(torch_mod.nn, name)()
    got = getattr(tg.nn, name)()
    assert got.extra_repr() == want.extra_repr() == ""
    assert repr(got) == repr(want)


def test_buffer_shares_its_datas_version_counter_like_torch(torch_mod):
    """buffer.py:36 [drop] 'self._vc = data._vc' -> 'pass': an in-place change through the
    Buffer is seen by the autograd graph that saved ``data``."""
    for lib in (tg, torch_mod):
        a = lib.ones(3, requires_grad=True)
        t = lib.ones(3)
        out = a * t  # saves t
        b = lib.nn.Buffer(t)
        b.mul_(2)
        assert t._version == b._version == 1
        with pytest.raises(RuntimeError, match="modified by an in-?place operation"):
            out.sum().backward()


def test_trunc_normal_keeps_values_equal_to_the_upper_bound():
    """init.py:213 [compare] 'values > hi' -> '(values >= hi)': the interval is closed (as
    torch's clamp), also on the rejection pass that re-checks every value. In float16 with
    std 1e-3 about 1.0 the bounds [1, 1 + 2**-10] are adjacent float16 values: 46% of the
    accepted draws round to the upper one (the mutant kept none)."""
    w = tg.empty(4000, dtype=tg.float16)
    gen = tg.Generator().manual_seed(0)
    hi = 1 + 2**-10
    tg.nn.init.trunc_normal_(w, mean=1.0, std=1e-3, a=1.0, b=hi, generator=gen)
    values = w.numpy()
    assert set(np.unique(values).tolist()) == {1.0, hi}
    assert 0.4 < (values == hi).mean() < 0.52


def test_ddp_broadcasts_the_buffers_before_each_training_forward(monkeypatch):
    """parallel/distributed.py:150 [drop] '_broadcast_coalesced(buffers,
    self.process_group)' -> 'pass': rank 0's BatchNorm statistics reach every rank before
    each forward in training (not in eval, nor with broadcast_buffers=False)."""
    broadcasts = []
    ddp = fake_world_of_one(monkeypatch, broadcasts)
    bn = tg.nn.BatchNorm1d(2)
    model = ddp.DistributedDataParallel(bn)
    broadcasts.clear()  # the constructor's parameters and buffers
    x = tg.ones(3, 2)
    with tg.no_grad():  # forward only
        model(x)
        assert [[id(t) for t in ts] for ts in broadcasts] == [[id(b) for b in bn.buffers()]]
        model.eval()
        model(x)
        assert len(broadcasts) == 1
        quiet = ddp.DistributedDataParallel(tg.nn.BatchNorm1d(2), broadcast_buffers=False)
        broadcasts.clear()
        quiet(x)
        assert broadcasts == []


class _TwoHeads(tg.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = tg.nn.Linear(2, 1)
        self.b = tg.nn.Linear(2, 1)

    def forward(self, x):
        return self.a(x)


def test_ddp_leaves_the_gradient_of_a_parameter_no_rank_used_untouched(monkeypatch):
    """parallel/distributed.py:201 [const] '0' -> '1' (an unused parameter counted as used):
    with find_unused_parameters a parameter used on no rank keeps ``.grad`` None, as torch."""
    ddp = fake_world_of_one(monkeypatch, [])
    model = ddp.DistributedDataParallel(_TwoHeads(), find_unused_parameters=True)
    model(tg.ones(3, 2)).sum().backward()
    assert model.module.a.weight.grad.tolist() == [[3.0, 3.0]]
    assert model.module.b.weight.grad is None and model.module.b.bias.grad is None


def test_remove_spectral_norm_unregisters_its_hook_like_torch(torch_mod):
    """utils/legacy_norms.py:190 [drop] '_unregister(module, hook)' -> 'pass': afterwards
    forward runs on the plain weight and a second removal raises ValueError."""
    for lib in (tg, torch_mod):
        m = lib.nn.Linear(3, 2)
        lib.nn.utils.spectral_norm(m)
        assert lib.nn.utils.remove_spectral_norm(m) is m
        assert len(m._forward_pre_hooks) == 0
        assert tuple(m(lib.ones(1, 3)).shape) == (1, 2)
        with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
            lib.nn.utils.remove_spectral_norm(m)


def test_pruning_functions_return_the_module_like_torch(torch_mod):
    """utils/prune.py:229 and :263 [drop] 'return module' -> 'pass' (identity and
    ln_structured returned None)."""
    for lib in (tg, torch_mod):
        prune = importlib.import_module(f"{lib.__name__}.nn.utils.prune")
        m = lib.nn.Linear(3, 2)
        assert prune.identity(m, "bias") is m
        assert prune.ln_structured(m, "weight", amount=1, n=2, dim=0) is m


def test_stateless_functional_call_warns_at_the_callers_line():
    """utils/stateless.py:20 [const] '2' -> '3' (stacklevel): the FutureWarning points at
    the line that called functional_call, as torch's."""
    m = tg.nn.Linear(2, 1)
    params = {"weight": tg.ones(1, 2), "bias": tg.zeros(1)}
    with pytest.warns(FutureWarning, match="is deprecated") as caught:
        out = tg.nn.utils.stateless.functional_call(m, params, (tg.ones(1, 2),))
    assert out.tolist() == [[2.0]]
    assert caught[0].filename == __file__
