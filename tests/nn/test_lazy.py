"""Lazy modules, UninitializedParameter/Buffer and nn.Buffer against torch: repr and
state_dict before and after the first forward, the class each becomes, outputs and
gradients with torch's materialised weights, load_state_dict into a lazy module, errors."""

import copy

import numpy as np
import pytest

import tapegrad as tg

# name -> (constructor args, input shape)
CASES = {
    "LazyLinear": ((4,), (2, 5)),
    "LazyConv1d": ((4, 3), (2, 3, 9)),
    "LazyConv2d": ((4, 3), (2, 3, 7, 6)),
    "LazyConv3d": ((4, 2), (1, 2, 5, 4, 4)),
    "LazyConvTranspose1d": ((4, 3), (2, 3, 5)),
    "LazyConvTranspose2d": ((4, 3), (2, 3, 4, 5)),
    "LazyConvTranspose3d": ((2, 2), (1, 2, 3, 4, 3)),
    "LazyBatchNorm1d": ((), (4, 3)),
    "LazyBatchNorm2d": ((), (2, 3, 4, 4)),
    "LazyBatchNorm3d": ((), (2, 3, 3, 3, 3)),
    "LazyInstanceNorm1d": ((), (2, 3, 6)),
    "LazyInstanceNorm2d": ((), (2, 3, 4, 4)),
    "LazyInstanceNorm3d": ((), (2, 3, 3, 3, 3)),
}


def _describe(m):
    state = {
        k: type(v).__name__ if "Uninitialized" in type(v).__name__ else tuple(v.shape)
        for k, v in m.state_dict().items()
    }
    return type(m).__name__, repr(m).replace("tapegrad.", "").replace("torch.", ""), state


