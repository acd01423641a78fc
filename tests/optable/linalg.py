"""Table rows: matmul in all its promotion and broadcasting forms."""

import numpy as np

from . import OpCase

CASES = [
    OpCase("matmul", lambda m, a, b: a @ b, [(3, 4), (4, 2)], name="mm"),
    OpCase("matmul", lambda m, a, b: a @ b, [(4,), (4, 2)], name="vec-mat"),
    OpCase("matmul", lambda m, a, b: a @ b, [(3, 4), (4,)], name="mat-vec"),
    OpCase("matmul", lambda m, a, b: a @ b, [(4,), (4,)], name="dot"),
    OpCase("matmul", lambda m, a, b: m.matmul(a, b), [(2, 3, 4), (4, 5)], name="batch-mat"),
    OpCase("matmul", lambda m, a, b: a @ b, [(2, 1, 3, 4), (5, 4, 2)], name="broadcast-batch"),
    OpCase("matmul", lambda m, a, b: a @ b, [(4,), (2, 4, 3)], name="vec-batch"),
    OpCase("matmul", lambda m, a, b: a @ b, [(2, 3, 4), (4,)], name="batch-vec"),
]


# -- einsum, outer, tg.linalg (issue 3) ---------------------------------------------------


def _well_conditioned(*shapes, boost=2.5):
    """Square matrices (last shape entry n×n) with a boosted diagonal; other inputs uniform."""

    def make(rng):
        out = []
        for k, shape in enumerate(shapes):
            x = rng.uniform(-1, 1, size=shape)
            if k == 0:
                x = x + boost * np.eye(shape[-1])
            out.append(x)
        return out

    return make


def _spd(m, a):
    """A symmetric positive-definite matrix (batch) built from any ``a``: a aᵀ + n·I."""
    n = a.shape[-1]
    return a @ a.mT + m.eye(n, dtype=m.float64) * n


