"""Issue 10, linear algebra: LU, LDL, Householder, solves from a factor, matrix functions,
lstsq's drivers and the lowrank SVD against PyTorch, including batches, singular inputs and
the errors (gradcheck/gradgradcheck of every op are rows of tests/optable/linalg_l.py)."""

import numpy as np
import pytest

import tapegrad as tg

F64 = np.float64


def _pair(torch, array, grad=True):
    return (
        torch.tensor(array, dtype=torch.float64, requires_grad=grad),
        tg.tensor(array, dtype=tg.float64, requires_grad=grad),
    )


def _close(ours, theirs, atol=1e-10):
    assert tuple(ours.shape) == tuple(theirs.shape)
    want = theirs.detach().numpy()
    assert ours._data.dtype == want.dtype, (ours._data.dtype, want.dtype)
    np.testing.assert_allclose(ours._data, want, rtol=1e-8, atol=atol)


def _grads(torch, outs_t, outs_g, leaves_t, leaves_g, seed=0):
    """Input gradients of the same random weighting of both libraries' float outputs."""
    rng = np.random.default_rng(seed)
    lt, lg = 0, 0
    for t, g in zip(outs_t, outs_g):
        if t.dtype.is_floating_point and t.requires_grad:
            w = rng.uniform(-1, 1, tuple(t.shape))
            lt = lt + (t * torch.tensor(w)).sum()
            lg = lg + (g * tg.tensor(w)).sum()
    want = torch.autograd.grad(lt, leaves_t, create_graph=True)
    got = tg.autograd.grad(lg, leaves_g, create_graph=True)
    for a, b in zip(got, want):
        _close(a, b, atol=1e-9)
    return got, want


# -- LU ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 5), (6, 4), (2, 3, 6)])
def test_lu_factor_and_lu_values_gradients_and_second_order_match_torch(torch_mod, shape):
    torch = torch_mod
    a = np.random.default_rng(1).uniform(-1, 1, shape)
    at, ag = _pair(torch, a)
    want, got = torch.linalg.lu_factor_ex(at), tg.linalg.lu_factor_ex(ag)
    for o, t in zip(got, want):
        _close(o, t)
    assert got.pivots.dtype == tg.int32 and got.info.dtype == tg.int32
    _grads(torch, want, got, [at], [ag])
    want, got = torch.linalg.lu(at), tg.linalg.lu(ag)
    for o, t in zip(got, want):
        _close(o, t)
    assert not got.P.requires_grad and got.L.requires_grad and got.U.requires_grad
    (gg,), (gt,) = _grads(torch, want, got, [at], [ag], seed=1)
    # second order: the gradient of the gradient (its sum of squares)
    (want2,) = torch.autograd.grad((gt**2).sum(), at)
    (got2,) = tg.autograd.grad((gg**2).sum(), [ag])
    _close(got2, want2, atol=1e-8)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve_left_and_adjoint_broadcast_match_torch(torch_mod, left, adjoint):
    torch = torch_mod
    rng = np.random.default_rng(2)
    a = rng.uniform(-1, 1, (2, 1, 3, 3)) + 2 * np.eye(3)
    b = rng.uniform(-1, 1, (3, 3, 4) if left else (3, 4, 3))
    at, ag = _pair(torch, a)
    bt, bg = _pair(torch, b)
    LUt, pt = torch.linalg.lu_factor(at)
    LUg, pg = tg.linalg.lu_factor(ag)
    want = torch.linalg.lu_solve(LUt, pt, bt, left=left, adjoint=adjoint)
    got = tg.linalg.lu_solve(LUg, pg, bg, left=left, adjoint=adjoint)
    _close(got, want)
    _grads(torch, [want], [got], [at, bt], [ag, bg])


