"""Tests for the survivors in src/tapegrad/nn of the fresh mutation sample (seed 2111, helper
h21n): trunc_normal_'s acceptance test at equality (a crafted generator state), orthogonal_'s
sign fix, ``named_children`` of a module registered twice, DDP's version bumps when it
broadcasts (fixed with these tests: as torch, an empty tensor keeps its version and the
buffer broadcast before a training forward bumps none), random_unstructured's choice of the
largest random scores, and ``_Orthogonal``'s default trivialization. Each test that names a
mutant was seen to fail on it."""

import numpy as np

import tapegrad as tg

from ._fake_world import fake_world_of_one

_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645
_U128 = (1 << 128) - 1


def _pcg64_state(*doubles):
    """A generator state (get_state's layout) whose next draws of ``uniform`` are
    ``doubles[i] * 2**-53`` (two draws). PCG64 steps ``s = s * MULT + inc`` and then
    outputs ``rotr(hi ^ lo, s >> 122)``: with the top 6 bits of hi zero the rotation is 0,
    so ``lo = hi ^ out`` gives any output; ``inc`` links the two chosen states."""
    d1, d2 = doubles
    hi1, hi2 = 0x0123456789ABCDEF, 0x0123456789ABCDEE  # differ in bit 0: inc comes out odd
    s1 = (hi1 << 64) | (hi1 ^ (d1 << 11))
    s2 = (hi2 << 64) | (hi2 ^ (d2 << 11))
    inc = (s2 - s1 * _PCG_MULT) & _U128
    s0 = ((s1 - inc) * pow(_PCG_MULT, -1, 1 << 128)) & _U128
    raw = s0.to_bytes(16, "little") + inc.to_bytes(16, "little") + bytes(5) + bytes(8)
    return tg.tensor(np.frombuffer(raw, np.uint8).copy())


def test_trunc_normal_accepts_a_draw_whose_uniform_equals_the_density_ratio():
    """init.py:223 [compare] 'np.log(rng.uniform(size=n)) <= log_pdf' -> '(... < log_pdf)':
    the rejection sampler accepts a candidate when log(u) <= log_pdf (u uniform on [0, 1)),
    the acceptance region of a density ratio in (0, 1] being closed. A crafted generator
    state makes the candidate and u meet exactly at equality: the candidate is kept (the
    mutant rejects it and draws again)."""
    d_cand, d_u = 96757023256633, 8958821207704204
    a, b = 1.0, 1.5  # 9% of N(0, 1): the rejection sampler; its mode is a, log_peak -0.5
    cand = np.array([a + (b - a) * (d_cand * 2.0**-53)])
    log_pdf = -0.5 * ((cand - 0.0) / 1.0) ** 2 - (-0.5)
    assert np.log(np.array([d_u * 2.0**-53]))[0] == log_pdf[0]  # equality, exactly
    g = tg.Generator().set_state(_pcg64_state(d_cand, d_u))
    w = tg.nn.init.trunc_normal_(tg.empty(1, dtype=tg.float64), 0.0, 1.0, a, b, generator=g)
    assert w.item() == cand[0]


def test_orthogonal_of_one_by_one_draws_both_signs(torch_mod):
    """init.py:251 [drop] 'q = q * np.sign(np.diag(r))' -> 'pass': Q is signed by R's
    diagonal so it is Haar distributed; a 1x1 orthogonal matrix is then +1 or -1 with equal
    chance, as torch's (without the fix NumPy's QR always gives Q = [[1]])."""
    for lib in (torch_mod, tg):
        lib.manual_seed(0)
        values = {lib.nn.init.orthogonal_(lib.empty(1, 1)).item() for _ in range(20)}
        assert values == {-1.0, 1.0}


def test_named_children_yields_a_module_registered_twice_once(torch_mod):
    """module.py:217 [drop] 'seen.add(module)' -> 'pass': ``named_children`` yields each
    child module once, under its first name, as torch's."""
    res = {}
    for lib in (torch_mod, tg):
        lin, act = lib.nn.Linear(2, 2), lib.nn.ReLU()
        m = lib.nn.Module()
        m.a, m.b, m.c, m.d = lin, act, lin, act
        res[lib] = [(name, type(c).__name__) for name, c in m.named_children()]
        assert [c for _, c in m.named_children()] == list(m.children()) == [lin, act]
    assert res[tg] == res[torch_mod] == [("a", "Linear"), ("b", "ReLU")]


def test_ddp_broadcasts_bump_versions_as_torch(monkeypatch):
    """parallel/distributed.py:313 [drop] 't._vc.value += 1' -> 'pass' and [const] '1' ->
    '2': the broadcast of rank 0's parameters and buffers at construction writes each
    tensor in place, one version each. As torch 2.13 (checked with a gloo group of one):
    every non-empty parameter and buffer goes from version v to v + 1, an empty one keeps
    its version (fixed with this test: it was bumped too), and the buffer broadcast before
    a training forward keeps the versions (torch's _unsafe_preserve_version_counter; fixed
    with this test: it bumped them). The process group is faked: one rank, whose broadcast
    leaves the values as they are."""
    sent = []
    ddp = fake_world_of_one(monkeypatch, Bcast=lambda buf, root: sent.append(buf.copy()))
    model = tg.nn.Linear(2, 3)
    model.register_buffer("scale", tg.ones(2))
    model.register_buffer("empty", tg.ones(0))
    state = [model.weight, model.bias, model.scale, model.empty]
    before = [(t._version, t.detach().clone()) for t in state]
    wrapped = ddp.DistributedDataParallel(model)
    assert len(sent) == 1  # one message: every tensor is float32
    for t, (version, value), bump in zip(state, before, (1, 1, 1, 0), strict=True):
        assert t._version == version + bump
        np.testing.assert_array_equal(t.detach().numpy(), value.numpy())
    versions = [t._version for t in state]
    with tg.no_grad():
        wrapped(tg.ones(1, 2))
    assert len(sent) == 2  # the buffers went out again, versions kept
    assert [t._version for t in state] == versions


def test_random_unstructured_prunes_the_largest_random_scores():
    """utils/prune.py:90 [const] 'True' -> 'False': torch's RandomUnstructured prunes the
    entries of the k LARGEST scores of ``rand_like(t)`` (topk); with the same seed the
    pruned positions are exactly those (the mutant prunes the k smallest)."""
    lin = tg.nn.Linear(4, 5)
    tg.manual_seed(3)
    scores = tg.rand_like(lin.weight).numpy().ravel()
    tg.manual_seed(3)
    tg.nn.utils.prune.random_unstructured(lin, "weight", amount=6)
    pruned = np.flatnonzero(lin.weight_mask.numpy().ravel() == 0)
    np.testing.assert_array_equal(np.sort(pruned), np.sort(np.argsort(-scores)[:6]))


def test_orthogonal_parametrization_class_trivializes_by_default(torch_mod):
    """utils/parametrizations.py:169 [const] 'True' -> 'False': ``_Orthogonal``'s
    ``use_trivialization`` defaults to True as torch's (its only caller in tapegrad passes
    it; the private class called directly keeps a ``base`` buffer, slot for the
    trivialization, as torch's does)."""
    from torch.nn.utils import parametrizations as tp

    from tapegrad.nn.utils import parametrizations as gp

    theirs = tp._Orthogonal(torch_mod.eye(3), tp._OrthMaps.matrix_exp)
    ours = gp._Orthogonal(tg.eye(3), "matrix_exp")
    assert list(ours._buffers) == list(theirs._buffers) == ["base"]