CASES += [
    OpCase("einsum", lambda m, a, b: m.einsum("ij,jk->ik", a, b), [(2, 3), (3, 4)], name="mm"),
    OpCase("einsum", lambda m, a: m.einsum("ii->", a), [(3, 3)], name="trace"),
    OpCase("einsum", lambda m, a: m.einsum("iij->ji", a), [(3, 3, 2)], name="diagonal"),
    OpCase(
        "einsum",
        lambda m, a, b: m.einsum("...ij,...jk", a, b),
        [(2, 1, 2, 3), (4, 3, 2)],
        name="ellipsis-broadcast",
    ),
    OpCase(
        "einsum", lambda m, a, b: m.einsum("ab,b->a", a, b), [(2, 1), (3,)], name="size1-broadcast"
    ),
    OpCase("einsum", lambda m, a: m.einsum("...ij->j", a), [(2, 3, 4)], name="sum-ellipsis"),
    OpCase(
        "einsum",
        lambda m, a, b, c: m.einsum("bi,bij,bj->b", a, b, c),
        [(2, 3), (2, 3, 4), (2, 4)],
        name="three",
    ),
    OpCase("einsum", lambda m, a, b: m.einsum("i,j", a, b), [(2,), (3,)], name="implicit-outer"),
    OpCase("einsum", lambda m, a: m.einsum("i,i->", a, a), [(3,)], name="same-operand-twice"),
    OpCase("einsum", lambda m, a, b: m.einsum("ij,j->i", a, b), [(0, 3), (3,)], name="empty"),
    OpCase("outer", lambda m, a, b: m.outer(a, b), [(3,), (4,)]),
    OpCase("outer", lambda m, a, b: a.outer(b), [(0,), (2,)], name="empty"),
    OpCase("inverse", lambda m, a: m.linalg.inv(a), [(3, 3)], inputs=_well_conditioned((3, 3))),
    OpCase(
        "inverse",
        lambda m, a: a.inverse(),
        [(2, 2, 2)],
        name="batch",
        inputs=_well_conditioned((2, 2, 2)),
    ),
    OpCase("det", lambda m, a: m.linalg.det(a), [(3, 3)], inputs=_well_conditioned((3, 3))),
    OpCase(
        "det", lambda m, a: a.det(), [(2, 2, 2)], name="batch", inputs=_well_conditioned((2, 2, 2))
    ),
    OpCase(
        "slogdet",
        lambda m, a: m.linalg.slogdet(a).logabsdet,
        [(3, 3)],
        inputs=_well_conditioned((3, 3)),
    ),
    OpCase(
        "slogdet",
        lambda m, a: m.linalg.slogdet(-a),
        [(2, 3, 3)],
        name="tuple-batch",
        inputs=_well_conditioned((2, 3, 3)),
    ),
    OpCase(
        "solve",
        lambda m, a, b: m.linalg.solve(a, b),
        [(3, 3), (3, 2)],
        inputs=_well_conditioned((3, 3), (3, 2)),
    ),
    OpCase(
        "solve",
        lambda m, a, b: m.linalg.solve(a, b),
        [(3, 3), (3,)],
        name="vector",
        inputs=_well_conditioned((3, 3), (3,)),
    ),
    OpCase(
        "solve",
        lambda m, a, b: m.linalg.solve(a, b),
        [(2, 3, 3), (2, 3)],
        name="batch-vectors",
        inputs=_well_conditioned((2, 3, 3), (2, 3)),
    ),
    OpCase(
        "solve",
        lambda m, a, b: m.linalg.solve(a, b),
        [(2, 1, 2, 2), (3, 2, 1)],
        name="broadcast",
        inputs=_well_conditioned((2, 1, 2, 2), (3, 2, 1)),
    ),
    OpCase(
        "solve",
        lambda m, a, b: m.linalg.solve(a, b, left=False),
        [(3, 3), (2, 3)],
        name="right",
        inputs=_well_conditioned((3, 3), (2, 3)),
    ),
    OpCase(
        "solve_triangular",
        lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True),
        [(3, 3), (3, 2)],
        inputs=_well_conditioned((3, 3), (3, 2)),
    ),
    OpCase(
        "solve_triangular",
        lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False, unitriangular=True),
        [(2, 3, 3), (3, 2)],
        name="lower-unit",
        inputs=_well_conditioned((2, 3, 3), (3, 2)),
    ),
    OpCase(
        "solve_triangular",
        lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False, left=False),
        [(3, 3), (2, 3)],
        name="right",
        inputs=_well_conditioned((3, 3), (2, 3)),
    ),
    OpCase("cholesky", lambda m, a: m.linalg.cholesky(_spd(m, a)), [(3, 3)]),
    OpCase(
        "cholesky",
        lambda m, a: m.linalg.cholesky(_spd(m, a), upper=True),
        [(2, 3, 3)],
        name="upper-batch",
    ),
    OpCase("vector_norm", lambda m, x: m.linalg.vector_norm(x), [(3, 4)]),
    OpCase(
        "vector_norm",
        lambda m, x: m.linalg.vector_norm(x, ord=float("inf"), dim=(0, 2)),
        [(2, 3, 2)],
        name="inf",
    ),
    OpCase(
        "vector_norm",
        lambda m, x: m.linalg.vector_norm(x, 1.5, -1, keepdim=True),
        [(3, 4)],
        name="p1.5",
    ),
    OpCase(
        "vector_norm", lambda m, x: m.linalg.vector_norm(x, 0, 1) * x.sum(), [(3, 4)], name="p0"
    ),
    OpCase("matrix_norm", lambda m, x: m.linalg.matrix_norm(x), [(2, 3, 4)]),
    OpCase("matrix_norm", lambda m, x: m.linalg.matrix_norm(x, ord=1), [(3, 4)], name="1"),
    OpCase(
        "matrix_norm",
        lambda m, x: m.linalg.matrix_norm(x, ord=float("inf"), keepdim=True),
        [(2, 3, 4)],
        name="inf",
    ),
    OpCase(
        "matrix_norm",
        lambda m, x: m.linalg.matrix_norm(x, -1, dim=(0, 2)),
        [(3, 2, 4)],
        name="-1-dims",
    ),
    OpCase(
        "matrix_norm", lambda m, x: m.linalg.matrix_norm(x, float("-inf")), [(3, 4)], name="-inf"
    ),
    OpCase("linalg_norm", lambda m, x: m.linalg.norm(x), [(2, 3, 2)]),
    OpCase("linalg_norm", lambda m, x: m.linalg.norm(x, 3, dim=1), [(3, 4)], name="vector-dim"),
    OpCase("linalg_norm", lambda m, x: m.linalg.norm(x, 1), [(3, 4)], name="matrix"),
    OpCase("linalg_norm", lambda m, x: m.linalg.norm(x, float("inf")), [(4,)], name="vector"),
    OpCase("linalg_norm", lambda m, x: m.linalg.norm(x, dim=(0, 1)), [(3, 4)], name="fro-dims"),
]

