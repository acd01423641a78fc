"""``torch.svd`` and ``torch.qr``: PyTorch's deprecated top-level forms (U, S, V; some=)."""

import warnings

import numpy as np
import pytest

import tapegrad as tg


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 5, 3)])
@pytest.mark.parametrize("some", [True, False])
def test_svd_returns_u_s_v_like_torch(torch_mod, shape, some):
    torch = torch_mod
    a = np.random.default_rng(0).standard_normal(shape)
    ours = tg.svd(tg.tensor(a), some=some)
    ref = torch.svd(torch.tensor(a), some=some)
    assert ours._fields == ("U", "S", "V")
    for o, r in zip(ours, ref):
        assert tuple(o.shape) == tuple(r.shape)
    np.testing.assert_allclose(ours.S.numpy(), ref.S.numpy(), rtol=1e-12)
    k = min(shape[-2:])
    u, v = ours.U.numpy()[..., :k], ours.V.numpy()[..., :k]
    np.testing.assert_allclose((u * ours.S.numpy()[..., None, :]) @ np.swapaxes(v, -1, -2), a)
    # Singular vectors up to sign: |U^T U_torch| is the identity on the first k columns.
    overlap = np.abs(np.swapaxes(u, -1, -2) @ ref.U.numpy()[..., :k])
    np.testing.assert_allclose(overlap, np.broadcast_to(np.eye(k), overlap.shape), atol=1e-10)


def test_svd_without_uv_gives_zero_matrices_and_the_values_gradient(torch_mod):
    torch = torch_mod
    a = np.random.default_rng(1).standard_normal((4, 3))
    x, xt = tg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ours, ref = tg.svd(x, compute_uv=False), torch.svd(xt, compute_uv=False)
    for o, r in zip(ours, ref):
        np.testing.assert_allclose(o.detach().numpy(), r.detach().numpy(), rtol=1e-12)
        assert tuple(o.shape) == tuple(r.shape)
    ours.S.sum().backward()
    ref.S.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("some", [True, False])
def test_qr_is_reduced_unless_some_is_false_like_torch(torch_mod, some):
    torch = torch_mod
    a = np.random.default_rng(2).standard_normal((5, 3))
    ours = tg.qr(tg.tensor(a), some=some)
    with warnings.catch_warnings():  # torch's deprecation warning
        warnings.simplefilter("ignore")
        ref = torch.qr(torch.tensor(a), some=some)
    assert ours._fields == ("Q", "R")
    assert tuple(ours.Q.shape) == tuple(ref.Q.shape)
    assert tuple(ours.R.shape) == tuple(ref.R.shape)
    np.testing.assert_allclose(ours.Q.numpy() @ ours.R.numpy(), a, atol=1e-12)
    np.testing.assert_allclose(np.abs(ours.R.numpy()), np.abs(ref.R.numpy()), atol=1e-12)
