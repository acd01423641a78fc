"""Tests for lines of ops/ that no in-process test ran (session 22, list a; the autograd/
lines are in tests/test_mutation_gaps_s22_a.py): each is seen to fail on its mutants, or
is a bug fixed on the way (the docstrings say which)."""

import numpy as np
import pytest

import tapegrad as tg


def _same(got, want):
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


# -- ops/_table.py, _registry.py, _util.py ----------------------------------------------------


def test_binary_table_ops_take_a_complex_operand_as_complex(torch_mod):
    """_table.py:243 [drop] (a dimensioned real tensor with a 0-d complex one is computed in
    complex: 1j is true, as torch) and :247 [drop] (a Python complex number beside a real
    tensor, which torch's logical_and takes only as a tensor: the same values)."""
    x = [0.0, 2.0]
    want = torch_mod.logical_and(torch_mod.tensor(x), torch_mod.tensor(1j)).numpy()
    np.testing.assert_array_equal(want, [False, True])
    np.testing.assert_array_equal(tg.logical_and(tg.tensor(x), tg.tensor(1j)).numpy(), want)
    np.testing.assert_array_equal(tg.logical_xor(tg.tensor(x), 1j).numpy(), ~want)


def test_registry_reprs_and_signature_probe():
    """_registry.py:34 (OpInfo's repr) and :96 [drop] / [const] ``return False``: a
    callable without a signature (a class like int) is not a one-input op."""
    from tapegrad.ops._registry import OPS, _one_input

    assert repr(OPS["add"]) == "OpInfo('add')"
    assert _one_input(int) is False
    assert _one_input(lambda input: input) is True


def test_op_given_none_for_a_tensor_is_a_type_error_like_torch(torch_mod):
    """A bug fixed (_registry._failed): an op handed None for a Tensor (mm(x, None), also as
    a keyword) raised AttributeError: None was taken for "no bad argument found"; torch
    raises TypeError."""
    for lib in (torch_mod, tg):
        x = lib.ones(2, 2)
        for call in (lambda: lib.mm(x, None), lambda: lib.mm(x, mat2=None)):
            with pytest.raises(TypeError, match="mm\\(\\)"):
                call()
    with pytest.raises(TypeError, match="got NoneType"):
        tg.mv(tg.ones(2, 2), None)


def test_an_attribute_error_not_about_a_non_tensor_is_kept():
    """_registry.py:111 [drop] ``raise exc``: an op's AttributeError that is not a missing
    ``_data`` of a non-Tensor argument (here a duck-typed object whose _data is a list)
    comes through as it is, not as a TypeError about some argument."""

    class Duck:
        _data = [1.0]

    with pytest.raises(AttributeError, match="'list' object has no attribute 'dtype'"):
        tg.sin(Duck())


def test_as_tensor_refuses_other_objects_like_torch(torch_mod):
    """_util.py:48 [drop] the TypeError of as_tensor (clamp's input)."""

    class Thing:
        pass

    with pytest.raises(TypeError):
        torch_mod.clamp(Thing(), 0.0)
    with pytest.raises(TypeError, match="clamp: expected a Tensor, got Thing"):
        tg.clamp(Thing(), 0.0)


def test_unsupported_dtypes_name_both_operands(torch_mod):
    """NumPy has no remainder for complex: torch's NotImplementedError "remainder_cpu" not
    implemented for 'ComplexFloat' (arithmetic._no_complex; this was a TypeError naming both
    dtypes, from arithmetic.py:114/:146, which complex operands no longer reach)."""
    for lib in (torch_mod, tg):
        a = lib.tensor([1.0, 2.0], dtype=lib.float16)
        b = lib.tensor([1.0, 1.0], dtype=lib.complex64)
        with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
            lib.remainder(a, b)


def test_stack_of_nothing_like_torch(torch_mod):
    """joining.py:34 [drop] the RuntimeError for an empty sequence."""
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="non-empty"):
            lib.stack([])


# -- ops/inplace.py: alpha of add_/sub_ -------------------------------------------------------