def _state(m):
    return {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_lazy_module_matches_torch(torch_mod, name):
    args, shape = CASES[name]
    ours, theirs = getattr(tg.nn, name)(*args), getattr(torch_mod.nn, name)(*args)
    assert _describe(ours) == _describe(theirs)
    assert ours.has_uninitialized_params() and theirs.has_uninitialized_params()
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ours(tg.tensor(x))
    theirs(torch_mod.tensor(x))
    assert type(ours) is getattr(tg.nn, type(theirs).__name__)  # cls_to_become
    assert _describe(ours) == _describe(theirs)
    assert not any(tg.nn.modules.lazy.is_lazy(t) for t in ours.state_dict().values())
    ours.load_state_dict(_state(theirs))
    xt, xr = tg.tensor(x, requires_grad=True), torch_mod.tensor(x, requires_grad=True)
    out, ref = ours(xt), theirs(xr)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    gy = np.random.default_rng(1).standard_normal(tuple(ref.shape)).astype(np.float32)
    out.backward(tg.tensor(gy))
    ref.backward(torch_mod.tensor(gy))
    np.testing.assert_allclose(xt.grad.numpy(), xr.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (k, p), (k2, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        assert k == k2
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-4)
    for k, v in _state(theirs).items():
        np.testing.assert_allclose(_state(ours)[k], v, rtol=1e-5, atol=1e-6)


def test_init_matches_the_eager_class():
    """The first forward initialises as the eager class: same RNG draws from one seed."""
    tg.manual_seed(3)
    lazy = tg.nn.LazyConv2d(4, 3)
    lazy(tg.ones(1, 2, 5, 5))
    tg.manual_seed(3)
    eager = tg.nn.Conv2d(2, 4, 3)
    for p, q in zip(lazy.parameters(), eager.parameters(), strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    bn = tg.nn.LazyBatchNorm1d()
    bn.eval()
    bn(tg.ones(2, 3))
    assert bn.weight.detach().numpy().tolist() == [1, 1, 1]
    assert bn.running_var.numpy().tolist() == [1, 1, 1]


@pytest.mark.parametrize("name", ["LazyLinear", "LazyBatchNorm2d", "LazyConv1d"])
def test_load_state_dict_materialises(torch_mod, name):
    args, shape = CASES[name]
    source = getattr(torch_mod.nn, name)(*args)
    source(torch_mod.randn(*shape))
    state = source.state_dict()
    ours, theirs = getattr(tg.nn, name)(*args), getattr(torch_mod.nn, name)(*args)
    ours.load_state_dict({k: v.numpy() for k, v in state.items()})
    theirs.load_state_dict(state)
    assert _describe(ours) == _describe(theirs)  # still Lazy*, now with shapes
    assert not ours.has_uninitialized_params()
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    ours.eval()
    theirs.eval()
    out, ref = ours(tg.tensor(x)), theirs(torch_mod.tensor(x))
    assert type(ours).__name__ == type(theirs).__name__ == name[4:]
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)
    # a lazy state into a lazy module: nothing to load, still lazy
    lazy = getattr(tg.nn, name)(*args)
    lazy.load_state_dict(getattr(tg.nn, name)(*args).state_dict())
    assert lazy.has_uninitialized_params()


def test_uninitialized_parameter_errors(torch_mod):
    ours, theirs = tg.nn.LazyLinear(3).weight, torch_mod.nn.LazyLinear(3).weight
    uses = [
        lambda p: p.numel(),
        lambda p: p + 1,
        lambda p: p.sum(),
        lambda p: p.detach(),
        lambda p, lib=None: len(p),
    ]
    for use in uses:
        for p in (ours, theirs):
            with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter in"):
                use(p)
    msgs = []
    for p in (ours, theirs):
        with pytest.raises(RuntimeError) as info:
            p.shape  # noqa: B018
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
    # what torch allows
    for p, lib in ((ours, tg), (theirs, torch_mod)):
        assert repr(p) == "<UninitializedParameter>"
        assert tuple(p.size()) == (0,) and p.requires_grad and p.is_floating_point()
        assert p.grad is None and p.is_leaf
        assert str(p.dtype).split(".")[-1] == "float32"
        assert p.double().dtype == lib.float64
    # an uninitialized state into an initialized module: torch's RuntimeError
    for lib in (tg, torch_mod):
        with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
            lib.nn.Linear(4, 3).load_state_dict(lib.nn.LazyLinear(3).state_dict())


def test_optimizer_built_before_the_first_forward(torch_mod):
    """The parameters keep their identity when materialised: an optimizer made over the
    lazy module updates them (torch neither warns nor raises here)."""
    x = np.random.default_rng(4).standard_normal((3, 5)).astype(np.float32)
    results = []
    for lib in (tg, torch_mod):
        m = lib.nn.LazyLinear(2)
        params = list(m.parameters())
        opt = lib.optim.SGD(m.parameters(), lr=0.5)
        m(lib.tensor(x))
        assert [id(p) for p in m.parameters()] == [id(p) for p in params]
        results.append(m)
    ours, theirs = results
    ours.load_state_dict(_state(theirs))
    for lib, m in ((tg, ours), (torch_mod, theirs)):
        opt = lib.optim.SGD(m.parameters(), lr=0.5)
        m(lib.tensor(x)).pow(2).sum().backward()
        opt.step()
    for k, v in _state(theirs).items():
        np.testing.assert_allclose(_state(ours)[k], v, rtol=1e-5)


def test_uninitialized_tensors_directly(torch_mod):
    for lib in (tg, torch_mod):
        p = lib.nn.UninitializedParameter(dtype=lib.float64)
        q = copy.deepcopy(p)
        assert type(q) is lib.nn.UninitializedParameter and q.dtype == lib.float64
        p.materialize((2, 3))
        assert type(p) is lib.nn.Parameter and tuple(p.shape) == (2, 3)
        assert p.dtype == lib.float64 and p.requires_grad
        b = lib.nn.UninitializedBuffer()
        assert not b.requires_grad and repr(b) == "<UninitializedBuffer>"
        b.materialize((4,))
        assert type(b) is lib.Tensor and tuple(b.shape) == (4,)
        m = lib.nn.LazyLinear(3).double()  # dtype moves before the first forward
        assert m.weight.dtype == lib.float64
        m(lib.ones(2, 4, dtype=lib.float64))
        assert m.weight.dtype == lib.float64
        m = lib.nn.Module()
        m.buf = lib.nn.UninitializedBuffer(persistent=False)
        assert [n for n, _ in m.named_buffers()] == ["buf"] and list(m.state_dict()) == []


def test_not_fully_initialized(torch_mod):
    for lib in (tg, torch_mod):

        class Half(lib.nn.LazyModuleMixin if lib is tg else lib.nn.modules.lazy.LazyModuleMixin,
                   lib.nn.Module):  # fmt: skip
            def __init__(self):
                super().__init__()
                self.a = lib.nn.UninitializedParameter()
                self.b = lib.nn.UninitializedParameter()

            def initialize_parameters(self, x):
                self.a.materialize((2,))

            def forward(self, x):
                return x

        with pytest.raises(RuntimeError, match="module Half has not been fully initialized"):
            Half()(lib.ones(2))
    assert tg.nn.modules.lazy.LazyModuleMixin is tg.nn.LazyModuleMixin


def test_buffer(torch_mod):
    for lib in (tg, torch_mod):
        m = lib.nn.Linear(2, 2)
        data = lib.zeros(3)
        m.steps = lib.nn.Buffer(data)
        m.tmp = lib.nn.Buffer(lib.ones(2), persistent=False)
        m.plain = lib.ones(1)  # a plain tensor is no buffer
        assert [n for n, _ in m.named_buffers()] == ["steps", "tmp"]
        assert list(m.state_dict()) == ["weight", "bias", "steps"]
        with lib.no_grad():
            m.steps.add_(1)
        assert data.tolist() == [1.0, 1.0, 1.0]  # shares memory
        assert lib.nn.Buffer(lib.ones(2, requires_grad=True)).requires_grad
        assert lib.nn.Buffer().shape == (0,)
        m.tmp = lib.nn.Buffer(lib.ones(2))  # re-assigned persistent: now in state_dict
        assert list(m.state_dict()) == ["weight", "bias", "steps", "tmp"]
