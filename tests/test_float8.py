"""torch's float8 dtypes: names, conversions bit for bit against torch (a float32 sweep
with overflow, NaN, infinities and subnormals; every float8 byte back), and torch's
NotImplementedError/RuntimeError for arithmetic and promotion (Note [float8 as torch])."""

import numpy as np
import pytest

import tapegrad as tg

NAMES = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"]


def _sweep():
    rng = np.random.default_rng(0)
    mags = 10.0 ** rng.uniform(-40, 38, 4000)
    special = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 448, 449, 464, 465, 480, 1e4,
               57344, 57345, 61440, 61441, 1e30, 240, 241, 248, 256, 2**-9, 2**-10, 2**-11,
               3 * 2**-11, 2**-17, 2**-16, 1.5 * 2**-15, 2**-18, 2**-20, 1e-45, 1.0, 1.5,
               3.0, 0.75, 2**-127, 1.5 * 2**-127, 2**-126, 2**127, 1.5 * 2**127, 3e38]  # fmt: skip
    vals = np.concatenate([rng.standard_normal(4000) * mags, special, np.negative(special)])
    return vals.astype(np.float32)


@pytest.mark.parametrize("name", NAMES)
def test_names_and_info_as_torch(torch_mod, name):
    d = getattr(tg, name)
    assert str(d) == name and name in tg.__all__
    assert tg.tensor([1.0]).to(d).dtype == d == tg.tensor([1.0], dtype=d).dtype
    assert tg.zeros(2, dtype=d).is_floating_point()
    ft, fg = torch_mod.finfo(getattr(torch_mod, name)), tg.finfo(d)
    for field in ("max", "min", "eps", "tiny", "bits"):
        assert getattr(fg, field) == getattr(ft, field), field


@pytest.mark.parametrize("name", NAMES)
def test_conversions_bitwise_as_torch(torch_mod, name):
    torch = torch_mod
    td, d = getattr(torch, name), getattr(tg, name)
    vals = _sweep()
    for src in (np.float32, np.float64, np.float16):
        with np.errstate(over="ignore"):
            v = vals.astype(src)
        want = torch.from_numpy(v).to(td).view(torch.uint8).numpy()
        got = tg.tensor(v).to(d).numpy().view(np.uint8)
        np.testing.assert_array_equal(got, want, err_msg=f"{np.dtype(src)} -> {name}")
    want = torch.tensor(vals.tolist(), dtype=td).view(torch.uint8).numpy()  # tensor(list)
    np.testing.assert_array_equal(tg.tensor(vals.tolist(), dtype=d).numpy().view(np.uint8), want)
    every = np.arange(256, dtype=np.uint8)
    back_t = torch.from_numpy(every).view(td)
    back_g = tg.tensor(every).numpy().view(d)
    back_g = tg.tensor(back_g)
    assert back_g.dtype == d
    want32 = back_t.float().numpy().view(np.uint32)
    np.testing.assert_array_equal(back_g.float().numpy().view(np.uint32), want32)
    for target in ("float64", "float16", "bfloat16"):
        a = back_t.to(getattr(torch, target)).float().numpy()
        b = back_g.to(getattr(tg, target)).float().numpy()
        np.testing.assert_array_equal(np.isnan(b), np.isnan(a))
        np.testing.assert_array_equal(b[~np.isnan(b)], a[~np.isnan(a)])
    for name2 in NAMES:  # float8 -> float8
        a = back_t.to(getattr(torch, name2)).view(torch.uint8).numpy()
        np.testing.assert_array_equal(back_g.to(getattr(tg, name2)).numpy().view(np.uint8), a)


def _x(lib, name):
    return lib.tensor([1.0, -2.0, 3.5]).to(getattr(lib, name))


WORKS = {  # torch has these for float8 on CPU
    "cat": lambda L, x: L.cat([x, x]),
    "reshape": lambda L, x: x.reshape(3, 1),
    "index": lambda L, x: x[1:],
    "clone": lambda L, x: x.clone(),
    "eq": lambda L, x: x == x,
    "ne_scalar": lambda L, x: x != 1,
    "isnan": lambda L, x: x.isnan(),
    "to_float": lambda L, x: x.float(),
    "copy_overflow": lambda L, x: x.clone().copy_(L.full((3,), 1e5)),
    "mul_tensors": lambda L, x: x * x,  # torch's one float8 arithmetic kernel on CPU
    "mul_overflow": lambda L, x: L.mul(y := L.full((3,), 400.0).to(x.dtype), y),  # 448 / inf
}
RAISES = {  # NotImplementedError: "<kernel>" not implemented for 'Float8_...'
    "add": lambda L, x: x + x,
    "mul_scalar": lambda L, x: x * 2,
    "mul_0d": lambda L, x: x * x[0],
    "sub": lambda L, x: x - x,
    "div": lambda L, x: x / x,
    "exp": lambda L, x: x.exp(),
    "sin": lambda L, x: L.sin(x),
    "tanh": lambda L, x: x.tanh(),
    "sigmoid": lambda L, x: x.sigmoid(),
    "neg": lambda L, x: -x,
    "sum": lambda L, x: x.sum(),
    "mean": lambda L, x: x.mean(),
    "gt": lambda L, x: x > 1,
    "le": lambda L, x: x <= x,
}


@pytest.mark.parametrize("op", list(WORKS))
def test_storage_ops_as_torch(torch_mod, op):
    for name in ("float8_e4m3fn", "float8_e5m2"):
        a, b = WORKS[op](torch_mod, _x(torch_mod, name)), WORKS[op](tg, _x(tg, name))
        assert str(b.dtype) == str(a.dtype).replace("torch.", "")
        np.testing.assert_array_equal(b.float().numpy(), a.float().numpy())


@pytest.mark.parametrize("op", list(RAISES))
def test_arithmetic_raises_as_torch(torch_mod, op):
    for name, tname in (("float8_e4m3fn", "Float8_e4m3fn"), ("float8_e5m2", "Float8_e5m2")):
        with pytest.raises(NotImplementedError, match=f"not implemented for '{tname}'"):
            RAISES[op](torch_mod, _x(torch_mod, name))
        with pytest.raises(NotImplementedError, match=f"not implemented for '{tname}'"):
            RAISES[op](tg, _x(tg, name))


@pytest.mark.parametrize("other", ["float32", "float8_e5m2", "int64", "bfloat16"])
def test_promotion_raises_as_torch(torch_mod, other):
    pair_t = (torch_mod.float8_e4m3fn, getattr(torch_mod, other))
    with pytest.raises(RuntimeError, match="Promotion for Float8") as et:
        torch_mod.promote_types(*pair_t)
    with pytest.raises(RuntimeError, match="Promotion for Float8") as eg:
        tg.promote_types(tg.float8_e4m3fn, getattr(tg, other))
    assert str(eg.value) == str(et.value)
    assert tg.promote_types(tg.float8_e5m2, tg.float8_e5m2) == tg.float8_e5m2
