"""Tests for survivors of the seed-2212 mutation sample: each is seen to fail on its mutant.

Covers ops/_table.py:180, ops/arithmetic.py:85 (and add/sub with ``alpha`` and a number
the 0-d array cache does not hold, which raised AttributeError: a bug found on the way,
fixed), autograd/profiler.py:57 and ops/solve.py:79.
"""

import numpy as np
import pytest

import tapegrad as tg


@pytest.mark.parametrize("name", ["isnan", "isfinite", "signbit"])
def test_a_bool_unary_of_a_tensor_that_requires_grad_records_nothing(torch_mod, name):
    """_table.py:180 [drop] ``return Tensor._wrap(out)``: a bool result (or a row without a
    derivative) is returned unrecorded; it does not require grad and has no grad_fn, as in
    torch."""
    for lib in (torch_mod, tg):
        out = getattr(lib, name)(lib.tensor([1.5, -2.0], requires_grad=True))
        assert out.dtype == lib.bool
        assert not out.requires_grad
        assert out.grad_fn is None


def test_only_ints_a_float32_holds_exactly_become_cached_zero_d_arrays():
    """arithmetic.py:85 [const] ``2 -> 3`` (either ``2**24``): an int joins the 0-d array
    cache only when float32 holds it exactly (|v| < 2**24); a larger one keeps NumPy's own
    weak-scalar path (the same rounded value, so the path is checked)."""
    from tapegrad.ops.arithmetic import _weak

    data = np.zeros(2, np.float32)
    for v in (2**24 - 1, -(2**24) + 1):
        assert isinstance(_weak(v, data), np.ndarray)
    for v in (2**24 + 1, -(2**24) - 1):
        assert _weak(v, data) == v
        assert type(_weak(v, data)) is int


@pytest.mark.parametrize(
    "dtype, value, alpha",
    [
        ("float32", 0.0, 3),  # 0 and NaN are never cached
        ("float64", float("nan"), 2),
        ("float32", 16777217, 3),  # rounded to float32 first, as torch casts it
        ("float32", 0, 2.5),
        ("float32", 1 + 2j, 2),
        ("int64", 2, 3),
        ("int64", 2.5, 2),
        ("int32", 2**40, 2),  # wraps as torch's int32 cast does
        ("bool", True, 2),  # stays bool
        ("float16", 0.1, 3),  # half: torch's 0-d rule (Note [Half tensors and alpha])
        ("bfloat16", 1 / 3, -2.5),
    ],
)
def test_add_and_sub_with_alpha_and_a_number_match_torch(torch_mod, dtype, value, alpha):
    """add/sub with ``alpha`` and a number the 0-d array cache does not hold (0, NaN, a
    large int, a complex, an int or bool tensor's number, any half tensor's) raised
    AttributeError in arithmetic._alpha (``db.dtype``); the arithmetic.py:85 bound decides
    which numbers those are. Values as torch's, over 70 elements (vector blocks and tail)."""
    rng = np.random.default_rng(0)
    data = rng.standard_normal((2, 35)) * 4
    for op in ("add", "sub"):
        if dtype == "bool" and op == "sub":
            continue
        want = getattr(torch_mod, op)(
            torch_mod.tensor(data).to(getattr(torch_mod, dtype)), value, alpha=alpha
        )
        got = getattr(tg, op)(tg.tensor(data).to(getattr(tg, dtype)), value, alpha=alpha)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        if want.dtype in (torch_mod.float16, torch_mod.bfloat16):
            got, want = got.float(), want.float()
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_add_with_alpha_and_a_number_on_a_transposed_half_tensor_matches_torch(torch_mod):
    """The half rule of a number with ``alpha`` follows the tensor's memory order (torch's
    loop runs once over a dense tensor, its tail the last elements in memory)."""
    data = np.random.default_rng(1).standard_normal((40, 3))
    want = torch_mod.add(torch_mod.tensor(data).half().mT, 0.1, alpha=3)
    got = tg.add(tg.tensor(data).half().mT, 0.1, alpha=3)
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    assert got.stride() == want.stride()


def test_add_with_an_int_alpha_and_an_int_rejects_a_float_alpha_like_torch(torch_mod):
    """The alpha checks see a number's kind too: an int tensor with a float alpha raises."""
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
            lib.add(lib.tensor([1, 2]), 2, alpha=2.5)


def test_a_record_function_exited_twice_records_one_range(torch_mod):
    """profiler.py:57 [drop] ``self._profiles = ()``: a range's ``__exit__`` forgets the
    profiles it was recorded for, so a second ``__exit__`` adds nothing (torch: one range)."""
    for lib in (torch_mod, tg):
        with lib.autograd.profiler.profile() as prof:
            rf = lib.autograd.profiler.record_function("twice")
            rf.__enter__()
            rf.__exit__(None, None, None)
            rf.__exit__(None, None, None)
        counts = [e.count for e in prof.key_averages() if e.key == "twice"]
        assert counts == [1]


def test_cholesky_names_a_first_leading_minor_that_is_not_positive_definite(torch_mod):
    """solve.py:79 [const] ``range(1, ...)`` -> ``range(2, ...)``: the 1x1 minor is checked
    too, so a matrix whose first entry is negative fails at order 1 (message and info), as
    in torch. (The other ``1``, ``n + 1`` -> ``n + 2``, is equivalent: the extra minor is the
    whole matrix again, reached only when it was found positive-definite.)"""
    m = [[-1.0, 0.0], [0.0, 1.0]]
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="the leading minor of order 1 is not positive"):
            lib.linalg.cholesky(lib.tensor(m))
        assert lib.linalg.cholesky_ex(lib.tensor(m)).info.item() == 1
