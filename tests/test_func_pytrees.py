"""jacrev/jacfwd/hessian with tuple and dict arguments return Jacobians in the argument's
nest, as torch.func does (jacrev used to return only the first tensor's block)."""

import numpy as np
import pytest

import tapegrad as tg

F = tg.func


def _f(m):
    def f(p, extra):
        return (p["a"].sin() * p["b"].sum()) + extra[0] * extra[1].prod(), p["a"].exp().sum()

    return f


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
def test_jacobians_of_nests_match_torch(torch_mod, name):
    torch = torch_mod
    rng = np.random.default_rng(0)
    a, b, c, d = (rng.standard_normal(s) for s in ((3,), (2,), (3,), (2,)))
    ours = getattr(F, name)(_f(tg), argnums=(0, 1))(
        {"a": tg.tensor(a), "b": tg.tensor(b)}, (tg.tensor(c), tg.tensor(d))
    )
    ref = getattr(torch.func, name)(_f(torch), argnums=(0, 1))(
        {"a": torch.tensor(a), "b": torch.tensor(b)}, (torch.tensor(c), torch.tensor(d))
    )
    assert isinstance(ours, tuple) and len(ours) == 2  # the two outputs
    for o, r in zip(ours, ref):
        assert set(o[0]) == {"a", "b"} and isinstance(o[1], tuple)
        for k in ("a", "b"):
            np.testing.assert_allclose(o[0][k].numpy(), r[0][k].numpy(), rtol=1e-12)
        for x, y in zip(o[1], r[1]):
            np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-12)
    single = getattr(F, name)(lambda p: (p["a"] * p["b"].sum()).sum())(
        {"a": tg.tensor(a), "b": tg.tensor(b)}
    )
    np.testing.assert_allclose(single["b"].numpy(), np.full(2, a.sum()), rtol=1e-12)
