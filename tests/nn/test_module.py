"""Module: registration, traversal, state_dict, modes, hooks, repr; and a small training run."""

import copy

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)
        self.scale = nn.Parameter(tg.ones(4))
        self.register_buffer("steps", tg.zeros(()))
        self.register_buffer("cache", tg.zeros(2), persistent=False)
        self.plain = 3

    def forward(self, x):
        return self.bn(self.fc(x)) * self.scale


def test_registration_and_traversal():
    m = Block()
    assert [n for n, _ in m.named_parameters()] == [
        "scale",
        "fc.weight",
        "fc.bias",
        "bn.weight",
        "bn.bias",
    ]
    assert [n for n, _ in m.named_buffers()] == [
        "steps",
        "cache",
        "bn.running_mean",
        "bn.running_var",
        "bn.num_batches_tracked",
    ]
    assert [n for n, _ in m.named_children()] == ["fc", "bn"]
    assert [n for n, _ in m.named_modules()] == ["", "fc", "bn"]
    assert list(m.children()) == [m.fc, m.bn]
    assert m.plain == 3 and "plain" not in m._parameters
    assert all(isinstance(p, tg.Tensor) and p.requires_grad for p in m.parameters())
    del m.scale
    assert "scale" not in dict(m.named_parameters())
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        m.missing  # noqa: B018


def test_shared_parameters_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    assert len(list(seq.parameters())) == 2
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_setattr_errors():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="Parameter or None expected"):
        m.weight = tg.zeros(2, 2)
    m.bias = None
    assert m.bias is None and "bias" in m._parameters
    with pytest.raises(KeyError, match="empty"):
        m.register_buffer("a.b", tg.zeros(1))
    with pytest.raises(TypeError):
        m.register_parameter("p", tg.zeros(1))


def test_state_dict_round_trip_and_sharing():
    a, b = Block(), Block()
    for p in a.parameters():
        p._data[...] = np.random.default_rng(0).standard_normal(p.shape)
    sd = a.state_dict()
    assert "cache" not in sd and "steps" in sd
    assert np.shares_memory(sd["fc.weight"]._data, a.fc.weight._data)
    assert sd["fc.weight"].grad_fn is None and not sd["fc.weight"].requires_grad
    version = b.fc.weight._version
    result = b.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert b.fc.weight._version > version
    for (k, v), (k2, v2) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert k == k2
        np.testing.assert_array_equal(v._data, v2._data)
        if k != "fc.weight":
            continue
        assert not np.shares_memory(v._data, v2._data)


def test_load_state_dict_strict_errors():
    m = nn.Linear(3, 2)
    sd = {k: v._data.copy() for k, v in m.state_dict().items()}
    sd["extra"] = np.zeros(1)
    del sd["bias"]
    with pytest.raises(RuntimeError) as err:
        m.load_state_dict(sd)
    msg = str(err.value)
    assert 'Missing key(s) in state_dict: "bias"' in msg
    assert 'Unexpected key(s) in state_dict: "extra"' in msg
    result = m.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["bias"] and result.unexpected_keys == ["extra"]
    before = m.weight._data.copy()
    with pytest.raises(RuntimeError, match=r"size mismatch for weight.*\[3, 3\].*\[2, 3\]"):
        m.load_state_dict({"weight": np.ones((3, 3)), "bias": np.ones(2)}, strict=False)
    np.testing.assert_array_equal(m.weight._data, before)  # nothing was modified


def test_train_eval_zero_grad_requires_grad():
    m = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    assert m.training and m[1].training
    m.eval()
    assert not m.training and not m[1].training
    m.train()
    assert m[1].training
    m(tg.ones(4, 2)).sum().backward()
    g = m[0].weight.grad
    m.zero_grad(set_to_none=False)
    assert m[0].weight.grad is g and (g._data == 0).all()
    m.zero_grad()
    assert m[0].weight.grad is None
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_to_dtype_and_apply():
    m = Block()
    p = m.fc.weight
    m.to(tg.float64)
    assert m.fc.weight is p and p.dtype == tg.float64
    assert m.bn.running_mean.dtype == tg.float64
    assert m.bn.num_batches_tracked.dtype == tg.int64
    assert m(tg.randn(3, 3, dtype=tg.float64)).dtype == tg.float64
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "BatchNorm1d", "Block"]


