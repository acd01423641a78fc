"""Tests for survivors of the official seed-2212 mutation sample (list u): each is seen to
fail on its mutant.

Covers nn/_losses.py:238, ops/matfun.py:113, nn/_hooks.py:143, nn/utils/parametrize.py:43,
ops/scan.py:173, ops/_registry.py:101 and nn/init.py:216.
"""

import inspect

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.ops import _registry


def test_nll_loss_rejects_an_unknown_reduction_like_torch(torch_mod):
    """_losses.py:238 [drop] '_check_reduction(reduction)' -> 'pass'."""
    x = np.log(np.array([[0.25, 0.75], [0.5, 0.5]], np.float32))
    t = np.array([1, 0])
    for lib in (torch_mod, tg):
        with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
            lib.nn.functional.nll_loss(lib.tensor(x), lib.tensor(t), reduction="bad")


def test_cond_nuc_of_a_non_square_matrix_raises_like_torch(torch_mod):
    """matfun.py:113 [drop] '_square(A, "linalg.cond")' -> 'pass' (p='nuc': svdvals would
    give a finite number for a 2x3 matrix; torch refuses it)."""
    a = np.arange(6.0).reshape(2, 3) + 1.0
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="square"):
            lib.linalg.cond(lib.tensor(a), p="nuc")


def test_full_backward_hook_returning_too_many_grads_raises_like_torch(torch_mod):
    """_hooks.py:143 [drop] 'raise RuntimeError("Backward hook returned an invalid number
    of grad_input ...")' -> 'pass'."""
    for lib in (torch_mod, tg):
        lin = lib.nn.Linear(2, 2)
        lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
        x = lib.ones(1, 2, requires_grad=True)
        out = lin(x).sum()
        with pytest.raises(
            RuntimeError, match="invalid number of grad_input, got 2, but expected 1"
        ):
            out.backward()


class _Double(tg.nn.Module):
    def forward(self, w):
        return w * 2


def test_parametrize_cache_is_dropped_when_the_cached_block_ends():
    """parametrize.py:43 [drop] '_cache_enabled -= 1' -> 'pass': after ``cached()`` ends a
    parametrized weight is computed afresh from the (changed) original, as torch."""
    P = tg.nn.utils.parametrize
    lin = tg.nn.Linear(2, 2)
    P.register_parametrization(lin, "weight", _Double())
    with P.cached():
        first = lin.weight
        assert lin.weight is first  # cached inside the block
    with tg.no_grad():
        lin.parametrizations.weight.original.fill_(1.0)
    np.testing.assert_array_equal(lin.weight.detach().numpy(), np.full((2, 2), 2.0))
    assert not P._cache_enabled


def test_prod_gradient_of_an_all_zero_tensor_is_zero_like_torch(torch_mod):
    """scan.py:173 [compare] 'x._data == 0' -> '(x._data != 0)': an all-zero input would
    take the division path (0/0 = NaN); torch gives 0 (and Π of the others where one is 0)."""
    for data in ([0.0, 0.0, 0.0], [2.0, 0.0, 3.0]):
        grads = []
        for lib in (torch_mod, tg):
            x = lib.tensor(data, requires_grad=True)
            x.prod().backward()
            grads.append(x.grad.numpy())
        np.testing.assert_array_equal(grads[1], grads[0])


def test_one_input_fast_path_only_for_a_required_input():
    """_registry.py:101 [compare] 'params[0].default is inspect.Parameter.empty' -> 'is not'
    (path): ``tg.exp`` takes the one-argument fast path; a sole ``input=None`` does not."""

    def required(input):
        return input

    def optional(input=None):
        return input

    assert _registry._one_input(required)
    assert not _registry._one_input(optional)
    sig = inspect.signature(tg.exp, follow_wrapped=False)
    assert list(sig.parameters) == ["input"]


def test_trunc_normal_twenty_std_out_follows_the_normal_tail():
    """init.py:216 [const] '0.5' -> '0.505' in ``log_peak``: on [20, 21] (mean 0, std 1) the
    density ~ exp(-x²/2) falls ~e^-20 per unit, mean ~20.05 (numerical integral below); the
    mutant's acceptance exceeds 1 near 20 (log_pdf up to 0.005·400 = 2), flattening the
    density on [20, 20.1] and moving the mean to ~20.08."""
    grid = np.linspace(20.0, 21.0, 200_001)
    dens = np.exp(-0.5 * (grid**2 - 400.0))
    expected = (grid * dens).sum() / dens.sum()
    w = tg.empty(4000, dtype=tg.float64)
    with pytest.warns(UserWarning, match="more than 2 std"):
        tg.nn.init.trunc_normal_(w, 0.0, 1.0, 20.0, 21.0, generator=tg.Generator().manual_seed(0))
    x = w.numpy()
    assert x.min() >= 20.0 and x.max() <= 21.0
    assert abs(x.mean() - expected) < 0.006
