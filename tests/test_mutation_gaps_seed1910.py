"""Tests for the survivors of the seed-1910 mutation sample (docs/mutation-run-seed1910.md),
each seen to fail on its mutant."""

import warnings

import numpy as np
import pytest

import tapegrad as tg


def test_nan_behind_a_multiply_by_zero_is_not_called_the_masked_branch_trap():
    """anomaly.py: only masking consumers (where, masked_fill...) are named as the cause."""
    x = tg.tensor([0.0, 4.0], requires_grad=True)
    with tg.autograd.detect_anomaly():
        y = x.sqrt() * tg.tensor([0.0, 1.0])  # a zero gradient, but no masking op
        with pytest.raises(RuntimeError) as err:
            y.sum().backward()
    msg = str(err.value)
    assert "SqrtBackward" in msg and "where the gradient flowing into" in msg
    assert "masked-branch trap" not in msg and "Compute the masked branch on safe inputs" in msg


def test_a_saved_input_of_a_custom_function_changed_in_place_raises_like_torch(torch_mod):
    """function.py: inputs saved by a Function are version-checked at backward."""
    for lib in (tg, torch_mod):

        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * g * x

        a = lib.tensor([1.0, 2.0], requires_grad=True)
        x = a * 1
        y = Square.apply(x)
        x.add_(1)
        with pytest.raises(RuntimeError, match="modified by an in-?place operation"):
            y.sum().backward()


@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("size", [(1, 1, 1, 3), (1, 1, 3, 1), (1, 1, 1, 1), (2, 1, 1, 2, 3)])
def test_affine_grid_over_unit_sized_dims_matches_torch(torch_mod, size, align_corners):
    """_grid_sample.py: a dim of size one has the base coordinate 0, whatever align_corners."""
    rng = np.random.default_rng(len(size))
    theta = rng.standard_normal((size[0], len(size) - 2, len(size) - 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note on unit-size grids
        want = torch_mod.nn.functional.affine_grid(
            torch_mod.tensor(theta), size, align_corners=align_corners
        ).numpy()
        got = tg.nn.functional.affine_grid(tg.tensor(theta), size, align_corners=align_corners)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("sizes", [(3, -2), (-2, -1), (-3, 1)])
def test_unflatten_refuses_negative_sizes_other_than_minus_one_like_torch(torch_mod, sizes):
    """shape.py: torch's 'invalid shape dimension' check comes before the product's."""
    with pytest.raises(RuntimeError, match="invalid shape dimension"):
        torch_mod.zeros(2, 3).unflatten(1, sizes)
    with pytest.raises(RuntimeError, match=r"unflatten: invalid shape dimension -\d at index"):
        tg.zeros(2, 3).unflatten(1, sizes)


@pytest.mark.parametrize("shape", [(7, 3), (3, 7), (4, 4)])
@pytest.mark.parametrize("wrap", [None, False, True])
def test_fill_diagonal_of_tall_and_wide_matrices_matches_torch(torch_mod, shape, wrap):
    """inplace_methods.py: ``wrap`` defaults to False (a tall matrix's diagonal stops)."""
    kwargs = {} if wrap is None else {"wrap": wrap}
    got = tg.zeros(shape).fill_diagonal_(5.0, **kwargs).numpy()
    want = torch_mod.zeros(shape).fill_diagonal_(5.0, **kwargs).numpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["add", "sub"])
@pytest.mark.parametrize("other", [3, 2.5])
@pytest.mark.parametrize("alpha", [1, 2, -0.5])
def test_add_and_sub_of_a_number_with_alpha_match_torch(torch_mod, op, other, alpha):
    """arithmetic.py: the fast path for a Python number is taken only when alpha is 1."""
    x = np.array([1.0, -2.0, 4.0], dtype=np.float32)
    got = getattr(tg, op)(tg.tensor(x, requires_grad=True), other, alpha=alpha)
    want = getattr(torch_mod, op)(torch_mod.tensor(x), other, alpha=alpha)
    assert str(got.dtype) == str(want.dtype).removeprefix("torch.")
    np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-6)