def test_lu_unpack_parts_and_torch_lu_match_torch(torch_mod):
    torch = torch_mod
    at, ag = _pair(torch, np.random.default_rng(3).uniform(-1, 1, (2, 5, 3)))
    LUt, pt, it = torch.lu(at, get_infos=True)
    LUg, pg, ig = tg.lu(ag, get_infos=True)
    for o, t in zip((LUg, pg, ig), (LUt, pt, it)):
        _close(o, t)
    for flags in [(True, True), (True, False), (False, True)]:
        want, got = torch.lu_unpack(LUt, pt, *flags), tg.lu_unpack(LUg, pg, *flags)
        for o, t in zip(got, want):
            _close(o, t)
    bt, bg = _pair(torch, np.random.default_rng(4).uniform(-1, 1, (2, 5, 2)))
    sq_t, sq_g = at[..., :3, :], ag[..., :3, :]
    want = torch.lu_solve(bt[..., :3, :], *torch.lu(sq_t))
    got = tg.lu_solve(bg[..., :3, :], *tg.lu(sq_g))
    _close(got, want)
    _grads(torch, [want], [got], [at, bt], [ag, bg])


def test_singular_matrices_factor_with_info_and_raise_where_torch_raises(torch_mod):
    torch = torch_mod
    a = np.array([[[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], np.eye(3)])
    at, ag = _pair(torch, a, grad=False)
    for o, t in zip(tg.linalg.lu_factor_ex(ag), torch.linalg.lu_factor_ex(at)):
        _close(o, t)
    assert tg.linalg.lu_factor_ex(ag).info.tolist() == [3, 0]
    assert issubclass(tg.linalg.LinAlgError, RuntimeError)
    with pytest.raises(RuntimeError, match="lu_factor_ex"):  # torch's: not a LinAlgError
        tg.linalg.lu_factor_ex(ag, check_errors=True)
    b = np.ones((2, 3))
    want = torch.linalg.solve_ex(at, torch.tensor(b))
    got = tg.linalg.solve_ex(ag, tg.tensor(b))
    _close(got.info, want.info)
    _close(got.result, want.result)  # LAPACK's NaN and infinities for the singular one
    with pytest.raises(tg.linalg.LinAlgError, match="singular"):
        tg.linalg.solve_ex(ag, tg.tensor(b), check_errors=True)
    with pytest.raises(RuntimeError, match="singular"):
        tg.linalg.ldl_factor(tg.zeros(3, 3, dtype=tg.float64))
    for p in ("fro", 1, -1, float("inf"), float("-inf")):  # inf where singular
        _close(tg.linalg.cond(ag, p), torch.linalg.cond(at, p))
    for p in (None, "nuc"):  # from the singular values: σ_min is rounding noise over 0
        assert tg.linalg.cond(ag, p)[0].item() > 1e15


def test_bad_shapes_raise_torch_like_errors():
    a = tg.randn(3, 3, dtype=tg.float64)
    LU, piv = tg.linalg.lu_factor(a)
    with pytest.raises(RuntimeError, match=r"lu_solve: incompatible shapes LU \[3, 3\]"):
        tg.linalg.lu_solve(LU, piv, tg.randn(4, 2, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="without pivoting"):
        tg.linalg.lu_factor(a, pivot=False)
    with pytest.raises(RuntimeError, match="tau.shape"):
        tg.ormqr(a, tg.randn(2, dtype=tg.float64), tg.randn(3, 2, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="greater than or equal"):
        tg.linalg.householder_product(tg.randn(2, 3), tg.randn(2))
    with pytest.raises(RuntimeError, match="driver"):
        tg.linalg.lstsq(a, a, driver="gelsx")
    with pytest.raises(RuntimeError, match="N must be greater than 1"):
        tg.linalg.vander(tg.tensor([1.0, 2.0]), N=1)


# -- solves from a factor, matrix functions ---------------------------------------------------


def test_cholesky_inverse_and_solve_gradients_treat_the_factor_as_full_as_torch(torch_mod):
    """The forward reads one triangle; PyTorch's gradients use the full input (so the other
    triangle gets one too): tapegrad gives torch's, on a non-triangular input."""
    torch = torch_mod
    rng = np.random.default_rng(5)
    for upper in (False, True):
        at, ag = _pair(torch, rng.uniform(-1, 1, (2, 3, 3)) + 2 * np.eye(3))
        bt, bg = _pair(torch, rng.uniform(-1, 1, (3, 2)))
        want = torch.cholesky_inverse(at, upper=upper)
        got = tg.cholesky_inverse(ag, upper=upper)
        _close(got, want)
        _grads(torch, [want], [got], [at], [ag])
        want = torch.cholesky_solve(bt, at, upper=upper)
        got = tg.cholesky_solve(bg, ag, upper=upper)
        _close(got, want)
        _grads(torch, [want], [got], [at, bt], [ag, bg])


def test_triangular_solve_returns_a_differentiable_copy_as_torch(torch_mod):
    torch = torch_mod
    rng = np.random.default_rng(6)
    at, ag = _pair(torch, rng.uniform(-1, 1, (2, 3, 3)) + 2 * np.eye(3))
    bt, bg = _pair(torch, rng.uniform(-1, 1, (3, 2)))
    for kw in [{}, {"upper": False, "transpose": True}, {"unitriangular": True}]:
        want, got = torch.triangular_solve(bt, at, **kw), tg.triangular_solve(bg, ag, **kw)
        for o, t in zip(got, want):
            _close(o, t)
        _grads(torch, want, got, [at, bt], [ag, bg])


def test_matrix_exp_logdet_cond_match_torch(torch_mod):
    torch = torch_mod
    rng = np.random.default_rng(7)
    at, ag = _pair(torch, rng.uniform(-2, 2, (2, 4, 4)))
    want, got = torch.matrix_exp(at), tg.matrix_exp(ag)
    _close(got, want, atol=1e-9)
    (gg,), (gt,) = _grads(torch, [want], [got], [at], [ag])
    (w2,) = torch.autograd.grad((gt**2).sum(), at)
    (g2,) = tg.autograd.grad((gg**2).sum(), [ag])
    _close(g2, w2, atol=1e-8)
    # logdet: NaN for a negative determinant (with a zero gradient), -inf for a zero one
    a = np.stack([np.diag([2.0, -1.0, 1.0]), np.diag([2.0, 3.0, 1.0])])
    at, ag = _pair(torch, a)
    want, got = torch.logdet(at), tg.logdet(ag)
    _close(got, want)
    _grads(torch, [want[1:]], [got[1:]], [at], [ag])
    assert tg.logdet(tg.zeros(2, 2, dtype=tg.float64)).item() == -np.inf
    at, ag = _pair(torch, rng.uniform(-1, 1, (2, 3, 3)) + np.eye(3))
    for p in (None, 2, -2, "fro", "nuc", 1, -1, float("inf"), float("-inf")):
        _close(tg.linalg.cond(ag, p), torch.linalg.cond(at, p))
    want, got = torch.linalg.cond(at[:, :, :2]), tg.linalg.cond(ag[:, :, :2])  # tall
    _close(got, want)
    _grads(torch, [want], [got], [at], [ag])


# -- Householder, LDL -----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (3, 0)])
def test_geqrf_matches_torch_and_has_no_derivative(torch_mod, shape):
    torch = torch_mod
    at, ag = _pair(torch, np.random.default_rng(8).uniform(-1, 1, shape))
    want, got = torch.geqrf(at), tg.geqrf(ag)
    for o, t in zip(got, want):
        _close(o, t)
    assert got.a.requires_grad
    with pytest.raises(RuntimeError, match="derivative for 'geqrf' is not implemented"):
        got.a.sum().backward()
    if shape[-2] >= shape[-1]:  # the reflectors give back Q: Q R = A
        n = shape[-1]
        Q = tg.linalg.householder_product(got.a.detach(), got.tau.detach())
        R = got.a.detach().triu()[..., :n, :]
        np.testing.assert_allclose((Q @ R)._data, ag._data, atol=1e-12)
        c = tg.eye(shape[-2], dtype=tg.float64)
        full = tg.ormqr(got.a.detach(), got.tau.detach(), c)
        np.testing.assert_allclose(full._data[..., :, :n], Q._data, atol=1e-12)


def test_ldl_factor_and_solve_match_torch_batched(torch_mod):
    torch = torch_mod
    a = np.random.default_rng(9).uniform(-1, 1, (2, 5, 5))
    a = a + np.swapaxes(a, -1, -2)  # symmetric indefinite: 2x2 pivots appear
    at, ag = _pair(torch, a, grad=False)
    want, got = torch.linalg.ldl_factor_ex(at), tg.linalg.ldl_factor_ex(ag)
    for o, t in zip(got, want):
        _close(o, t)
    b = np.random.default_rng(10).uniform(-1, 1, (2, 5, 2))
    _close(
        tg.linalg.ldl_solve(got.LD, got.pivots, tg.tensor(b)),
        torch.linalg.ldl_solve(want.LD, want.pivots, torch.tensor(b)),
    )
    # broadcast batch dims (torch 2.13 crashes on this one: compared with NumPy's solve)
    b = np.random.default_rng(11).uniform(-1, 1, (3, 1, 5, 2))
    got = tg.linalg.ldl_solve(got.LD, got.pivots, tg.tensor(b))
    np.testing.assert_allclose(got._data, np.linalg.solve(a, b), atol=1e-10)


# -- lstsq, svd, matrix_rank, vander ------------------------------------------------------------


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 3), (2, 4, 3)])
def test_lstsq_outputs_of_each_driver_match_torch(torch_mod, driver, shape):
    torch = torch_mod
    rng = np.random.default_rng(11)
    at, ag = _pair(torch, rng.uniform(-1, 1, shape))
    bt, bg = _pair(torch, rng.uniform(-1, 1, shape[:-1] + (2,)))
    want = torch.linalg.lstsq(at, bt, driver=driver)
    got = tg.linalg.lstsq(ag, bg, driver=driver)
    for o, t in zip(got, want):
        _close(o, t, atol=1e-9)
    _grads(torch, want[:2], got[:2], [at, bt], [ag, bg])


