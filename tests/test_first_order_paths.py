"""Note [First-order fast paths]: mul, exp and relu compute their first-order gradients on
arrays when nothing records; the results equal those of the recorded rules bit for bit
(create_graph=True runs the rules in tapegrad ops), dtypes and broadcasting included."""

import numpy as np
import pytest

import tapegrad as tg

CASES = {
    "mul_scalar": lambda a, b: (a * 0.37 * b).sum(),
    "mul_int_scalar": lambda a, b: (3 * a * b).sum(),
    "mul_broadcast": lambda a, b: (a * b[:1]).sum(),
    "mul_mixed_dtype": lambda a, b: (a * b.double()).sum(),
    "exp": lambda a, b: (a.exp() * b).sum(),
    "relu": lambda a, b: (tg.relu(a) * b).sum(),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fast_and_recorded_gradients_agree(name, dtype):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((3, 4)).astype(dtype)
    xs[0, 0] = np.nan  # relu passes a NaN input's gradient, as PyTorch
    ys = rng.standard_normal((3, 4)).astype(dtype)
    grads = []
    for create_graph in (False, True):
        a = tg.tensor(xs, requires_grad=True)
        b = tg.tensor(ys, requires_grad=True)
        ga, gb = tg.autograd.grad(CASES[name](a, b), (a, b), create_graph=create_graph)
        grads.append([g.detach().numpy() for g in (ga, gb)])
    for fast, recorded in zip(*grads, strict=True):
        assert fast.dtype == recorded.dtype == dtype
        np.testing.assert_array_equal(fast, recorded)
