"""torch's top-level in-place functions (``torch.abs_(x)``...) against torch: the same values
written into the same tensor, which is returned."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
from tapegrad._inplace_exports import NAMES

X = np.array([[0.3, -0.7, 0.55], [0.9, -0.2, 0.05]])
POSITIVE = np.abs(X) + 0.2
ABOVE_ONE = np.abs(X) + 1.5
UNIT = X * 0.9
INTS = np.array([[4, 6, 9], [12, 15, 7]])

# name -> (input, extra arguments built from the library module)
SPECIAL = {
    "acosh_": (ABOVE_ONE, None),
    "arccosh_": (ABOVE_ONE, None),
    "log_": (POSITIVE, None),
    "log10_": (POSITIVE, None),
    "log2_": (POSITIVE, None),
    "rsqrt_": (POSITIVE, None),
    "sqrt_": (POSITIVE, None),
    "reciprocal_": (POSITIVE, None),
    "logit_": (np.abs(X) * 0.9 + 0.05, lambda m: (1e-3,)),
    "addmv_": (X[0], lambda m: (m.tensor(X.T.copy()), m.tensor(X[:, 0].copy()))),
    "clamp_": (X, lambda m: (-0.25, 0.5)),
    "clip_": (X, lambda m: (-0.25, 0.5)),
    "clamp_max_": (X, lambda m: (0.1,)),
    "clamp_min_": (X, lambda m: (0.1,)),
    "fill_": (X, lambda m: (2.5,)),
    "gcd_": (INTS, lambda m: (m.tensor(INTS[::-1].copy()),)),
    "lcm_": (INTS, lambda m: (m.tensor(INTS[::-1].copy()),)),
    "ldexp_": (X, lambda m: (m.tensor(INTS % 4),)),
    "xlogy_": (X, lambda m: (m.tensor(POSITIVE),)),
    "index_put_": (X, lambda m: ((m.tensor([1, 0]),), m.tensor(np.array([[9.0, 8.0, 7.0]] * 2)))),
    "nan_to_num_": (np.array([np.nan, np.inf, -np.inf, 1.0]), lambda m: (0.0, 5.0, -5.0)),
    "round_": (X * 10, None),
}


@pytest.mark.parametrize("name", NAMES)
def test_top_level_in_place_function_matches_torch(torch_mod, name):
    data, extra = SPECIAL.get(name, (UNIT, None))
    results = []
    for m in (tg, torch_mod):
        x = m.tensor(data.copy())
        out = getattr(m, name)(x, *(extra(m) if extra else ()))
        assert out is x
        results.append(x.numpy().copy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12, atol=1e-12)


def test_a_non_tensor_input_is_refused_like_torch(torch_mod):
    with pytest.raises(TypeError):
        torch_mod.abs_([1.0])
    with pytest.raises(
        TypeError, match=r"abs_\(\): argument 'input' \(position 1\) must be Tensor"
    ):
        tg.abs_([1.0])


def test_in_place_on_a_leaf_that_requires_grad_raises_like_torch(torch_mod):
    with pytest.raises(RuntimeError):
        torch_mod.exp_(torch_mod.ones(2, requires_grad=True))
    with pytest.raises(RuntimeError):
        tg.exp_(tg.ones(2, requires_grad=True))
