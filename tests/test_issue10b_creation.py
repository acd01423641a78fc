"""Creation functions take PyTorch's keywords (size=, dtype=, device=, requires_grad=, out=,
layout=, pin_memory=, memory_format=); conversions (.type, .half, new_*, .to(tensor))."""

import pytest

import tapegrad as tg

FNS = {
    "zeros-size": lambda m: m.zeros(size=(2, 3), dtype=m.float64, device="cpu", requires_grad=True),
    "ones-layout": lambda m: m.ones(2, 3, pin_memory=False),
    "full-int": lambda m: m.full((2,), 3, dtype=m.int32, device="cpu"),
    "arange-grad": lambda m: m.arange(0, 5, 2, dtype=m.float64, requires_grad=True),
    "linspace": lambda m: m.linspace(0, 1, 5, dtype=m.float64, requires_grad=True, device="cpu"),
    "logspace": lambda m: m.logspace(0, 1, 3, base=3),
    "eye": lambda m: m.eye(3, 2, dtype=m.int64, device="cpu"),
    "full_like": lambda m: m.full_like(m.ones(2), 7, dtype=m.float64, requires_grad=True),
    "rand_like": lambda m: m.rand_like(m.ones(2, dtype=m.float64), device="cpu"),
    "randint_like": lambda m: m.randint_like(m.ones(2, 3), 0, 5),
    "randint-high-size": lambda m: m.randint(5, (2, 3), dtype=m.int32),
    "randint-size-kw": lambda m: m.randint(1, 5, size=(2,)),
    "rand": lambda m: m.rand(2, 3, dtype=m.float64, requires_grad=True, device="cpu"),
    "randn": lambda m: m.randn((2, 3), requires_grad=True),
    "zeros-out": lambda m: m.zeros((2,), out=m.empty(0)),
    "scalar_tensor": lambda m: m.scalar_tensor(3),
    "tensor-pin": lambda m: m.tensor([1, 2], device="cpu", pin_memory=False),
    "type-dtype": lambda m: m.ones(2).type(m.float64),
    "type-str": lambda m: m.ones(2).type("torch.DoubleTensor"),
    "half": lambda m: m.ones(2).half(),
    "byte": lambda m: m.ones(2).byte(),
    "type_as": lambda m: m.ones(2).type_as(m.ones(1, dtype=m.int32)),
    "new_zeros": lambda m: m.ones(2).new_zeros(3, 2),
    "new_full": lambda m: m.ones(2, dtype=m.float64).new_full((2,), 3.0),
    "new_tensor": lambda m: m.ones(2).new_tensor([1, 2]),
    "to-non_blocking": lambda m: m.ones(2).to(m.float64, non_blocking=True),
    "to-tensor": lambda m: m.ones(2).to(m.ones(1, dtype=m.float64)),
    "clone-memory_format": lambda m: (
        m.ones(2).clone(memory_format=m.preserve_format)
        if m.__name__ == "torch"
        else m.ones(2).clone(memory_format=None)
    ),
}


@pytest.mark.parametrize("name", sorted(FNS))
def test_creation_matches_torch(name, torch_mod):
    ours, theirs = FNS[name](tg), FNS[name](torch_mod)
    assert ours.shape == tuple(theirs.shape)
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    assert ours.requires_grad == theirs.requires_grad
    if not name.startswith(("rand", "empty")):
        assert ours.tolist() == theirs.tolist()


def test_type_string_and_out():
    assert tg.ones(2).type() == "torch.FloatTensor"
    out = tg.empty(0)
    assert tg.arange(5, out=out) is out and out.tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(RuntimeError, match="floating point"):
        tg.zeros(2, dtype=tg.int64, requires_grad=True)
