"""Table rows: LU, Cholesky- and triangular-based solves, matrix functions, Householder, lowrank
(issue 10, linear algebra)."""

import numpy as np

from . import OpCase


def _boosted(*shapes, boost=2.5):
    """Inputs whose first is a (batch of) matrix with ``boost`` added on its main diagonal:
    well conditioned, and LU's pivots do not change under gradcheck's small steps."""

    def make(rng):
        out = []
        for k, shape in enumerate(shapes):
            x = rng.uniform(-1, 1, size=shape)
            if k == 0:
                x = x + boost * np.eye(shape[-2], shape[-1])
            out.append(x)
        return out

    return make


def _lu_solve(left, adjoint):
    def fn(m, a, b):
        LU, piv = m.linalg.lu_factor(a)
        return m.linalg.lu_solve(LU, piv, b, left=left, adjoint=adjoint)

    return fn


CASES = [
    OpCase("linalg_lu_factor_ex", lambda m, a: m.linalg.lu_factor(a), [(4, 4)]),
    OpCase("linalg_lu_factor_ex", lambda m, a: m.linalg.lu_factor_ex(a), [(5, 3)], name="tall"),
    OpCase("linalg_lu_factor_ex", lambda m, a: m.linalg.lu_factor(a), [(3, 5)], name="wide"),
    OpCase("linalg_lu_factor_ex", lambda m, a: m.linalg.lu(a), [(2, 4, 4)], name="lu-batch"),
    OpCase("linalg_lu_factor_ex", lambda m, a: m.linalg.lu(a), [(5, 3)], name="lu-tall"),
    OpCase("linalg_lu_factor_ex", lambda m, a: m.linalg.lu(a), [(2, 3, 5)], name="lu-wide"),
    OpCase("lu", lambda m, a: m.lu(a), [(4, 4)]),
    OpCase("lu", lambda m, a: a.lu(get_infos=True), [(2, 3, 4)], name="infos"),
    OpCase("lu_unpack", lambda m, a: m.lu_unpack(*m.linalg.lu_factor(a)), [(4, 3)]),
    OpCase("lu_unpack", lambda m, a: m.lu_unpack(*m.lu(a), True, False)[1:], [(3, 4)], name="data"),
    OpCase("lu_solve", _lu_solve(True, False), [(3, 3), (3, 2)], inputs=_boosted((3, 3), (3, 2))),
    OpCase(
        "lu_solve",
        _lu_solve(True, True),
        [(2, 3, 3), (3, 2)],
        name="adjoint-batch",
        inputs=_boosted((2, 3, 3), (3, 2)),
    ),
    OpCase(
        "lu_solve",
        _lu_solve(False, False),
        [(3, 3), (4, 3)],
        name="right",
        inputs=_boosted((3, 3), (4, 3)),
    ),
    OpCase(
        "lu_solve",
        _lu_solve(False, True),
        [(3, 3), (2, 4, 3)],
        name="right-adjoint-broadcast",
        inputs=_boosted((3, 3), (2, 4, 3)),
    ),
    OpCase(
        "lu_solve",
        lambda m, a, b: m.lu_solve(b, *m.lu(a)),
        [(3, 3), (3, 2)],
        name="torch-lu-solve",
        inputs=_boosted((3, 3), (3, 2)),
    ),
]

