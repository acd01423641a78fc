"""nn.utils.prune against torch 2.13: each scenario runs the same code on both libraries
(``lib`` is torch or tapegrad) from identical weights without ties, and the masks, pruned
tensors, state-dict keys, gradients, errors and training losses are compared. The random
methods cannot share torch's draws: their counts, structure and reproducibility are
checked instead."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.nn.utils import prune as tg_prune

R = np.random.default_rng(20)


def _net(lib, seed=0):
    """A conv, a linear and weights without ties (distinct absolute values, and so
    distinct channel norms)."""
    rng = np.random.default_rng(seed)
    net = lib.nn.Sequential(
        lib.nn.Conv2d(2, 4, 2), lib.nn.ReLU(), lib.nn.Flatten(), lib.nn.Linear(36, 5)
    )
    with lib.no_grad():
        for p in net.parameters():
            n = p.numel()
            vals = (rng.permutation(n) + 1.0) / n * rng.choice([-1.0, 1.0], n)
            p.copy_(lib.tensor(vals.astype(np.float32)).reshape(p.shape))
    return net


def _torch_prune(torch):
    import importlib

    return importlib.import_module("torch.nn.utils.prune")


def _np(t):
    return t.detach().numpy()


def _pruned_state(net):
    return {k: _np(v) for k, v in net.state_dict().items()}


def _assert_same_state(ours, theirs):
    a, b = _pruned_state(ours), _pruned_state(theirs)
    assert list(a) == list(b)
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-6, err_msg=k)


# (label, function of (prune module, net)) applied to the conv and the linear layer
PRUNINGS = [
    ("identity", lambda P, net: P.identity(net[0], "weight")),
    ("l1-int", lambda P, net: P.l1_unstructured(net[3], "weight", amount=50)),
    ("l1-float", lambda P, net: P.l1_unstructured(net[0], "weight", amount=0.37)),
    ("l1-bias", lambda P, net: P.l1_unstructured(net[3], "bias", amount=2)),
    ("ln2-dim0", lambda P, net: P.ln_structured(net[0], "weight", amount=2, n=2, dim=0)),
    ("ln1-dim-1", lambda P, net: P.ln_structured(net[3], "weight", amount=0.5, n=1, dim=-1)),
    ("lninf-dim1", lambda P, net: P.ln_structured(net[0], "weight", 1, float("inf"), 1)),
    ("lnfro-dim0", lambda P, net: P.ln_structured(net[3], "weight", 0.4, "fro", 0)),
    ("ln-amount0", lambda P, net: P.ln_structured(net[0], "weight", 0, 2, 0)),
    (
        "custom",
        lambda P, net: P.custom_from_mask(net[0], "bias", mask=(net[0].bias.detach() > 0).float()),
    ),
]


@pytest.mark.parametrize("apply", [p[1] for p in PRUNINGS], ids=[p[0] for p in PRUNINGS])
def test_pruning_gives_torchs_masks_keys_and_gradients(torch_mod, apply):
    nets = {}
    for lib, P in ((torch_mod, _torch_prune(torch_mod)), (tg, tg_prune)):
        net = _net(lib)
        apply(P, net)
        x = lib.tensor(np.linspace(-1, 1, 2 * 2 * 16, dtype=np.float32).reshape(2, 2, 4, 4))
        (net(x) ** 2).sum().backward()
        assert P.is_pruned(net)
        nets[lib] = net
    ours, theirs = nets[tg], nets[torch_mod]
    _assert_same_state(ours, theirs)
    for mo, mt in zip(ours, theirs, strict=True):
        for (n, po), (_, pt) in zip(mo.named_parameters(), mt.named_parameters(), strict=True):
            np.testing.assert_allclose(_np(po.grad), _np(pt.grad), rtol=1e-4, atol=1e-5, err_msg=n)
            if n.endswith("_orig"):  # the pruned tensor and the masked gradient
                mask = _np(getattr(mo, n[:-5] + "_mask"))
                np.testing.assert_array_equal(_np(getattr(mo, n[:-5])), _np(po) * mask)
                assert np.all(_np(po.grad)[mask == 0] == 0)


def test_pruning_a_conv_weight_prunes_the_expected_entries():
    # the smallest |w| of a hand-made weight; a reparametrisation as torch's
    conv = tg.nn.Conv2d(1, 2, 2, bias=False)
    w = np.array([[[[4.0, -1.0], [3.0, 0.5]]], [[[-2.0, 6.0], [-0.25, 5.0]]]], np.float32)
    with tg.no_grad():
        conv.weight.copy_(tg.tensor(w))
    tg_prune.l1_unstructured(conv, "weight", amount=3)
    assert list(conv.state_dict()) == ["weight_orig", "weight_mask"]
    expect = (np.abs(w) > 1.5).astype(np.float32)
    np.testing.assert_array_equal(conv.weight_mask.numpy(), expect)
    assert isinstance(conv.weight_orig, tg.nn.Parameter)
    assert "weight" not in conv._parameters and not isinstance(conv.weight, tg.nn.Parameter)
    tg_prune.ln_structured(conv, "weight", amount=1, n=1, dim=0)  # channel 0 has |w|_1 = 7
    expect[0] = 0
    np.testing.assert_array_equal(conv.weight_mask.numpy(), expect)


def _iterate(lib, P, net, importance=False):
    scores = lib.tensor(np.arange(36 * 5, dtype=np.float32)[::-1].copy()).reshape(5, 36)
    P.l1_unstructured(net[3], "weight", amount=0.3)
    P.ln_structured(net[3], "weight", amount=2, n=2, dim=0)
    P.l1_unstructured(net[3], "weight", amount=10, importance_scores=scores if importance else None)
    P.ln_structured(net[3], "weight", amount=1, n=2, dim=0)  # one more row (of the 3 left)
    P.ln_structured(net[0], "weight", amount=1, n=1, dim=1)
    P.random_unstructured(net[0], "bias", amount=0)
    P.l1_unstructured(net[0], "weight", amount=0.25)
    return net


@pytest.mark.parametrize("importance", [False, True])
def test_iterative_pruning_composes_masks_as_torch(torch_mod, importance):
    theirs = _iterate(torch_mod, _torch_prune(torch_mod), _net(torch_mod), importance)
    ours = _iterate(tg, tg_prune, _net(tg), importance)
    _assert_same_state(ours, theirs)
    hooks = [h.fn for h in ours[3]._forward_pre_hooks]
    assert len(hooks) == 1 and isinstance(hooks[0], tg_prune.PruningContainer)
    assert [type(m).__name__ for m in hooks[0]] == [
        "L1Unstructured",
        "LnStructured",
        "L1Unstructured",
        "LnStructured",
    ]
    # structured pruning on top: rows already out do not count, so 2 + 1 rows are out
    assert (ours[3].weight_mask.numpy().sum(1) == 0).sum() == 3


@pytest.mark.parametrize("amount", [0.45, 100])
def test_global_unstructured_matches_torch(torch_mod, amount):
    def run(lib, P):
        net = _net(lib)
        P.l1_unstructured(net[3], "weight", amount=20)  # an earlier mask is respected
        params = [(net[0], "weight"), (net[0], "bias"), (net[3], "weight")]
        scores = {(net[0], "bias"): lib.tensor([9.0, 0.01, 8.0, 0.02])}
        P.global_unstructured(
            params, pruning_method=P.L1Unstructured, importance_scores=scores, amount=amount
        )
        return net

    ours, theirs = run(tg, tg_prune), run(torch_mod, _torch_prune(torch_mod))
    _assert_same_state(ours, theirs)
    total = sum(m.size - m.sum() for k, m in _pruned_state(ours).items() if "mask" in k)
    # a float amount is a fraction of what is still unpruned: 216 entries, 20 gone
    assert total == 20 + (amount if isinstance(amount, int) else round(amount * 196))
    np.testing.assert_array_equal(ours[0].bias_mask.numpy(), [1, 0, 1, 0])


def test_remove_makes_pruning_permanent_as_torch(torch_mod):
    nets = {}
    for lib, P in ((torch_mod, _torch_prune(torch_mod)), (tg, tg_prune)):
        net = _net(lib)
        P.l1_unstructured(net[3], "weight", amount=0.5)
        P.ln_structured(net[3], "weight", amount=1, n=2, dim=0)
        P.identity(net[0], "bias")
        orig = net[3].weight_orig
        P.remove(net[3], "weight")
        assert net[3].weight is orig and isinstance(orig, lib.nn.Parameter)  # same object
        assert P.is_pruned(net) and not P.is_pruned(net[3])
        P.remove(net[0], "bias")
        assert not P.is_pruned(net)
        assert not net[3]._forward_pre_hooks and not net[0]._forward_pre_hooks
        nets[lib] = net
    _assert_same_state(nets[tg], nets[torch_mod])  # torch's key order: weight after bias
    assert list(nets[tg][3].state_dict()) == ["bias", "weight"]
    assert 90 < (_np(nets[tg][3].weight) == 0).sum() <= 90 + 36  # half, then a row


def _errors(lib, P):
    lin = lib.nn.Linear(3, 2)
    one, two = P.L1Unstructured(0.2), P.Identity()
    one._tensor_name, two._tensor_name = "weight", "bias"
    return {
        "float>1": lambda: P.l1_unstructured(lin, "weight", amount=1.5),
        "negative-int": lambda: P.random_unstructured(lin, "weight", amount=-1),
        "negative-float": lambda: P.ln_structured(lin, "weight", -0.1, 2, 0),
        "str": lambda: P.l1_unstructured(lin, "weight", amount="0.3"),
        "bool": lambda: P.l1_unstructured(lin, "weight", amount=True),
        "too-many": lambda: P.l1_unstructured(lin, "weight", amount=7),
        "too-many-channels": lambda: P.random_structured(lin, "weight", amount=3, dim=0),
        "structured-1d": lambda: P.ln_structured(lin, "bias", 1, 2, 0),
        "bad-dim": lambda: P.ln_structured(lin, "weight", 1, 2, 2),
        "remove-unpruned": lambda: P.remove(lin, "weight"),
        "no-such-name": lambda: P.l1_unstructured(lin, "nope", 1),
        "scores-shape": lambda: P.l1_unstructured(lin, "weight", 1, importance_scores=lib.ones(3)),
        "global-structured": lambda: P.global_unstructured(
            [(lin, "weight")], P.LnStructured, amount=1, n=2, dim=0
        ),
        "global-not-iterable": lambda: P.global_unstructured(3, P.L1Unstructured, amount=1),
        "global-scores-list": lambda: P.global_unstructured(
            [(lin, "weight")], P.L1Unstructured, importance_scores=[], amount=1
        ),
        "container-type": lambda: P.PruningContainer(one).add_pruning_method(3),
        "container-name": lambda: P.PruningContainer(one).add_pruning_method(two),
        "abstract": lambda: P.BasePruningMethod(),
    }


ERROR_CASES = list(_errors(tg, tg_prune))


@pytest.mark.parametrize("case", ERROR_CASES)
def test_bad_arguments_raise_torchs_errors(torch_mod, case):
    caught = {}
    for lib, P in ((torch_mod, _torch_prune(torch_mod)), (tg, tg_prune)):
        with pytest.raises(Exception) as info:
            _errors(lib, P)[case]()
        caught[lib] = info
    theirs, ours = caught[torch_mod], caught[tg]
    assert ours.type is theirs.type, (ours.value, theirs.value)
    if case not in ("no-such-name", "abstract", "container-type", "container-name"):
        # messages name torch's / tapegrad's own classes only in those
        assert str(ours.value).replace("tapegrad", "torch") == str(theirs.value)


def test_failed_pruning_rolls_back_the_reparametrisation():
    lin = tg.nn.Linear(3, 2)
    with pytest.raises(IndexError):
        tg_prune.ln_structured(lin, "weight", 1, 2, 5)
    assert list(lin._parameters) == ["bias", "weight"] and not tg_prune.is_pruned(lin)


def _train(lib, P, steps=4):
    net = _net(lib, seed=1)
    P.ln_structured(net[0], "weight", amount=1, n=2, dim=0)
    P.l1_unstructured(net[3], "weight", amount=0.4)
    if lib is tg:
        step = tg.optim.SGD(net.parameters(), lr=0.05).step
    else:  # plain SGD by hand: torch.optim's first step imports torch._dynamo (seconds)

        def step():
            with lib.no_grad():
                for p in net.parameters():
                    p -= 0.05 * p.grad

    rng = np.random.default_rng(3)
    losses = []
    for i in range(steps):
        if i == 2:  # prune again mid-training
            P.global_unstructured(
                [(net[0], "weight"), (net[3], "weight")], P.L1Unstructured, amount=0.2
            )
        x = lib.tensor(rng.standard_normal((3, 2, 4, 4)).astype(np.float32))
        y = lib.tensor(rng.standard_normal((3, 5)).astype(np.float32))
        loss = ((net(x) - y) ** 2).mean()
        for p in net.parameters():
            p.grad = None
        loss.backward()
        step()
        losses.append(loss.item())
    return net, losses


def test_training_a_pruned_model_gives_torchs_losses(torch_mod):
    ours, lo = _train(tg, tg_prune)
    theirs, lt = _train(torch_mod, _torch_prune(torch_mod))
    np.testing.assert_allclose(lo, lt, rtol=1e-5)
    _assert_same_state(ours, theirs)
    # pruned entries stay zero in the weight the forward uses
    w, mask = _np(ours[3].weight), ours[3].weight_mask.numpy()
    assert np.all(w[mask == 0] == 0) and np.any(_np(ours[3].weight_orig)[mask == 0] != 0)


def test_random_methods_count_structure_and_seed():
    def run(seed):
        tg.manual_seed(seed)
        net = _net(tg)
        tg_prune.random_unstructured(net[3], "weight", amount=0.3)
        tg_prune.random_unstructured(net[3], "weight", amount=20)
        tg_prune.random_structured(net[0], "weight", amount=2, dim=1)
        tg_prune.random_structured(net[0], "weight", amount=0.5, dim=0)
        return net[3].weight_mask.numpy(), net[0].weight_mask.numpy()

    lin, conv = run(0)
    assert lin.sum() == 180 - 54 - 20
    assert conv[:, 0].sum() == 0 and conv[:, 1].sum() == 0  # the only 2 input channels
    again, other = run(0), run(1)
    np.testing.assert_array_equal(again[0], lin)
    assert not np.array_equal(other[0], lin)
    tg.manual_seed(0)
    m = tg.nn.Linear(6, 4)
    tg_prune.random_structured(m, "weight", amount=2, dim=0)
    rows = m.weight_mask.numpy().sum(1)
    assert sorted(rows) == [0, 0, 6, 6]


def test_pruning_method_prune_and_container_indexing():
    t = tg.tensor([[0.5, -2.0, 1.0], [3.0, -0.1, 4.0]])
    out = tg_prune.L1Unstructured(amount=2).prune(t)
    np.testing.assert_array_equal(out.numpy(), [[0, -2, 1], [3, 0, 4]])
    scores = tg.tensor([[0.0, 9.0, 9.0], [0.0, 9.0, 9.0]])
    out = tg_prune.LnStructured(amount=1, n=1, dim=-1).prune(t, importance_scores=scores)
    np.testing.assert_allclose(out.numpy(), [[0, -2, 1], [0, -0.1, 4]])
    m = tg.nn.Linear(3, 2)
    tg_prune.identity(m, "weight")
    tg_prune.l1_unstructured(m, "weight", 1)
    container = m._forward_pre_hooks[0].fn
    assert len(container) == 2 and isinstance(container[0], tg_prune.Identity)


def _tie_cases(lib, P):
    """Pruning where the cut falls among equal values (torch's CPU topk decides)."""
    lin = lib.nn.Linear(8, 6)  # all-equal weight: std::nth_element's choice
    big = lib.nn.Linear(40, 10, bias=False)  # k * 64 <= n: std::partial_sort's choice
    conv = lib.nn.Conv2d(3, 6, 1)  # equal channel norms
    with lib.no_grad():
        lin.weight.fill_(0.5)
        big.weight.copy_(lib.tensor((np.arange(400) % 3).astype(np.float32)).reshape(10, 40))
        conv.weight.copy_(
            lib.tensor(np.repeat([1.0, -1.0, 2.0], 6).astype(np.float32)).reshape(6, 3, 1, 1)
        )
    P.l1_unstructured(lin, "weight", amount=0.4)
    P.l1_unstructured(big, "weight", amount=5)
    P.ln_structured(conv, "weight", amount=3, n=1, dim=0)
    P.ln_structured(conv, "weight", amount=1, n=2, dim=1)
    P.global_unstructured([(lin, "bias"), (conv, "bias")], P.RandomUnstructured, amount=0)
    P.l1_unstructured(lin, "weight", amount=7)
    return [m.weight_mask for m in (lin, big, conv)]


def test_ties_are_broken_as_torchs_cpu_topk(torch_mod):
    # Note [Ties in pruning]
    ours = _tie_cases(tg, tg_prune)
    theirs = _tie_cases(torch_mod, _torch_prune(torch_mod))
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(o.numpy(), t.numpy())
    assert ours[0].numpy().sum() == 48 - 19 - 7 and ours[1].numpy().sum() == 395


def test_topk_indices_pick_torchs_subset_of_equal_values(torch_mod):
    from tapegrad.nn.utils._prune_ties import topk_indices

    rng = np.random.default_rng(5)
    for trial in range(40):
        n = int(rng.integers(2, 300))
        v = rng.integers(0, 1 + trial % 5, n).astype(np.float32)
        if trial % 4 == 0:
            v[rng.integers(0, n, 2)] = np.nan  # NaN is the largest, as torch's comparator
        elif trial % 4 == 1:
            v = v.astype(np.int64) - 2  # integer importances
        for k in (1, max(1, n // 64), int(rng.integers(1, n + 1))):
            for largest in (False, True):
                theirs = torch_mod.topk(torch_mod.tensor(v), k, largest=largest).indices
                ours = topk_indices(v, k, largest)
                np.testing.assert_array_equal(np.sort(ours), np.sort(theirs.numpy()))


def test_every_public_name_of_torchs_prune_is_here(torch_mod):
    P = _torch_prune(torch_mod)
    theirs = {
        n
        for n, v in vars(P).items()
        if not n.startswith("_") and getattr(v, "__module__", None) == P.__name__
    }
    assert theirs == set(tg_prune.__all__) and all(hasattr(tg_prune, n) for n in theirs)
    assert tg.nn.utils.prune is tg_prune


def test_pruning_tutorial_walks_the_hooks_as_an_ordered_dict():
    # PyTorch's pruning tutorial: `for hook in module._forward_pre_hooks.values()`
    conv = tg.nn.Conv2d(1, 6, 3)
    tg_prune.l1_unstructured(conv, "bias", amount=3)
    tg_prune.random_unstructured(conv, "weight", amount=0.3)
    tg_prune.ln_structured(conv, "weight", amount=0.5, n=2, dim=0)
    hooks = conv._forward_pre_hooks
    assert hooks.keys() == [0, 1] and [k for k, _ in hooks.items()] == [0, 1]
    for hook in hooks.values():
        if hook._tensor_name == "weight":
            break
    assert [type(m).__name__ for m in hook] == ["RandomUnstructured", "LnStructured"]
