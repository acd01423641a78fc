"""Singular and non-positive-definite matrices: every linear-algebra op that refuses one
raises torch's exception type with torch's text (its numbers: the 1-based zero pivot, the
order of the failing minor, the first failing matrix of a batch), and the ops that factor
such a matrix without complaint (lu_factor_ex, lu, torch.lu, det, slogdet) still do.

torch's messages start with "torch.linalg.lu_factor:" where ours say "linalg.lu_factor:";
the rest is compared character for character."""

import warnings

import numpy as np
import pytest

import tapegrad as tg

# exactly singular: U's first zero pivot (getrf's info) is 3, 2 and 1
_S3 = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]
_S2 = [[1.0, 2.0], [2.0, 4.0]]
# a batch whose matrix 1 fails; matrix 2 fails at another pivot (the first one is named)
_BATCH = [np.eye(3).tolist(), _S3, [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]]
SINGULAR = {"3x3": _S3, "2x2": _S2, "zeros": np.zeros((3, 3)).tolist(), "batch": _BATCH}
# not positive-definite: the leading minors of order 3, 2, 1 fail first
NOT_PD = {
    "order-3": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, -1.0]],
    "order-2": [[2.0, 1.0], [1.0, 0.25]],
    "zeros": np.zeros((2, 2)).tolist(),
    "batch": [np.eye(3).tolist(), np.diag([1.0, -1.0, 1.0]).tolist(), (-np.eye(3)).tolist()],
}


def _rhs(m, a):
    return m.ones(a.shape[:-1], dtype=a.dtype)


RAISE = {
    "linalg.lu_factor": lambda m, a: m.linalg.lu_factor(a),
    "linalg.lu_factor-float32": lambda m, a: m.linalg.lu_factor(a.float()),
    "linalg.lu_factor_ex-check_errors": lambda m, a: m.linalg.lu_factor_ex(a, check_errors=True),
    "linalg.inv": lambda m, a: m.linalg.inv(a),
    "inverse": lambda m, a: m.inverse(a),
    "Tensor.inverse": lambda m, a: a.inverse(),
    "linalg.inv_ex-check_errors": lambda m, a: m.linalg.inv_ex(a, check_errors=True),
    "linalg.matrix_power-1": lambda m, a: m.linalg.matrix_power(a, -1),
    "linalg.solve": lambda m, a: m.linalg.solve(a, _rhs(m, a)),
    "linalg.solve-left-false": lambda m, a: m.linalg.solve(a, _rhs(m, a)[..., None, :], left=False),
    "linalg.solve-broadcast-b": lambda m, a: m.linalg.solve(
        a, m.ones((2,) + a.shape[:-1] + (1,), dtype=a.dtype)
    ),
    "linalg.solve_ex-check_errors": lambda m, a: m.linalg.solve_ex(
        a, _rhs(m, a), check_errors=True
    ),
}
RAISE_PD = {
    "linalg.cholesky": lambda m, a: m.linalg.cholesky(a),
    "linalg.cholesky-upper": lambda m, a: m.linalg.cholesky(a, upper=True),
    "linalg.cholesky_ex-check_errors": lambda m, a: m.linalg.cholesky_ex(a, check_errors=True),
}
# ops that factor a singular matrix and report it (info), as torch's do
FACTOR = {
    "linalg.lu_factor_ex": lambda m, a: m.linalg.lu_factor_ex(a),
    "linalg.lu": lambda m, a: m.linalg.lu(a),
    "lu": lambda m, a: m.lu(a, get_infos=True),
    "linalg.det": lambda m, a: (m.linalg.det(a),),
    "linalg.slogdet": lambda m, a: m.linalg.slogdet(a),
    "linalg.solve_ex": lambda m, a: m.linalg.solve_ex(a, _rhs(m, a)),
    "linalg.inv_ex-info": lambda m, a: (m.linalg.inv_ex(a).info,),
}


def _error(fn, lib, a):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError) as info:
            fn(lib, lib.tensor(a, dtype=lib.float64))
    return info.value


def _same_error(torch, fn, a):
    want, got = _error(fn, torch, a), _error(fn, tg, a)
    # torch's LinAlgError where torch raises one, a plain RuntimeError where torch does
    if isinstance(want, torch.linalg.LinAlgError):
        assert isinstance(got, tg.linalg.LinAlgError), repr(got)
    else:
        assert type(got) is RuntimeError, repr(got)
    text = str(want).removeprefix("torch.")
    assert str(got) == text


@pytest.mark.parametrize("matrix", list(SINGULAR))
@pytest.mark.parametrize("op", list(RAISE))
def test_a_singular_matrix_raises_torchs_error(torch_mod, op, matrix):
    _same_error(torch_mod, RAISE[op], SINGULAR[matrix])


@pytest.mark.parametrize("matrix", list(NOT_PD))
@pytest.mark.parametrize("op", list(RAISE_PD))
def test_a_matrix_that_is_not_positive_definite_raises_torchs_error(torch_mod, op, matrix):
    _same_error(torch_mod, RAISE_PD[op], NOT_PD[matrix])


@pytest.mark.parametrize("matrix", list(SINGULAR))
@pytest.mark.parametrize("op", list(FACTOR))
def test_a_singular_matrix_is_factored_where_torch_factors_it(torch_mod, op, matrix):
    torch = torch_mod
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = FACTOR[op](torch, torch.tensor(SINGULAR[matrix], dtype=torch.float64))
    got = FACTOR[op](tg, tg.tensor(SINGULAR[matrix], dtype=tg.float64))
    assert len(got) == len(want)
    # An exactly singular matrix's last pivot is 0 in OpenBLAS's LU (slogdet: sign 0,
    # -inf) but can be a rounding residue in MKL's on AVX-512 (torch there: sign -1,
    # logabsdet -34.9, det -6.7e-16). Where torch's slogdet is at rounding level, ours must
    # be too; its sign and size are not compared.
    if op == "linalg.slogdet":
        keep = want[1].numpy() >= np.log(1e-12)
        np.testing.assert_array_equal(got[1].numpy() >= np.log(1e-12), keep)
    for g, w in zip(got, want):
        assert g.dtype == getattr(tg, str(w.dtype).removeprefix("torch."))
        g, w = g.numpy(), w.numpy()
        if op == "linalg.slogdet":
            g, w = g[keep], w[keep]
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