def test_forward_hooks():
    m = nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append(out.shape) or out + 1)
    out = m(tg.ones(1, 2))
    np.testing.assert_allclose(out._data, m.bias._data[None] + 1, rtol=1e-6)
    assert calls == [(1, 2)]
    h1.remove()
    h2.remove()
    np.testing.assert_allclose(m(tg.zeros(1, 2))._data, m.bias._data[None], rtol=1e-6)
    assert calls == [(1, 2)]


def test_repr_matches_torch(torch_mod):
    def build(nn):
        return nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1, bias=False),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 8, (3, 2), stride=2, dilation=2, groups=2),
            nn.Conv2d(8, 8, 3, padding="same"),  # printed padding='same' (torch: padding=same)
            nn.AvgPool2d(2),
            nn.Flatten(),
            nn.Dropout(0.1),
            nn.ModuleList([nn.Linear(4, 3), nn.GELU(), nn.ReLU(inplace=True)]),
            nn.LayerNorm(3),
            nn.Softmax(dim=1),
            nn.Embedding(5, 2, padding_idx=0),
            nn.Identity(),
        )

    assert repr(build(nn)) == repr(build(torch_mod.nn))


def test_parameter():
    t = tg.randn(2, 3)
    p = nn.Parameter(t)
    assert isinstance(p, tg.Tensor) and p.requires_grad and p.is_leaf
    assert np.shares_memory(p._data, t._data)
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert not nn.Parameter(tg.zeros(1), requires_grad=False).requires_grad
    y = (p * 2 + p).sum()  # ops treat a Parameter as a Tensor
    assert type(y) is tg.Tensor
    y.backward()
    np.testing.assert_allclose(p.grad._data, np.full((2, 3), 3.0))
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and not np.shares_memory(q._data, p._data)


def test_deepcopy_module():
    m = Block()
    m2 = copy.deepcopy(m)
    assert m2.fc.weight is not m.fc.weight
    np.testing.assert_array_equal(m2.fc.weight._data, m.fc.weight._data)
    x = tg.randn(4, 3)
    np.testing.assert_allclose(m2(x)._data, m(x)._data, rtol=1e-6)


def test_containers():
    ml = nn.ModuleList([nn.ReLU()])
    ml.append(nn.Tanh())
    ml.insert(0, nn.Sigmoid())
    ml += [nn.GELU()]
    assert [type(m).__name__ for m in ml] == ["Sigmoid", "ReLU", "Tanh", "GELU"]
    assert type(ml[1:3][0]).__name__ == "ReLU" and len(ml) == 4
    md = nn.ModuleDict({"a": nn.Linear(1, 1)})
    md["b"] = nn.Linear(1, 2)
    assert list(md) == ["a", "b"] and "a" in md
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias", "b.weight", "b.bias"]
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq[:2]) == 2 and isinstance(seq[-1], nn.Linear)
    with pytest.raises(IndexError):
        seq[3]
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(1)


def _spiral(n_per_class, classes, rng):
    xs, ys = [], []
    for c in range(classes):
        r = np.linspace(0.2, 1.0, n_per_class)
        theta = np.linspace(c * 2 * np.pi / classes, c * 2 * np.pi / classes + 3.0, n_per_class)
        theta = theta + rng.normal(0, 0.1, n_per_class)
        xs.append(np.stack([r * np.sin(theta), r * np.cos(theta)], axis=1))
        ys.append(np.full(n_per_class, c))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys)


