"""Errors of the type PyTorch 2.13 raises (they were ValueErrors, or NumPy's ComplexWarning).

* ``F.conv*d(..., padding='same', stride=2)`` and unknown padding strings: RuntimeError
  (the ``nn.Conv*d`` constructors: ValueError, as torch's); ``conv_transpose*d`` with a
  padding string: TypeError.
* ``einsum`` equations that do not fit the operands: RuntimeError (ValueError only when
  no operand is given).
* A complex value written into a real tensor: torch's UserWarning ("Casting complex values
  to real discards the imaginary part") for ``copy_`` and ``x[...] = z``, RuntimeErrors for
  a complex number with an imaginary part and for an advanced-index write.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg


def _same_error(torch_mod, call):
    with pytest.raises(Exception) as theirs:
        call(torch_mod)
    with pytest.raises(Exception) as ours:
        call(tg)
    assert type(ours.value).__name__ == type(theirs.value).__name__, (ours.value, theirs.value)
    return str(ours.value), str(theirs.value)


def _conv_inputs(m, k):
    x = m.ones((1, 2) + (5,) * k)
    w = m.ones((3, 2) + (3,) * k)
    return x, w


_CONV_CALLS = {
    "conv2d_same_stride": lambda m: m.nn.functional.conv2d(
        *_conv_inputs(m, 2), padding="same", stride=2
    ),
    "conv2d_same_stride_pair": lambda m: m.nn.functional.conv2d(
        *_conv_inputs(m, 2), padding="same", stride=(1, 2)
    ),
    "conv1d_same_stride": lambda m: m.nn.functional.conv1d(
        *_conv_inputs(m, 1), padding="same", stride=2
    ),
    "conv3d_same_stride": lambda m: m.nn.functional.conv3d(
        *_conv_inputs(m, 3), padding="same", stride=(1, 1, 2)
    ),
    "conv2d_bad_string": lambda m: m.nn.functional.conv2d(*_conv_inputs(m, 2), padding="foo"),
    "conv1d_bad_string": lambda m: m.nn.functional.conv1d(*_conv_inputs(m, 1), padding="Same"),
    "conv3d_bad_string": lambda m: m.nn.functional.conv3d(*_conv_inputs(m, 3), padding="full"),
    "Conv1d_same_stride": lambda m: m.nn.Conv1d(2, 3, 3, padding="same", stride=2),
    "Conv2d_same_stride": lambda m: m.nn.Conv2d(2, 3, 3, padding="same", stride=(2, 1)),
    "Conv3d_same_stride": lambda m: m.nn.Conv3d(2, 3, 3, padding="same", stride=2),
    "Conv2d_bad_string": lambda m: m.nn.Conv2d(2, 3, 3, padding="foo"),
    "conv_transpose1d_string": lambda m: m.nn.functional.conv_transpose1d(
        m.ones(1, 2, 5), m.ones(2, 3, 3), padding="same"
    ),
    "conv_transpose2d_string": lambda m: m.nn.functional.conv_transpose2d(
        m.ones(1, 2, 5, 5), m.ones(2, 3, 3, 3), padding="valid"
    ),
}


@pytest.mark.parametrize("name", sorted(_CONV_CALLS))
def test_conv_padding_string_errors_have_torchs_type(torch_mod, name):
    ours, theirs = _same_error(torch_mod, _CONV_CALLS[name])
    op = name.split("_")[0]
    if op.islower():  # the functions name the op; the modules keep torch's text as is
        assert op in ours
    key = theirs.split(",")[0].split(" (")[0].replace("conv_transpose1d(): ", "")
    key = key.replace("conv_transpose2d(): ", "")
    assert key in ours


@pytest.mark.parametrize("padding", ["same", "valid"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_conv_padding_strings_without_stride_still_match_torch(torch_mod, padding, k):
    rng = np.random.default_rng(k)
    x = rng.standard_normal((1, 2) + (6,) * k)
    w = rng.standard_normal((3, 2) + (3,) * k)

    def run(m):
        conv = getattr(m.nn.functional, f"conv{k}d")
        return conv(m.tensor(x), m.tensor(w), padding=padding, dilation=2).numpy()

    np.testing.assert_allclose(run(tg), run(torch_mod), rtol=1e-10)


_EQUATIONS = [
    ("ij,jk->ikk", 2),
    ("ij,kl->im", 2),
    ("ij,jk,kl->il", 3),
    ("ijk,jk->ik", 2),
    ("i1,jk->ik", 2),
    ("ij,jk->i-k", 2),
    ("ij,ik->ijk", 2),
    ("ii,jk->ik", 2),
    ("..ij,jk", 2),
    ("ij,jk->ii", 2),
    ("", 1),
    ("ii->i", 1),
    ("ij,ij->i", 2),
    ("ij->", 0),
]


@pytest.mark.parametrize("equation, n", _EQUATIONS, ids=[repr(e) for e, _ in _EQUATIONS])
def test_einsum_errors_have_torchs_type(torch_mod, equation, n):
    def call(m):
        a, b = m.ones(2, 3), m.ones(3, 4)
        m.einsum(equation, *(a, b, b)[:n])

    ours, _ = _same_error(torch_mod, call)
    assert "einsum()" in ours


def test_einsum_error_names_the_equation_and_shapes():
    with pytest.raises(RuntimeError, match=r"'ij,jk->ik'.*\[2, 3\], \[4, 5\]"):
        tg.einsum("ij,jk->ik", tg.ones(2, 3), tg.ones(4, 5))


_COMPLEX_WRITES = {
    "copy_": lambda m, r, c: r.copy_(c),
    "setitem_all": lambda m, r, c: r.__setitem__(slice(None), c),
    "setitem_slice": lambda m, r, c: r.__setitem__(slice(0, 2), c[1:]),
    "setitem_0d": lambda m, r, c: r.__setitem__(0, c[0]),
    "fill_0d": lambda m, r, c: r.fill_(c[1]),
    "copy_int": lambda m, r, c: r.long().copy_(c),
    "copy_broadcast": lambda m, r, c: r.copy_(c[2]),
}


@pytest.mark.parametrize("name", sorted(_COMPLEX_WRITES))
def test_complex_into_real_warns_like_torch_not_numpy(torch_mod, name):
    def run(m):
        r = m.zeros(3, dtype=m.float64)
        c = m.tensor([1 + 2j, 3 - 1j, 0.5j])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _COMPLEX_WRITES[name](m, r, c)
        return r.numpy(), [w for w in caught if "imaginary part" in str(w.message)]

    (ours, warned), (theirs, _) = run(tg), run(torch_mod)
    np.testing.assert_array_equal(ours, theirs)
    assert warned and all(w.category is UserWarning for w in warned)
    assert "discards the imaginary part" in str(warned[0].message)
    assert warned[0].filename == __file__  # the user's line, not tapegrad's
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        run(tg)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, r: r.fill_(1 + 2j),
        lambda m, r: r.__setitem__(0, 2 - 1j),
        lambda m, r: r.__setitem__(m.tensor([True, False, True]), 5 + 1j),
        lambda m, r: r.__setitem__(m.tensor([True, False, True]), m.tensor([1 + 1j, 2j])),
        lambda m, r: r.__setitem__(m.tensor([0, 2]), m.tensor([1 + 1j, 2j])),
    ],
    ids=["fill_", "setitem_scalar", "mask_scalar", "mask_tensor", "index_tensor"],
)
def test_complex_into_real_errors_like_torch(torch_mod, call):
    ours, theirs = _same_error(torch_mod, lambda m: call(m, m.zeros(3)))
    assert theirs.split(" (")[0] in ours


def test_complex_numbers_without_imaginary_part_write_like_torch(torch_mod):
    def run(m):
        r = m.zeros(3)
        r.fill_(1 + 0j)
        r[0] = 2 + 0j
        return r.numpy()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(run(tg), run(torch_mod))


def test_gradient_of_a_complex_source_copied_into_a_real_tensor_matches_torch(torch_mod):
    def run(m):
        a = m.zeros(3, requires_grad=True) * 1
        c = m.tensor([1 + 2j, 3 + 0j, 1j], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a[:] = c
        (a * m.tensor([1.0, 2.0, 3.0])).sum().backward()
        return a.detach().numpy(), c.grad.numpy()

    for ours, theirs in zip(run(tg), run(torch_mod), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


# -- where() with a condition that is not bool; div's rounding_mode (they were cast / ValueError)


@pytest.mark.parametrize("dtype", ["float32", "int64", "float64", "int32"])
@pytest.mark.parametrize("form", ["function", "method"])
def test_where_refuses_a_condition_that_is_not_bool_as_torch(torch_mod, dtype, form):
    def call(m):
        cond = m.tensor([1, 0], dtype=getattr(m, dtype))
        if form == "function":
            return m.where(cond, m.ones(2), m.zeros(2))
        return m.ones(2).where(cond, 0.0)

    ours, theirs = _same_error(torch_mod, call)
    assert ours == theirs


def test_where_takes_a_uint8_condition_with_torchs_deprecation_warning(torch_mod):
    res = []
    for m in (torch_mod, tg):
        with pytest.warns(UserWarning, match="uint8 condition"):
            y = m.where(m.tensor([1, 0, 2], dtype=m.uint8), m.ones(3), m.zeros(3))
        res.append(y.numpy())
    np.testing.assert_array_equal(res[0], res[1])


def test_div_with_an_unknown_rounding_mode_is_torchs_runtime_error(torch_mod):
    ours, theirs = _same_error(torch_mod, lambda m: m.div(m.ones(2), 2.0, rounding_mode="round"))
    assert ours == theirs
