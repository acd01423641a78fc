"""Complex tensors: dtypes, promotion, creation, printing and the autograd guard
(Note [Complex autograd guard]); the complex ops' gradients are in
tests/test_complex_autograd.py, the FFTs in tests/test_fft.py."""

import numpy as np
import pytest

import tapegrad as tg


def test_dtypes_and_aliases():
    assert tg.cfloat is tg.complex64 and tg.cdouble is tg.complex128
    assert tg.complex64 == np.complex64 and tg.complex128 == np.complex128
    z = tg.tensor([1 + 2j])
    assert z.dtype == tg.complex64 and z.is_complex() and tg.is_complex(z)
    assert not tg.ones(2).is_complex()
    assert tg.ones(2).cfloat().dtype == tg.complex64
    assert tg.ones(2).cdouble().dtype == tg.complex128
    assert tg.ones(2).to(tg.complex64).dtype == tg.complex64
    assert tg.zeros(2, dtype=tg.complex128).dtype == tg.complex128
    assert not z.is_conj()


def test_default_complex_follows_default_float(torch_mod):
    tg.set_default_dtype(tg.float64)
    try:
        assert tg.tensor(1j).dtype == tg.complex128
        assert tg.result_type(tg.tensor([1]), 1j) == tg.complex128
    finally:
        tg.set_default_dtype(tg.float32)
    assert tg.tensor(1j).dtype == tg.complex64


def test_chalf_raises_clearly():
    with pytest.raises(TypeError, match="complex32"):
        tg.ones(2).chalf()
    with pytest.raises(TypeError, match="complex32"):
        tg.zeros(2, dtype="complex32")


DTYPES = ["bool", "uint8", "int8", "int64", "float16", "float32", "float64"]
DTYPES += ["complex64", "complex128"]


@pytest.mark.parametrize("a", DTYPES)
def test_promote_types_matches_torch(a, torch_mod):
    for b in DTYPES:
        theirs = torch_mod.promote_types(getattr(torch_mod, a), getattr(torch_mod, b))
        assert (
            str(tg.promote_types(getattr(tg, a if a != "bool" else "bool"), b))
            == str(theirs).split(".")[-1]
        ), (a, b)


@pytest.mark.parametrize("dtype", ["bool", "int64", "float32", "float64", "complex64"])
@pytest.mark.parametrize("other", [True, 2, 2.5, 1j, "0d-f64", "0d-c128", "1d-f64"])
def test_result_type_matches_torch(dtype, other, torch_mod):
    def make(m, spec):
        if isinstance(spec, str):
            shape = () if spec.startswith("0d") else (2,)
            dt = {"f64": m.float64, "c128": m.complex128}[spec.split("-")[1]]
            return m.ones(shape, dtype=dt)
        return spec

    theirs = torch_mod.result_type(
        torch_mod.ones(3, dtype=getattr(torch_mod, dtype)), make(torch_mod, other)
    )
    ours = tg.result_type(tg.ones(3, dtype=getattr(tg, dtype)), make(tg, other))
    assert str(ours) == str(theirs).split(".")[-1]


def test_arithmetic_with_complex_scalars_matches_torch(torch_mod):
    for dt in ("float32", "float64"):
        x = np.arange(3.0)
        ours = tg.tensor(x, dtype=getattr(tg, dt)) * (1 + 2j) - 1j
        theirs = torch_mod.tensor(x, dtype=getattr(torch_mod, dt)) * (1 + 2j) - 1j
        assert str(ours.dtype) == str(theirs.dtype).split(".")[-1]
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_randn_complex_has_half_variance_per_part():
    z = tg.randn(20000, dtype=tg.cdouble, generator=tg.Generator().manual_seed(0))
    assert z.dtype == tg.complex128
    assert abs(float(z.real.var()) - 0.5) < 0.03 and abs(float(z.imag.var()) - 0.5) < 0.03
    u = tg.rand(5, dtype=tg.cfloat)
    assert u.dtype == tg.complex64 and float(u.real.min()) >= 0 and float(u.imag.max()) < 1


def test_printing_omits_the_default_complex_dtype():
    assert "dtype" not in repr(tg.tensor([1 + 2j]))
    assert "dtype=tapegrad.complex128" in repr(tg.tensor([1 + 2j], dtype=tg.complex128))


def test_requires_grad_on_complex_leaves():
    z = tg.zeros(2, dtype=tg.complex128, requires_grad=True)
    assert z.requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        tg.zeros(2, dtype=tg.int64).requires_grad_()


# -- the guard: no silent wrong gradients ----------------------------------------------