# -- 0-d and empty inputs (tests/test_edge_shapes.py checks every op; these show the shapes) --
CASES += [
    OpCase("matmul", lambda m, a, b: a @ b, [(2, 0), (0, 3)], name="zero-inner"),
    OpCase("matmul", lambda m, a, b: a @ b, [(0, 2, 3), (3, 4)], name="empty-batch"),
    OpCase("einsum", lambda m, a, b: m.einsum(",->", a, b), [(), ()], name="0d"),
    OpCase("inverse", lambda m, a: m.linalg.inv(a), [(0, 0)], name="empty"),
    OpCase("det", lambda m, a: m.linalg.det(a), [(2, 0, 0)], name="empty"),
    OpCase("solve", lambda m, a, b: m.linalg.solve(a, b), [(0, 0), (0, 2)], name="empty"),
    OpCase("cholesky", lambda m, a: m.linalg.cholesky(a), [(0, 3, 3)], name="empty-batch"),
    OpCase("vector_norm", lambda m, x: m.linalg.vector_norm(x), [()], name="0d"),
    OpCase("matrix_norm", lambda m, x: m.linalg.matrix_norm(x, 1), [(0, 3)], name="empty"),
]

# -- sparse @ dense (issue 17): gradients to the sparse values and to the dense operand ----
_SP_IDX = [[0, 2, 1, 2, 0], [1, 0, 3, 0, 3]]  # (2, 0) repeats: an uncoalesced tensor


def _spmm(m, v, d):
    return m.sparse.mm(m.sparse_coo_tensor(_SP_IDX, v, (3, 4), check_invariants=True), d)


CASES += [
    OpCase("spmm", _spmm, [(5,), (4, 2)]),
    OpCase(
        "spmm",
        lambda m, v, d: m.spmm(m.sparse_coo_tensor(_SP_IDX, v, (3, 4), check_invariants=True), d),
        [(5,), (4, 3)],
        name="spmm",
    ),
    OpCase(
        "spmm",
        lambda m, d: (
            m.sparse_coo_tensor(
                _SP_IDX, [1.0, 2.0, -1.0, 0.5, 3.0], (3, 4), dtype=m.float64, check_invariants=True
            )
            @ d
        ),
        [(4, 2)],
        name="dense-only",
    ),
    OpCase(
        "spmm",
        lambda m, v, d: _spmm(m, v * v, d.transpose(0, 1)).transpose(0, 1),
        [(5,), (2, 4)],
        name="composed",
    ),
    OpCase(
        "spmm",
        lambda m, v, d: m.sparse.mm(
            m.sparse_coo_tensor(_SP_IDX, v, (3, 4), check_invariants=True).t(), d
        ),
        [(5,), (3, 2)],
        name="transposed",
    ),
]
