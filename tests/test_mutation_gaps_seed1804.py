"""Tests for the gaps the fresh mutation sample of seed 1804 found (docs/mutation-run-seed1804.md).

Each was seen to fail with its mutant applied and to pass without it.
"""

import numpy as np
import pytest

import tapegrad as tg


@pytest.mark.parametrize("p", [0.0, 2.0, float("inf")])
def test_pdist_of_a_single_row_is_empty_with_a_zero_gradient_like_torch(torch_mod, p):
    # nn/_distance.py:85: fewer than two rows have no pairs; the result is empty but
    # still connected to the input (a zero gradient, as torch), for every p
    res = []
    for lib in (torch_mod, tg):
        x = lib.tensor(np.arange(3.0).reshape(1, 3), dtype=lib.float64, requires_grad=True)
        y = lib.nn.functional.pdist(x, p)
        y.sum().backward()
        res.append((tuple(y.shape), str(y.dtype).split(".")[-1], y.requires_grad, x.grad.tolist()))
    assert res[1] == res[0] == ((0,), "float64", True, [[0.0, 0.0, 0.0]])


@pytest.mark.parametrize("given", ["running_mean", "running_var"])
def test_instance_norm_with_only_one_running_stat_raises_like_torch(torch_mod, given):
    # nn/_layers_functional.py:97 (`or` -> `and` survived): tapegrad updated the one
    # running statistic given, where torch refuses the call; fixed
    for lib in (torch_mod, tg):
        x = lib.tensor(np.arange(24.0).reshape(2, 3, 4), dtype=lib.float64)
        stat = lib.zeros(3, dtype=lib.float64)
        with pytest.raises(ValueError, match="both be None or neither be None"):
            lib.nn.functional.instance_norm(x, **{given: stat}, use_input_stats=True)
        assert stat.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("singular", [False, True])
def test_ldl_factor_ex_check_errors_matches_torch(torch_mod, singular):
    # ops/ldl.py:52 (`check_errors and info.any()` -> `or` survived): no test called
    # ldl_factor_ex with check_errors=True on a good matrix, nor a singular one without
    a = [[0.0, 0.0], [0.0, 0.0]] if singular else [[4.0, 1.0], [1.0, 3.0]]
    res = []
    for lib in (torch_mod, tg):
        A = lib.tensor(a, dtype=lib.float64)
        ld, piv, info = lib.linalg.ldl_factor_ex(A)
        res.append((ld.tolist(), piv.tolist(), int(info)))
        if singular:
            with pytest.raises(RuntimeError):
                lib.linalg.ldl_factor_ex(A, check_errors=True)
        else:
            ld2, _, info2 = lib.linalg.ldl_factor_ex(A, check_errors=True)
            assert ld2.tolist() == ld.tolist() and int(info2) == 0
    assert res[0] == res[1]


def test_special_functions_without_a_method_are_not_tensor_methods_like_torch(torch_mod):
    # ops/unary_table.py:204 (special_i1's method=False -> True survived)
    for name in ("special_i1", "special_i1e", "special_i0e", "special_ndtri"):
        assert hasattr(tg.Tensor, name) is hasattr(torch_mod.Tensor, name) is False


@pytest.mark.parametrize(
    "op, tshape", [("multi_margin_loss", (2, 1)), ("multilabel_margin_loss", (2, 3, 1))]
)
def test_margin_losses_refuse_a_target_with_too_many_dims_like_torch(torch_mod, op, tshape):
    # nn/_losses_margin.py:152 (`t.ndim > 1 + target_extra` -> `2 + ...` survived)
    for lib in (torch_mod, tg):
        x = lib.tensor(np.arange(6.0).reshape(2, 3) / 7, dtype=lib.float64)
        t = lib.tensor(np.zeros(tshape, np.int64))
        with pytest.raises(RuntimeError, match="target"):
            getattr(lib.nn.functional, op)(x, t)


# -- _pool_more.py: the adaptive pools name the ranks they take (survivor 'k + 1' -> 'k - 1')


@pytest.mark.parametrize(
    "fn, shape, ranks",
    [
        ("adaptive_max_pool2d", (2, 2), "3D or 4D"),
        ("adaptive_avg_pool1d", (2, 2, 2, 2), "2D or 3D"),
        ("adaptive_max_pool3d", (2, 2, 2), "4D or 5D"),
    ],
)
def test_adaptive_pool_rank_error_names_the_ranks_as_torch(torch_mod, fn, shape, ranks):
    with pytest.raises(RuntimeError, match=f"Expected {ranks} tensor"):
        getattr(tg.nn.functional, fn)(tg.ones(*shape), 1)
    if fn != "adaptive_avg_pool1d":  # torch's avg_pool1d words it differently
        with pytest.raises(RuntimeError, match=f"Expected {ranks} tensor"):
            getattr(torch_mod.nn.functional, fn)(torch_mod.ones(*shape), 1)


# -- parametrizations.py: orthogonal() of a wide weight (survivor: 'n, k = k, n' dropped)


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_of_a_wide_weight_has_orthonormal_rows_as_torch(torch_mod, orthogonal_map):
    for m in (tg, torch_mod):
        m.manual_seed(0)
        lin = m.nn.utils.parametrizations.orthogonal(
            m.nn.Linear(5, 3), orthogonal_map=orthogonal_map
        )
        w = lin.weight.detach().numpy().astype(np.float64)
        assert w.shape == (3, 5)
        np.testing.assert_allclose(w @ w.T, np.eye(3), atol=1e-5)