def test_unflagged_op_with_complex_input_raises():
    z = tg.tensor([1 + 1j, 2 - 1j], dtype=tg.complex128, requires_grad=True)
    with pytest.raises(NotImplementedError, match=r"tg\.sin: autograd for complex"):
        z.sin()
    with pytest.raises(NotImplementedError, match="complex"):
        z.sgn()  # complex input, complex output, real-only rule


def test_unflagged_op_with_complex_input_and_real_output_raises():
    z = tg.tensor([1 + 1j, 2 - 1j], dtype=tg.complex128, requires_grad=True)
    with pytest.raises(NotImplementedError, match="complex"):
        tg.linalg.vector_norm(z)


def test_unflagged_op_with_real_input_and_complex_output_raises():
    x = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
    c = tg.tensor([1j, 2j], dtype=tg.complex128)
    with pytest.raises(NotImplementedError, match="complex"):
        tg.where(tg.tensor([True, False]), x.to(tg.cdouble), c)


def test_forward_without_grad_runs():
    z = tg.tensor([1 + 1j, 2 - 1j], dtype=tg.complex128)
    np.testing.assert_allclose(z.sin().numpy(), np.sin(z.numpy()))
    with tg.no_grad():
        zr = z.clone().requires_grad_()
        np.testing.assert_allclose(zr.sin().numpy(), np.sin(z.numpy()))


def test_real_programs_are_unaffected_after_complex_use():
    z = tg.tensor([1 + 1j], dtype=tg.complex128, requires_grad=True)
    (z * z).real.sum().backward()
    x = tg.tensor([0.5, 2.0], dtype=tg.float64, requires_grad=True)
    x.sin().sum().backward()  # the input check now runs; real inputs pass
    np.testing.assert_allclose(x.grad.numpy(), np.cos([0.5, 2.0]))


def test_predicates_and_closeness_on_complex(torch_mod):
    v = np.array([1 + 1j, np.nan + 0j, np.inf * 1j, 2.0 + 0j])
    for name in ("isfinite", "isnan", "isinf"):
        ours = getattr(tg, name)(tg.tensor(v)).numpy()
        theirs = getattr(torch_mod, name)(torch_mod.tensor(v)).numpy()
        np.testing.assert_array_equal(ours, theirs)
    a, b = tg.tensor([1 + 1j, 2j]), tg.tensor([1 + 1.0000001j, 2.1j])
    ta, tb = torch_mod.tensor([1 + 1j, 2j]), torch_mod.tensor([1 + 1.0000001j, 2.1j])
    np.testing.assert_array_equal(tg.isclose(a, b).numpy(), torch_mod.isclose(ta, tb).numpy())
    assert tg.allclose(a, a) and not tg.allclose(a, b)


def test_integer_tensor_with_complex_scalar_takes_the_default_complex(torch_mod):
    for scalar in (1j, 2 + 0.5j):
        ours = tg.tensor([1, 2]) * scalar
        theirs = torch_mod.tensor([1, 2]) * scalar
        assert str(ours.dtype) == str(theirs.dtype).split(".")[-1] == "complex64"
        assert (tg.tensor([1.0], dtype=tg.float64) + scalar).dtype == tg.complex128


def test_conjugate_transposes_conjugate(torch_mod):
    v = np.array([[1 + 2j, 3j], [4.0, 5 - 1j]])
    for attr in ("mH", "H"):
        ours = getattr(tg.tensor(v), attr).numpy()
        theirs = getattr(torch_mod.tensor(v), attr).resolve_conj().numpy()
        np.testing.assert_array_equal(ours, theirs)
    x = tg.ones(2, 3)
    assert x.mH.shape == (3, 2) and x.H.shape == (3, 2) and not x.mH.is_complex()


def test_implicit_complex_to_real_casts_raise_explicit_ones_work(torch_mod):
    z = tg.tensor([1 + 2j, 3 - 1j], dtype=tg.complex128)
    # float_power computes a complex input in complex128, as torch (not cast to float64)
    want = torch_mod.float_power(torch_mod.tensor([1 + 2j, 3 - 1j], dtype=torch_mod.complex128), 2)
    np.testing.assert_allclose(tg.float_power(z, 2).numpy(), want.numpy())
    np.testing.assert_array_equal(z.to(tg.float64).numpy(), [1.0, 3.0])  # as torch
    np.testing.assert_array_equal(z.double().numpy(), [1.0, 3.0])
    zr = tg.tensor([1 + 2j], dtype=tg.complex128, requires_grad=True)
    zr.double().sum().backward()  # the gradient of Re z
    np.testing.assert_array_equal(zr.grad.numpy(), [1 + 0j])


def test_a_complex_loss_needs_an_explicit_gradient(torch_mod):
    z = tg.tensor([1 + 1j], requires_grad=True)
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        (z * z).sum().backward()
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        (torch_mod.tensor([1 + 1j], requires_grad=True) ** 2).sum().backward()