# -- solves from a factor, matrix functions. The factors are made triangular first, as
# PyTorch's gradcheck_wrapper_triangular_input does: the gradients of cholesky_inverse/_solve
# treat the factor as a full matrix, as PyTorch's (tests/test_linalg_l.py compares those). --
CASES += [
    OpCase(
        "cholesky_inverse",
        lambda m, a: m.cholesky_inverse(a.tril()),
        [(3, 3)],
        inputs=_boosted((3, 3)),
    ),
    OpCase(
        "cholesky_inverse",
        lambda m, a: a.triu().cholesky_inverse(upper=True),
        [(2, 3, 3)],
        name="upper-batch",
        inputs=_boosted((2, 3, 3)),
    ),
    OpCase(
        "cholesky_solve",
        lambda m, L, b: m.cholesky_solve(b, L.tril()),
        [(3, 3), (3, 2)],
        inputs=_boosted((3, 3), (3, 2)),
    ),
    OpCase(
        "cholesky_solve",
        lambda m, L, b: b.cholesky_solve(L.triu(), upper=True),
        [(3, 3), (2, 3, 2)],
        name="upper-broadcast",
        inputs=_boosted((3, 3), (2, 3, 2)),
    ),
    OpCase(
        "triangular_solve",
        lambda m, a, b: m.triangular_solve(b, a),
        [(3, 3), (3, 2)],
        inputs=_boosted((3, 3), (3, 2)),
    ),
    OpCase(
        "triangular_solve",
        lambda m, a, b: b.triangular_solve(a, upper=False, transpose=True, unitriangular=True),
        [(2, 3, 3), (3, 2)],
        name="lower-transpose-unit",
        inputs=_boosted((2, 3, 3), (3, 2)),
    ),
    OpCase("matrix_exp", lambda m, a: m.matrix_exp(a), [(3, 3)]),
    OpCase("matrix_exp", lambda m, a: m.linalg.matrix_exp(a * 2), [(2, 3, 3)], name="batch-big"),
    OpCase("logdet", lambda m, a: m.logdet(a), [(3, 3)], inputs=_boosted((3, 3))),
    OpCase(
        "logdet", lambda m, a: a.logdet(), [(2, 3, 3)], name="batch", inputs=_boosted((2, 3, 3))
    ),
    OpCase("linalg_svd", lambda m, a: m.linalg.cond(a), [(2, 3, 3)], name="cond"),
    OpCase("linalg_svd", lambda m, a: m.linalg.cond(a, -2), [(4, 3)], name="cond-2-tall"),
    OpCase(
        "inverse",
        lambda m, a: m.linalg.cond(a, "nuc"),
        [(2, 3, 3)],
        name="cond-nuc",
        inputs=_boosted((2, 3, 3)),
    ),
    OpCase(
        "inverse",
        lambda m, a: m.linalg.cond(a, float("inf")),
        [(3, 3)],
        name="cond-inf",
        inputs=_boosted((3, 3)),
        torch=False,  # torch 2.13's backward of cond(A, 1 / inf / 'fro') raises (an in-place
        # modification of inv_ex's output); tests/test_linalg_l.py compares the values
    ),
    OpCase(
        "solve",
        lambda m, a, b: m.linalg.solve_ex(a, b),
        [(2, 3, 3), (2, 3)],
        name="solve_ex",
        inputs=_boosted((2, 3, 3), (2, 3)),
    ),
]

# -- lstsq: the outputs of each driver; residuals are differentiable (tall A, not gelsy) --
CASES += [
    OpCase(
        "linalg_svd",
        lambda m, a, b: m.linalg.lstsq(a, b, driver="gels")[:2],
        [(4, 3), (4, 2)],
        name="lstsq-gels-residuals",
    ),
    OpCase(
        "linalg_svd",
        lambda m, a, b: m.linalg.lstsq(a, b, driver="gelsd")[:2],
        [(2, 4, 3), (2, 4, 2)],
        name="lstsq-gelsd-batch",
    ),
    OpCase(
        "linalg_svd",
        lambda m, a, b: m.linalg.lstsq(a, b, driver="gelss").solution,
        [(2, 3), (2, 2)],
        name="lstsq-gelss-wide",
    ),
]

# -- Householder products (any A and tau: the reflectors need no conditioning) --
CASES += [
    OpCase("orgqr", lambda m, a, t: m.linalg.householder_product(a, t), [(4, 3), (3,)]),
    OpCase("orgqr", lambda m, a, t: a.orgqr(t), [(2, 4, 3), (2, 2)], name="batch-short-tau"),
    OpCase("ormqr", lambda m, a, t, c: m.ormqr(a, t, c), [(4, 3), (3,), (4, 2)]),
    OpCase(
        "ormqr",
        lambda m, a, t, c: a.ormqr(t, c, left=False, transpose=True),
        [(2, 4, 4), (2, 4), (2, 3, 4)],
        name="right-transpose-batch",
    ),
]


# -- randomized low rank: A = a bᵀ of rank 2 and q = 2, so the result is exact and U Vᵀ, S do
# not depend on the random draw (nor on the singular vectors' signs), as op_db's samples --
def _lowrank(name, **kw):
    def fn(m, a, b):
        m.manual_seed(0)
        U, S, V = getattr(m, name)(a @ b.mT, q=2, **kw)
        return U @ V.mT, S

    return fn


CASES += [
    OpCase("svd_lowrank", _lowrank("svd_lowrank"), [(4, 2), (3, 2)]),
    OpCase("svd_lowrank", _lowrank("svd_lowrank", niter=1), [(2, 3, 2), (2, 5, 2)], name="wide"),
    OpCase("pca_lowrank", _lowrank("pca_lowrank", center=False), [(4, 2), (3, 2)]),
    OpCase("pca_lowrank", _lowrank("pca_lowrank"), [(5, 2), (4, 2)], name="center"),
]
