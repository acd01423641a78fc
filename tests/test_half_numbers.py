"""float16/bfloat16 tensors with a Python number give torch's values (Note [Half tensors and
numbers] in ops/_half_number.py): checked on a fifth of all finite values of each dtype."""

import warnings

import numpy as np
import pytest

import tapegrad as tg

NUMBERS = [0.1, 1 / 3, 70000.0, 1e-8, 65504.0, 3.0, 1e30, -2.5e-5, 100001, 2049, 7, 0.0, -1]
OPS = {
    "add": lambda a, s: a + s,
    "sub": lambda a, s: a - s,
    "rsub": lambda a, s: s - a,
    "mul": lambda a, s: a * s,
    "rmul": lambda a, s: s * a,
    "div": lambda a, s: a / s,
    "rdiv": lambda a, s: s / a,
    "mul_": lambda a, s: a.clone().mul_(s),
    "div_": lambda a, s: a.clone().div_(s),
    "imul": lambda a, s: _imul(a.clone(), s),
}


def _imul(a, s):
    a *= s
    return a


def _all_values(m, dtype_name):
    bits = np.arange(0, 65536, 5, dtype=np.uint16)  # every fifth bit pattern: all ranges
    dtype = getattr(tg, dtype_name)
    values = bits.view(dtype).astype(np.float32)
    values = values[np.isfinite(values)]
    return m.tensor(values).to(getattr(m, dtype_name))


def _same(t, g):
    tv, gv = t.float().numpy(), g.float().numpy()
    np.testing.assert_array_equal(gv, tv)  # NaNs compare equal here


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", list(OPS))
def test_half_tensor_and_number_equal_torch_on_a_sweep(torch_mod, dtype, op):
    fn = OPS[op]
    tx, gx = _all_values(torch_mod, dtype), _all_values(tg, dtype)
    for s in NUMBERS:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no NumPy overflow warning (torch is silent)
            g = fn(gx, s)
        t = fn(tx, s)
        assert str(g.dtype) == dtype
        _same(t, g)


def test_half_times_large_number_is_zero_not_nan():
    x = tg.tensor([0.0, 1.0], dtype=tg.float16)
    assert (x * 70000.0).tolist() == [0.0, float("inf")]
    assert (x / 1e-8).tolist()[0] == 0.0


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("s", [0.1, 70000.0, 1 / 3])
def test_half_gradient_through_a_number_equals_torch(torch_mod, dtype, s):
    vals = np.linspace(-3, 3, 101, dtype=np.float32)
    res = []
    for m in (tg, torch_mod):
        x = m.tensor(vals).to(getattr(m, dtype)).requires_grad_()
        y = (x * s) / s + 0.1 / (x + 5.0)
        y.backward(m.ones_like(y) * 0.3)
        res.append((y.detach(), x.grad))
    _same(res[1][0], res[0][0])
    assert str(res[0][1].dtype) == dtype
    _same(res[1][1], res[0][1])


def test_graph_cache_replays_the_half_rule(torch_mod):
    def step(m, x):
        return x * 0.1, 70000.0 * x, 0.3 / x, x / 3.0

    cached = tg.jit.cache(lambda x: step(tg, x))
    vals = np.linspace(-3, 3, 50, dtype=np.float32)
    expected = step(torch_mod, torch_mod.tensor(vals).half())
    for _ in range(4):  # records, records again, then replays
        for t, g in zip(expected, cached(tg.tensor(vals).half())):
            _same(t, g)
    assert cached.cache_info().hits == 2


ZERO_DIM = [  # (tensor dtype, 0-d dtype, 0-d value)
    ("float32", "float64", 0.1),
    ("float16", "float32", 0.1),
    ("float16", "float64", 70000.0),
    ("bfloat16", "float32", 1 / 3),
    ("int8", "int64", 300),
    ("int64", "float64", 0.5),
    ("float32", "int64", 3),
    ("bool", "int64", 2),
    ("int32", "bool", True),
]


@pytest.mark.parametrize("left", [False, True], ids=["tensor_first", "zero_dim_first"])
@pytest.mark.parametrize("dtype,zdtype,value", ZERO_DIM)
def test_zero_dim_tensor_operand_ranks_below_like_torch(torch_mod, dtype, zdtype, value, left):
    """Note [0-d tensor operands]: the result's dtype and values are torch's."""
    vals = np.array([0.0, 1.5, -2.0, 3.0])
    ops = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b}
    for name, fn in ops.items():
        res = []
        for m in (tg, torch_mod):
            x = m.tensor(vals).to(getattr(m, dtype))
            z = m.tensor(value, dtype=getattr(m, zdtype))
            res.append(fn(z, x) if left else fn(x, z))
        ours, theirs = res
        assert str(ours.dtype) == str(theirs.dtype).replace("torch.", ""), name
        if name == "mul" and left and dtype in ("float16", "bfloat16"):
            continue  # not pinned: torch's rule for a 0-d first factor
        np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())
