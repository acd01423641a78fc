"""0-d and empty rows for test_edge_shapes, for the linear algebra of issue 10 (LU, Householder,
solves from a factor, matrix functions, lowrank)."""


def rows(E, X, SQ):
    """The rows, built with test_edge_shapes' row class and its empty square matrices."""
    lu_names = ("linalg.lu_factor", "lu_solve", "linalg.lu_solve", "lu_unpack")
    return [
        E(
            "linalg_lu_factor_ex",
            lambda m, a: m.linalg.lu_factor(a),
            X([()]),
            [*SQ, [(3, 0)], [(0, 2)]],
            names=("linalg.lu_factor",),
        ),
        E("lu", lambda m, a: m.lu(a), X([()]), SQ),
        E(
            "lu_unpack",
            lambda m, a: m.lu_unpack(*m.linalg.lu_factor(a)),
            X([()]),
            SQ,
            names=lu_names,
        ),
        E(
            "lu_solve",
            lambda m, a, b: m.lu_solve(b, *m.linalg.lu_factor(a)),
            X([(), ()]),
            [[(0, 0), (0, 2)], [(2, 2), (2, 0)], [(0, 2, 2), (0, 2, 1)]],
            names=lu_names,
        ),
        E("cholesky_inverse", lambda m, a: m.cholesky_inverse(a), X([()]), SQ),
        E(
            "cholesky_solve",
            lambda m, a, b: m.cholesky_solve(b, a),
            X([(), ()]),
            [[(0, 0), (0, 2)], [(0, 2, 2), (0, 2, 1)]],
        ),
        E(
            "triangular_solve",
            lambda m, a, b: m.triangular_solve(b, a).solution,
            X([(), ()]),
            [[(0, 0), (0, 2)], [(0, 2, 2), (0, 2, 1)]],
        ),
        E("matrix_exp", lambda m, a: m.matrix_exp(a), X([()]), SQ),
        E("logdet", lambda m, a: m.logdet(a), X([()]), SQ),
        E("geqrf", lambda m, a: m.geqrf(a), X([()]), [[(0, 0)], [(3, 0)], [(0, 3)], [(2, 0, 3)]]),
        E(
            "orgqr",
            lambda m, a, t: m.linalg.householder_product(a, t),
            X([(), ()]),
            [[(0, 0), (0,)], [(3, 0), (0,)], [(2, 0, 0), (2, 0)]],
            names=("linalg.householder_product",),
        ),
        E(
            "ormqr",
            lambda m, a, t, c: m.ormqr(a, t, c),
            X([(), (), ()]),
            [[(0, 0), (0,), (0, 2)], [(3, 0), (0,), (3, 2)]],
        ),
        E("svd_lowrank", lambda m, a: m.svd_lowrank(a, q=0), X([()]), [[(3, 0)], [(2, 0, 3)]]),
        E(
            "pca_lowrank",
            lambda m, a: m.pca_lowrank(a, q=0, center=False),
            X([()]),
            [[(3, 0)], [(0, 3)]],
        ),
    ]