def test_lstsq_rank_deficient_reports_the_rank_and_no_residuals(torch_mod):
    torch = torch_mod
    a = np.random.default_rng(12).uniform(-1, 1, (5, 3))
    a[:, 2] = a[:, 1]
    at, ag = _pair(torch, a, grad=False)
    b = np.ones((5, 2))
    for driver in ("gelsy", "gelsd", "gelss"):
        want = torch.linalg.lstsq(at, torch.tensor(b), driver=driver)
        got = tg.linalg.lstsq(ag, tg.tensor(b), driver=driver)
        assert got.rank.item() == want.rank.item() == 2
        assert tuple(got.residuals.shape) == tuple(want.residuals.shape) == (0,)
        _close(got.solution, want.solution, atol=1e-9)  # the minimum-norm solution


def test_svd_full_matrices_of_a_non_square_matrix_has_torchs_gradient(torch_mod):
    """It raised; torch ignores the extra (undetermined) columns of U / rows of Vh."""
    torch = torch_mod
    for shape in [(5, 3), (3, 5)]:
        at, ag = _pair(torch, np.random.default_rng(13).uniform(-1, 1, shape))
        U, S, Vh = torch.linalg.svd(at, full_matrices=True)
        Ug, Sg, Vhg = tg.linalg.svd(ag, full_matrices=True)
        assert tuple(Ug.shape) == tuple(U.shape) and tuple(Vhg.shape) == tuple(Vh.shape)
        np.testing.assert_allclose((Ug[:, : S.shape[0]] * Sg) @ Vhg[: S.shape[0]], ag._data)
        # sign-free functions of the singular vectors
        k = min(shape)
        wt = (U[:, :k] * U[:, :k]).sum() + (Vh[:k] ** 3 * Vh[:k]).sum() + S.sum()
        wg = (Ug[:, :k] * Ug[:, :k]).sum() + (Vhg[:k] ** 3 * Vhg[:k]).sum() + Sg.sum()
        (want,) = torch.autograd.grad(wt, at)
        (got,) = tg.autograd.grad(wg, [ag])
        _close(got, want, atol=1e-9)