def test_small_model_trains_above_95_percent():
    """An MLP with BatchNorm learns a 3-arm spiral with a hand-written SGD loop."""
    rng = np.random.default_rng(0)
    x, y = _spiral(200, 3, rng)
    model = nn.Sequential(
        nn.Linear(2, 64),
        nn.BatchNorm1d(64),
        nn.ReLU(),
        nn.Linear(64, 64),
        nn.ReLU(),
        nn.Linear(64, 3),
    )
    loss_fn = nn.CrossEntropyLoss()
    lr = 0.1
    for _ in range(60):
        order = rng.permutation(len(x))
        for start in range(0, len(x), 60):
            idx = order[start : start + 60]
            loss = loss_fn(model(tg.tensor(x[idx])), tg.tensor(y[idx]))
            model.zero_grad()
            loss.backward()
            with tg.no_grad():
                for p in model.parameters():
                    p._data -= lr * p.grad._data
    model.eval()
    with tg.no_grad():
        pred = model(tg.tensor(x))._data.argmax(axis=1)
    assert (pred == y).mean() > 0.95


@pytest.mark.parametrize("idx", [slice(1, 3), slice(None, None, 2), -1, 0])
def test_sequential_delitem_matches_torch(idx, torch_mod):
    """Deleting a slice or an index renumbers as PyTorch does; append then adds at the end."""
    keys = []
    for m in (tg, torch_mod):
        seq = m.nn.Sequential(
            m.nn.Linear(2, 2), m.nn.ReLU(), m.nn.Linear(2, 2), m.nn.Tanh(), m.nn.Linear(2, 2)
        )
        kinds = [type(mod).__name__ for mod in seq]
        del seq[idx]
        del kinds[idx]
        assert [type(mod).__name__ for mod in seq] == kinds and len(seq) == len(kinds)
        seq.append(m.nn.Linear(2, 1))
        assert len(seq) == len(kinds) + 1 and type(seq[-1]).__name__ == "Linear"
        keys.append(list(seq.state_dict()))
    assert keys[0] == keys[1]
    with pytest.raises(IndexError):
        del seq[9]


def test_assigning_a_parameter_replaces_an_attribute_buffer_or_module(torch_mod):
    got = []
    for m in (tg, torch_mod):
        a = m.nn.Module()
        a.x = 1.0
        a.x = m.nn.Parameter(m.ones(2))
        a.register_buffer("b", m.ones(2))
        a.b = m.nn.Parameter(m.ones(2))
        a.c = m.nn.ReLU()
        a.c = m.nn.Parameter(m.ones(2))
        assert all(type(getattr(a, n)).__name__ == "Parameter" for n in "xbc")
        got.append(
            (
                [n for n, _ in a.named_parameters()],
                [n for n, _ in a.named_buffers()],
                [n for n, _ in a.named_children()],
                list(a.state_dict()),
            )
        )
    assert got[0] == got[1]


@pytest.mark.parametrize("shape", [(3,), (), (2, 3)])
@pytest.mark.parametrize("dims", [(0,), (0, -1), (-1,)])
def test_flatten_of_low_rank_inputs_matches_torch(shape, dims, torch_mod):
    ours = nn.Flatten(*dims)(tg.ones(shape))
    theirs = torch_mod.nn.Flatten(*dims)(torch_mod.ones(shape))
    assert ours.shape == tuple(theirs.shape)


@pytest.mark.parametrize("cls", ["BatchNorm1d", "BatchNorm2d", "InstanceNorm1d", "InstanceNorm2d"])
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"affine": False}, {"affine": True}, {"affine": True, "bias": False},
     {"affine": True, "track_running_stats": True}, {"track_running_stats": False}],
)  # fmt: skip
def test_norm_layers_repr_state_dict_and_parameters_match_torch(cls, kwargs, torch_mod):
    # BatchNorm2d(3, affine=False) printed bias=True (torch: bias=False, there is no bias).
    ours, theirs = getattr(nn, cls)(3, **kwargs), getattr(torch_mod.nn, cls)(3, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