def test_inplace_add_with_a_numpy_alpha_rounds_like_torch(torch_mod):
    """A bug fixed (inplace._binary): add_/sub_ took a NumPy scalar alpha as it came, so a
    float16 update missed torch's rounding (Note [Half tensors and alpha]) and a complex or
    bool alpha was not refused as torch refuses it. Also covers _half_alpha.py:40, dead
    since both callers check alpha first (removed)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(200).astype(np.float16)
    b = rng.standard_normal(200).astype(np.float16)
    for alpha in (np.float32(0.3), np.float16(0.3), np.int64(3)):
        for name in ("add_", "sub_"):
            want = getattr(torch_mod.tensor(a), name)(torch_mod.tensor(b), alpha=alpha)
            got = getattr(tg.tensor(a), name)(tg.tensor(b), alpha=alpha)
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    for lib in (torch_mod, tg):
        h = lib.tensor([1.5, 2.25], dtype=lib.float16)
        with pytest.raises(RuntimeError, match="alpha must not be a complex number"):
            h.add_(lib.ones(2, dtype=lib.float16), alpha=2j)
        with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
            lib.ones(2, dtype=lib.int64).sub_(lib.ones(2, dtype=lib.int64), alpha=0.5)


# -- ops/linalg.py -----------------------------------------------------------------------------


def test_outer_of_mixed_dtypes_gives_each_input_its_dtype(torch_mod):
    """linalg.py:175 [drop] ``gb = gb._cast(...)``: outer(float64, float32 that requires
    grad) is float64; the float32 input's gradient is float32, as torch's."""
    grads = []
    for lib in (torch_mod, tg):
        a = lib.tensor([1.0, 2.0], dtype=lib.float64)
        b = lib.tensor([3.0, 4.0, 5.0], requires_grad=True)
        lib.outer(a, b).sum().backward()
        grads.append(b.grad)
    _same(grads[1], grads[0])


# -- ops/complex_writes.py, _half_number.py ---------------------------------------------------


def test_complex_values_written_into_a_complex_tensor_like_torch(torch_mod):
    """complex_writes.py:51 [drop] ``return value``: fill_, copy_ and setitem of complex
    values into a complex tensor keep them whole, as torch."""
    got = []
    for lib in (torch_mod, tg):
        z = lib.zeros(3, dtype=lib.complex64)
        z.fill_(1 + 2j)
        first = z.clone()
        z.copy_(lib.tensor([1j, 2, 3 - 1j]))
        second = z.clone()
        z[0] = 5 - 5j
        z[[1, 2]] = lib.tensor([7j, 8 + 0j])
        got.append([t.numpy() for t in (first, second, z)])
    for g, w in zip(*got):
        np.testing.assert_array_equal(g, w)


def test_opmath_number_leaves_other_ufunc_calls_to_numpy():
    """_half_number.py:49 and :54 [drop] ``return NotImplemented``: a float16 opmath number
    (Note [Half tensors and numbers]) handles only plain two-array ufunc calls; a ufunc
    method (outer) or a non-array operand is left to NumPy, which refuses it."""
    from tapegrad.ops._half_number import opmath_number

    arr = np.array([1.0, 2.0], np.float16)
    s = opmath_number(0.1, arr)
    np.testing.assert_array_equal(
        np.multiply(arr, s), (arr.astype(np.float32) * 0.1).astype(np.float16)
    )
    with pytest.raises(TypeError):
        np.add.outer(s, arr)
    with pytest.raises(TypeError):
        np.multiply(s, [1.0, 2.0])


def test_svd_of_a_matrix_with_nan_raises_a_linalg_error_like_torch(torch_mod):
    """solve.py:57 [drop] ``raise LinAlgError(...)`` in _call: NumPy's SVD that does not
    converge (a NaN entry) is torch's LinAlgError (a RuntimeError), not a crash later."""
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError) as info:
            lib.linalg.svd(lib.tensor([[float("nan"), 1.0], [1.0, 1.0]]))
        assert isinstance(info.value, lib.linalg.LinAlgError)
        assert str(info.value).startswith("linalg.svd: ")


def test_inplace_result_that_cannot_be_cast_even_out_of_place_like_torch(torch_mod):
    """inplace.py:256 [drop] ``return RuntimeError(...)``: an in-place op whose out-of-place
    form refuses the operands too (remainder of int64 by complex): still torch's
    RuntimeError that the result can't be cast to self's dtype."""
    for lib in (torch_mod, tg):
        x = lib.ones(2, dtype=lib.int64)
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
            x.remainder_(lib.tensor([1j, 1j]))


# -- ops/indexing.py --------------------------------------------------------------------------


def test_an_integer_index_beside_a_bool_mask_like_torch(torch_mod):
    """indexing.py:314 [drop] ``return None``: the gradient of x[rows, mask] (an integer array
    then a bool mask) is not scattered as an integer lookup of the leading dims (Note in
    _scatter_add_array); values and the gradient are torch's."""
    got = []
    for lib in (torch_mod, tg):
        x = lib.arange(12.0).reshape(3, 4).requires_grad_(True)
        mask = lib.tensor([False, True, False, True])
        y = x[lib.tensor([0, 2]), mask]
        (y * lib.tensor([3.0, 5.0])).sum().backward()
        got.append((y.detach().numpy(), x.grad.numpy()))
    for g, w in zip(*got):
        np.testing.assert_array_equal(g, w)


def test_inplace_op_on_a_view_that_would_broadcast_it_like_torch(torch_mod):
    """inplace.py:149 [drop] the RuntimeError of _commit_through_view: an in-place op on a
    view (recorded through its base) whose result is bigger than the view."""
    for lib in (torch_mod, tg):
        x = lib.ones(2, 4, requires_grad=True)
        view = (x * 1)[0]
        with pytest.raises(RuntimeError, match=r"\[3, 4\]") as info:
            view.add_(lib.ones(3, 4))
    assert "which cannot be written into a tensor of shape [4]" in str(info.value)