def test_matrix_rank_takes_batched_tolerance_tensors_as_torch(torch_mod):
    torch = torch_mod
    a = np.random.default_rng(14).uniform(-1, 1, (2, 5, 5))
    at, ag = _pair(torch, a, grad=False)
    s = np.linalg.svd(a, compute_uv=False)
    for kw in [
        {"rtol": (s[:, 2] + s[:, 3]) / 2 / s[:, 0]},  # cuts between singular values
        {"atol": (s[:, 3] + s[:, 4]) / 2},
        {"atol": np.array([0.0, (s[1, 1] + s[1, 2]) / 2])},
        {"hermitian": True},
    ]:
        kt = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        kg = {k: tg.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        _close(tg.linalg.matrix_rank(ag, **kg), torch.linalg.matrix_rank(at, **kt))


def test_vander_of_a_0d_tensor_is_one_point(torch_mod):
    torch = torch_mod
    at, ag = _pair(torch, np.array(3.0))
    want, got = torch.linalg.vander(at, N=3), tg.linalg.vander(ag, N=3)
    _close(got, want)
    _grads(torch, [want], [got], [at], [ag])


# -- lowrank, and the harness's sign alignment ----------------------------------------------------


def test_svd_lowrank_is_exact_for_low_rank_inputs_and_reproducible():
    rng = np.random.default_rng(15)
    a = tg.tensor(rng.uniform(-1, 1, (2, 6, 2)) @ rng.uniform(-1, 1, (2, 2, 4)))
    U, S, V = tg.svd_lowrank(a, q=2)
    assert U.shape == (2, 6, 2) and S.shape == (2, 2) and V.shape == (2, 4, 2)
    np.testing.assert_allclose(((U * S.unsqueeze(-2)) @ V.mT)._data, a._data, atol=1e-12)
    np.testing.assert_allclose(S._data, np.linalg.svd(a._data, compute_uv=False)[:, :2])
    tg.manual_seed(3)
    first = tg.pca_lowrank(a, q=2)
    tg.manual_seed(3)
    again = tg.pca_lowrank(a, q=2)
    np.testing.assert_array_equal(first[0]._data, again[0]._data)
    with pytest.raises(ValueError, match="q"):
        tg.pca_lowrank(a, q=5)


def test_the_harness_aligns_signs_only():
    """tests/opdb_harness.py flips eigen/singular vectors to torch's signs; a vector that
    differs by more than its sign still fails."""
    pytest.importorskip("torch", reason="PyTorch is not installed")
    import torch  # noqa: PLC0415

    from .opdb_harness import Mismatch, _align_signs, _compare  # noqa: PLC0415

    a = np.random.default_rng(16).uniform(-1, 1, (4, 4))
    w, v = np.linalg.eigh(a + a.T)
    ref = [torch.tensor(w), torch.tensor(v)]
    flipped = [tg.tensor(w), tg.tensor(v * np.array([1.0, -1.0, -1.0, 1.0]))]
    aligned = _align_signs(flipped, ref, ((1, -1),))
    _compare(aligned[1], ref[1], "eigenvectors")
    wrong = v.copy()
    wrong[:, 0] = -wrong[:, 0] + 1e-3
    with pytest.raises(Mismatch):
        _compare(_align_signs([flipped[0], tg.tensor(wrong)], ref, ((1, -1),))[1], ref[1], "v")
