"""The elementwise op tables (Note [Op tables]) against PyTorch: dtypes for every input
dtype, float32 values, aliases, in-place variants, errors, tg.special and the polynomials.
Gradients are checked by the op table (tests/optable/unary_table.py) and op_db."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.ops._table import ROWS, Binary

UNARY = [r for r in ROWS.values() if not isinstance(r, Binary)]
BINARY = [r for r in ROWS.values() if isinstance(r, Binary)]


def _fn(m, row):
    if row.function:
        return getattr(m, row.name)
    return getattr(m.nn.functional if row.special is None else m.special, row.special or row.name)


def _torch_dtype(torch_mod, dtype):
    return getattr(torch_mod, np.dtype(dtype).name)


def _outcome(fn):
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001 - the error's type is compared
        return None, e


def _same(ours, ref, theirs_err, ours_err, what):
    if theirs_err is not None:
        assert ours_err is not None, f"{what}: torch raises {theirs_err!r}; tapegrad returns"
        assert isinstance(ours_err, (RuntimeError, TypeError, ValueError)), repr(ours_err)
        return
    assert ours_err is None, f"{what}: tapegrad raises {ours_err!r}; torch returns"
    want = ref.numpy()
    assert ours._data.dtype == want.dtype, f"{what}: {ours._data.dtype} != torch's {want.dtype}"
    assert ours.shape == want.shape
    tol = 1e-5 if want.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(ours._data, want, rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("row", UNARY, ids=[r.name for r in UNARY])
def test_unary_dtypes_and_values(row, dtype, torch_mod):
    rng = np.random.default_rng(0)
    lo, hi = row.domain
    if dtype == "bool":
        a = rng.uniform(-1, 1, 6) > 0
    elif dtype == "int64":
        a = rng.integers(int(np.floor(lo)), int(np.ceil(hi)) + 1, 6)
    else:
        a = rng.uniform(lo, hi, 6).astype(dtype)
    ref, terr = _outcome(lambda: _fn(torch_mod, row)(torch_mod.tensor(a)))
    ours, oerr = _outcome(lambda: _fn(tg, row)(tg.tensor(a)))
    if row.name == "special_airy_ai" or row.name.startswith("special_bessel"):
        tol = 1e-5  # torch's float64 kernels are less accurate than SciPy's (opdb_harness)
        if terr is None and oerr is None:
            np.testing.assert_allclose(ours._data, ref.numpy(), rtol=tol, atol=tol)
            return
    _same(ours, ref, terr, oerr, f"{row.name}({dtype})")


@pytest.mark.parametrize(
    "dtypes",
    [
        ("float32", "float64"),
        ("int64", "float32"),
        ("int64", "int64"),
        ("float32", "scalar"),
        ("int64", "scalar"),
        ("bool", "bool"),
    ],
)
@pytest.mark.parametrize("row", BINARY, ids=[r.name for r in BINARY])
def test_binary_dtypes_and_values(row, dtypes, torch_mod):
    rng = np.random.default_rng(1)
    lo, hi = row.domain if isinstance(row.domain[0], (int, float)) else row.domain[1]
    if row.name == "special_zeta":
        lo, hi = 1.5, 3.0

    def make(m, dtype, shape):
        if dtype == "scalar":
            return 2 if row.kind == "int" else 1.5
        if dtype == "bool":
            return m.tensor(rng.uniform(-1, 1, shape) > 0)
        if dtype == "int64":
            return m.tensor(rng.integers(max(int(lo), 0) + 1, 4, shape))
        return m.tensor(rng.uniform(lo, hi, shape).astype(dtype))

    state = rng.bit_generator.state
    ref, terr = _outcome(
        lambda: _fn(torch_mod, row)(
            make(torch_mod, dtypes[0], (2, 3)), make(torch_mod, dtypes[1], (3,))
        )
    )
    rng.bit_generator.state = state
    ours, oerr = _outcome(
        lambda: _fn(tg, row)(make(tg, dtypes[0], (2, 3)), make(tg, dtypes[1], (3,)))
    )
    if dtypes[1] == "scalar" and terr is not None and "Tensor" in str(terr):
        return  # torch takes no Python number here (special.zeta(x, 2.0) does; atan2 doesn't)
    _same(ours, ref, terr, oerr, f"{row.name}{dtypes}")


def test_aliases():
    x = tg.tensor([0.25, -0.5])
    assert tg.arcsin is tg.asin and tg.arctan2 is tg.atan2 and tg.fix is tg.trunc
    assert tg.greater is tg.gt and tg.not_equal is tg.ne and tg.less_equal is tg.le
    np.testing.assert_allclose(x.arccos()._data, np.arccos(x._data))
    np.testing.assert_allclose(x.multiply(x)._data, x._data**2)
    np.testing.assert_allclose(x.subtract(x)._data, 0)
    y = x.clone()
    y.arcsin_()
    np.testing.assert_allclose(y._data, np.arcsin(x._data))


def test_inplace_matches_torch(torch_mod):
    a = np.array([0.1, 0.5, -0.3])
    ours, ref = tg.tensor(a), torch_mod.tensor(a)
    ours.asin_().mul_(2.0).exp2_()
    ref.asin_().mul_(2.0).exp2_()
    np.testing.assert_allclose(ours._data, ref.numpy())
    o, t = tg.tensor([1, 6]), torch_mod.tensor([1, 6])
    o.bitwise_xor_(3)
    t.bitwise_xor_(3)
    assert o.tolist() == t.tolist()


def test_inplace_float_op_on_int_tensor_raises(torch_mod):
    with pytest.raises(RuntimeError) as theirs:
        torch_mod.tensor([1, 2]).asin_()
    with pytest.raises(RuntimeError) as ours:  # torch's text (it does not name the op)
        tg.tensor([1, 2]).asin_()
    assert str(ours.value) == str(theirs.value)


def test_inplace_records_gradient():
    x = tg.tensor([0.2, 0.4], dtype=tg.float64, requires_grad=True)
    y = x * 1.0
    y.atan_()
    y.sum().backward()
    np.testing.assert_allclose(x.grad._data, 1 / (1 + x._data**2))


def test_bitwise_on_float_raises(torch_mod):
    with pytest.raises(RuntimeError):
        torch_mod.bitwise_and(torch_mod.tensor([1.0]), torch_mod.tensor([1.0]))
    with pytest.raises(RuntimeError, match="bitwise_and.*float32"):
        tg.bitwise_and(tg.tensor([1.0]), tg.tensor([1.0]))


def test_shifts_match_torch(torch_mod):
    a, b = np.array([1, -8, 5, 3]), np.array([1, 2, 70, 0])
    for name in ("bitwise_left_shift", "bitwise_right_shift"):
        want = getattr(torch_mod, name)(torch_mod.tensor(a), torch_mod.tensor(b)).tolist()
        assert getattr(tg, name)(tg.tensor(a), tg.tensor(b)).tolist() == want
    assert (tg.tensor(a) << 2).tolist() == (torch_mod.tensor(a) << 2).tolist()


def test_not_implemented_backward_raises_like_torch(torch_mod):
    x = tg.tensor([2.0, 3.0], requires_grad=True)
    out = tg.special.zeta(x, 1.5)
    assert out.requires_grad
    with pytest.raises(NotImplementedError, match="derivative for 'special_zeta'"):
        out.sum().backward()
    a = tg.tensor([1.5], requires_grad=True)
    with pytest.raises(NotImplementedError, match="igamma: input"):
        tg.igamma(a, tg.tensor([2.0])).sum().backward()
    b = tg.tensor([2.0], dtype=tg.float64, requires_grad=True)
    tg.special.gammainc(tg.tensor([1.5], dtype=tg.float64), b).sum().backward()
    tb = torch_mod.tensor([2.0], dtype=torch_mod.float64, requires_grad=True)
    torch_mod.special.gammainc(torch_mod.tensor([1.5], dtype=torch_mod.float64), tb).backward()
    np.testing.assert_allclose(b.grad._data, tb.grad.numpy())


def test_every_torch_special_function_exists(torch_mod):
    names = [
        n
        for n in dir(torch_mod.special)
        if not n.startswith("_") and n != "Tensor" and callable(getattr(torch_mod.special, n))
    ]
    assert [n for n in names if not callable(getattr(tg.special, n, None))] == []


@pytest.mark.parametrize("name", sorted(n for n in dir(tg.special) if "polynomial" in n))
def test_polynomials_match_torch(name, torch_mod):
    x = np.linspace(-1.5, 1.5, 13)
    for n in (-1, 0, 1, 2, 5, 9):
        want = getattr(torch_mod.special, name)(torch_mod.tensor(x), n).numpy()
        got = getattr(tg.special, name)(tg.tensor(x), n)._data
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, err_msg=f"{name} n={n}")
    ns = np.array([0, 1, 3, 4, 2, 7, 1, 0, 6, 5, 2, 3, 8])
    want = getattr(torch_mod.special, name)(torch_mod.tensor(x), torch_mod.tensor(ns)).numpy()
    got = getattr(tg.special, name)(tg.tensor(x), tg.tensor(ns))._data
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_closeness_matches_torch(torch_mod):
    a = np.array([1.0, np.nan, 2.0, np.inf])
    b = np.array([1.0 + 1e-9, np.nan, 2.1, np.inf])
    for kw in ({}, {"equal_nan": True}, {"rtol": 0.1}):
        want = torch_mod.isclose(torch_mod.tensor(a), torch_mod.tensor(b), **kw).tolist()
        assert tg.isclose(tg.tensor(a), tg.tensor(b), **kw).tolist() == want
        want = torch_mod.allclose(torch_mod.tensor(a), torch_mod.tensor(b), **kw)
        assert tg.allclose(tg.tensor(a), tg.tensor(b), **kw) is want
    assert tg.equal(tg.tensor([1, 2]), tg.tensor([1, 2])) is True
    assert tg.equal(tg.tensor([1, 2]), tg.tensor([[1, 2]])) is False


def test_nan_to_num_and_logit_match_torch(torch_mod):
    a = np.array([np.nan, np.inf, -np.inf, 0.5], dtype=np.float32)
    for kw in ({}, {"nan": 1.0, "posinf": 2.0}, {"neginf": -3.0}):
        want = torch_mod.nan_to_num(torch_mod.tensor(a), **kw).numpy()
        np.testing.assert_array_equal(tg.nan_to_num(tg.tensor(a), **kw)._data, want)
    p = np.array([0.0, 0.05, 0.5, 1.0, 1.5])
    for eps in (None, 0.1):
        want = torch_mod.logit(torch_mod.tensor(p), eps=eps).numpy()
        np.testing.assert_allclose(tg.logit(tg.tensor(p), eps=eps)._data, want, equal_nan=True)


def test_mvlgamma_p_below_one_raises_and_low_x_is_computed(torch_mod):
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        tg.mvlgamma(tg.tensor([2.0]), 0)
    # torch 2.13 no longer refuses x <= (p-1)/2 (tests/test_parity_misc_p12.py)
    want = torch_mod.mvlgamma(torch_mod.tensor([0.2]), 3).item()
    assert tg.mvlgamma(tg.tensor([0.2]), 3).item() == pytest.approx(want, rel=1e-6)


def test_positive_is_identity():
    x = tg.tensor([1.0])
    assert tg.positive(x) is x
    with pytest.raises(TypeError):
        tg.positive(tg.tensor([True]))


def test_nodes_keep_only_what_the_rule_reads():
    """Row.uses: exp2's rule reads its output only, asin's its input only (one array each)."""
    from tapegrad.autograd.memory import saved_bytes  # noqa: PLC0415

    w = tg.randn(1000, requires_grad=True)
    x = w * 0.5  # a non-leaf: its buffer counts when a Node keeps it
    assert saved_bytes(x) == 0  # mul by a number saves nothing
    assert saved_bytes(x.exp2()) == 4000  # the output, not x
    assert saved_bytes(x.asin()) == 4000  # x, not the output
    assert saved_bytes(tg.special.erfcx(x)) == 8000  # both


def test_float_power_inplace_needs_float64(torch_mod):
    with pytest.raises(RuntimeError):
        torch_mod.tensor([2.0]).float_power_(2)
    with pytest.raises(RuntimeError, match="float_power_.*float32"):
        tg.tensor([2.0]).float_power_(2)
    x = tg.tensor([2.0], dtype=tg.float64)
    assert x.float_power_(3).tolist() == [8.0]
