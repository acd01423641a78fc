"""Issue 10 (second half): ops outside the op table (no registry row: tg.linalg functions,
index-valued ops, namespaces) compared with PyTorch on values and gradients."""

import numpy as np
import pytest

import tapegrad as tg

R = np.random.default_rng(0)


def r(*shape):
    return R.standard_normal(shape)


def _ix(m, values):
    return m.tensor(values, dtype=m.int64)


CASES = {
    "cholesky_ex": (
        [r(3, 3)],
        lambda m, a: m.linalg.cholesky_ex(a @ a.mT + m.eye(3, dtype=a.dtype)),
    ),
    "inv_ex": ([r(3, 3)], lambda m, a: m.linalg.inv_ex(a)),
    "lu_solve": (
        [r(3, 3), r(3, 2)],
        lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a.detach()), b),
    ),
    "lu_factor": ([r(3, 3)], lambda m, a: m.linalg.lu_factor(a.detach())),
    "lu": ([r(3, 4)], lambda m, a: m.linalg.lu(a.detach())),
    "tensorinv": ([r(2, 3, 6)], lambda m, a: m.linalg.tensorinv(a, 2)),
    "tensorsolve": ([r(6, 2, 3), r(6)], lambda m, a, b: m.linalg.tensorsolve(a, b)),
    "vander": ([r(2, 3)], lambda m, a: m.linalg.vander(a, N=4)),
    "matrix_rank": ([r(4, 4)], lambda m, a: m.linalg.matrix_rank(a[:, :2] @ a[:2])),
    "lstsq": ([r(5, 3), r(5, 2)], lambda m, a, b: m.linalg.lstsq(a, b).solution),
    "multi_dot": ([r(4), r(4, 5), r(5)], lambda m, a, b, c: m.linalg.multi_dot([a, b, c])),
    "linalg.cross": ([r(2, 3), r(1, 3)], lambda m, a, b: m.linalg.cross(a, b)),
    "vecdot": ([r(3, 4), r(3, 4)], lambda m, a, b: m.linalg.vecdot(a, b, dim=0)),
    "linalg.diagonal": ([r(2, 3, 4)], lambda m, a: m.linalg.diagonal(a, offset=1)),
    "svd-full": ([r(3, 3)], lambda m, a: m.linalg.svd(a).S),
    "svd-method": ([r(4, 3)], lambda m, a: a.svd()[1]),
    "qr-method": ([r(4, 3)], lambda m, a: a.qr()[1].abs()),
    "tril_indices": ([r(1)], lambda m, a: m.tril_indices(3, 4, 1)),
    "triu_indices": ([r(1)], lambda m, a: m.triu_indices(4, 3, -1)),
    "logspace": ([r(1)], lambda m, a: m.logspace(-1, 2, 5, base=2.0)),
    "argsort": ([r(3, 4)], lambda m, a: a.argsort(1, descending=True)),
    "searchsorted": (
        [r(2, 5)],
        lambda m, a: m.searchsorted(a.sort(1).values, a[:, :2], right=True),
    ),
    "unique": (
        [r(1)],
        lambda m, a: m.unique(_ix(m, [3, 1, 3, 2]), return_inverse=True, return_counts=True),
    ),
    "unique-dim": (
        [r(1)],
        lambda m, a: m.unique(_ix(m, [[3, 1], [3, 1], [0, 2]]), dim=0, return_inverse=True),
    ),
    "unique_consecutive": (
        [r(1)],
        lambda m, a: m.unique_consecutive(
            _ix(m, [1, 1, 2, 2, 3, 1]), return_counts=True, return_inverse=True
        ),
    ),
    "histc": ([r(20)], lambda m, a: m.histc(a.detach(), bins=4, min=-1, max=1)),
    "bincount": ([r(3)], lambda m, a: m.bincount(_ix(m, [0, 3, 3]), weights=a.detach())),
    "bucketize": ([r(5)], lambda m, a: m.bucketize(a, m.tensor([-1.0, 0.0, 1.0], dtype=a.dtype))),
    "count_nonzero": ([r(3, 4)], lambda m, a: (a > 0).count_nonzero(dim=1)),
    "all-any": ([r(3, 4)], lambda m, a: (m.all(a > -1, dim=0), (a > 1).any(1, keepdim=True))),
    "nonzero-tuple": ([r(3, 4)], lambda m, a: m.nonzero(a > 0, as_tuple=True)),
    "max-axis": ([r(3, 4)], lambda m, a: a.max(axis=1, keepdims=True)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name, torch_mod):
    arrays, fn = CASES[name]
    res = []
    for m in (tg, torch_mod):
        xs = [m.tensor(a, dtype=m.float64, requires_grad=True) for a in arrays]
        out = fn(m, *xs)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        diff = [o for o in outs if o.requires_grad]
        grads = (
            m.autograd.grad(sum((o * o).sum() for o in diff), xs, allow_unused=True) if diff else []
        )
        res.append((outs, grads))
    (ours, gours), (theirs, gtheirs) = res
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        want = t.detach().numpy()
        assert o.shape == want.shape and o.dtype == want.dtype, (
            o.shape,
            o.dtype,
            want.dtype,
        )
        np.testing.assert_allclose(o.detach().numpy(), want, rtol=1e-7, atol=1e-9)
    for g, w in zip(gours, gtheirs):
        if w is None:
            assert g is None or not g.numpy().any()
        else:
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-7, atol=1e-9)


MORE = {
    "pinverse": ([r(4, 3)], lambda m, a: m.pinverse(a)),
    "pinv-hermitian": ([r(3, 3)], lambda m, a: m.linalg.pinv(a + a.mT, hermitian=True)),
    "lu_factor-wide": ([r(3, 5)], lambda m, a: m.linalg.lu_factor(a.detach())),
    "lu_factor-tall": ([r(5, 3)], lambda m, a: m.linalg.lu_factor(a.detach())),
    "take_along_dim-negative": (
        [r(3, 4)],
        lambda m, a: m.take_along_dim(a, _ix(m, [[-1], [0], [-4]]), 1),
    ),
    "masked_scatter-broadcast": (
        [r(4), r(16)],
        lambda m, a, s: a.masked_scatter(m.tensor([[True], [False], [True], [True]]) & (a > 0), s),
    ),
    "div-floor-grad": ([r(3), r(3)], lambda m, a, b: m.div(a, b, rounding_mode="floor") + a),
}


@pytest.mark.parametrize("name", sorted(MORE))
def test_more_matches_torch(name, torch_mod):
    CASES[name] = MORE[name]
    test_matches_torch(name, torch_mod)
