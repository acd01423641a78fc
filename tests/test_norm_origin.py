"""Second derivatives of p-norms where the first derivative is masked (N = 0, x = 0).

PyTorch's norm_backward writes the derivative at the origin as a masked 0/0
(``(x / N).masked_fill_(N == 0, 0)``; for p < 1 also ``|x|^(p-1)`` masked at x = 0), so
differentiating it again gives NaN there (0·inf), at exactly the masked entries, while
the derivative with respect to the upstream gradient stays finite (p = 2) or is NaN
(other p). tapegrad uses the same formulas; these tests compare the patterns and values.
"""

import warnings

import numpy as np
import pytest

import tapegrad as tg

X = [[0.0, 0.0, 0.0], [1.0, -2.0, 3.0], [0.0, 0.7, 0.0]]
G = [0.7, 1.3, -0.4]
U = [[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0], [0.25, -1.5, 1.0]]


def _second(lib, norm):
    x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
    g = lib.tensor(G, dtype=lib.float64, requires_grad=True)
    (gx,) = lib.autograd.grad(norm(lib, x), x, g, create_graph=True)
    hx, hg = lib.autograd.grad(gx, (x, g), lib.tensor(U, dtype=lib.float64))
    return [t.detach().numpy() for t in (gx, hx, hg)]


NORMS = {
    f"vector_norm-{p}": (lambda p: lambda lib, x: lib.linalg.vector_norm(x, p, dim=1))(p)
    for p in (2, 3, 1.5, 0.5, -1)
}
NORMS["Tensor.norm"] = lambda lib, x: x.norm(dim=1)
NORMS["norm-p3"] = lambda lib, x: lib.norm(x, p=3, dim=1)
NORMS["linalg.norm"] = lambda lib, x: lib.linalg.norm(x, dim=1)


@pytest.mark.parametrize("name", sorted(NORMS))
def test_second_derivative_at_a_zero_norm_matches_torch(name, torch_mod):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # 0/0 on purpose, like torch's
        ours = _second(tg, NORMS[name])
    theirs = _second(torch_mod, NORMS[name])
    for a, b, what in zip(ours, theirs, ("d/dx", "d2/dx2", "d2/dx dg"), strict=True):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=f"{name} {what} NaNs")
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=f"{name} {what}")


def test_second_derivative_of_the_2_norm_at_the_origin_is_nan_in_x_only():
    # the documented rule: the first derivative there is 0, its derivative in x is NaN
    # (torch 2.13), its derivative in the upstream gradient is 0
    x = tg.zeros(4, dtype=tg.float64, requires_grad=True)
    g = tg.tensor(1.0, dtype=tg.float64, requires_grad=True)
    (gx,) = tg.autograd.grad(tg.linalg.vector_norm(x), x, g, create_graph=True)
    assert gx.tolist() == [0.0] * 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        hx, hg = tg.autograd.grad(gx, (x, g), tg.ones(4, dtype=tg.float64))
    assert np.isnan(hx.numpy()).all() and hg.item() == 0.0
