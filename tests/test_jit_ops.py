"""Ops whose eager code tests array values stay replayable under tg.jit.cache.

Each case runs a training-like step (forward, backward into a parameter's ``.grad``)
on new input values at every call, some of them hitting the special case the op
tests for (NaN, zeros, a constant slice, a mask that changes), with
``verify_every=1``: each replay is compared with an eager run on the same state, so a
value baked into the recording, or a branch taken once for all calls, fails.
"""

import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F


def special(kind, x):
    """``x`` with the special values of ``kind`` written into its first row."""
    if kind == "nan":
        x[0, 1] = np.nan
    elif kind == "zero":
        x[0, 2] = 0.0
    elif kind == "zero_row":
        x[0] = 0.0
    elif kind == "constant_row":
        x[0] = 1.5
    return x


def set_masked(x):
    y = x.clone()
    y[x.detach() > 0.3] = 0.0  # a mask that changes with the values
    return y


CASES = {
    "max_all_nan": (lambda x: x.max(), "nan"),
    "amax_dim_nan": (lambda x: x.amax(dim=1), "nan"),
    "min_all": (lambda x: x.min(), "nan"),
    "amin_dim_ties": (lambda x: x.amin(dim=0), "zero_row"),
    "vector_norm_at_zero": (lambda x: tg.linalg.vector_norm(x, dim=1), "zero_row"),
    "vector_norm_p3_at_zero": (lambda x: tg.linalg.vector_norm(x, 3, dim=1), "zero_row"),
    "norm_fro": (lambda x: x.norm(), "zero"),
    "cumprod_with_zeros": (lambda x: x.cumprod(1), "zero"),
    "prod_with_zeros": (lambda x: x.prod(1), "zero"),
    "prod_all": (lambda x: x.prod(), "zero"),
    "std_at_zero": (lambda x: x.std(dim=1), "constant_row"),
    "std_all": (lambda x: x.std(), None),
    "var": (lambda x: x.var(dim=1), None),
    "logsumexp": (lambda x: x.logsumexp(1), None),
    "setitem_mask": (set_masked, None),
    "pad": (lambda x: F.pad(x, (1, 2)), None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_testing_ops_replay_like_eager(name):
    fn, kind = CASES[name]
    w = tg.ones(3, 4, requires_grad=True)

    def step(x):
        w.grad = None
        out = fn(w * x)
        (out * out).sum().backward()
        return out, w.grad

    cached = tg.jit.cache(step, verify_every=1)
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        for i in range(7):
            x = rng.standard_normal((3, 4)).astype(np.float32)
            if i % 2 == 1:  # special values on some calls only, replayed ones included
                x = special(kind, x)
            out, grad = cached(tg.tensor(x))
            eager_x = tg.tensor(x)
            w_eager = tg.ones(3, 4, requires_grad=True)
            expected = fn(w_eager * eager_x)
            (expected * expected).sum().backward()
            np.testing.assert_allclose(out._data, expected._data, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(grad._data, w_eager.grad._data, rtol=1e-5, atol=1e-6)
    assert cached.cache_info().hits == 4  # 3 recordings (the first creates w.grad)


def test_std_and_var_follow_state_changed_between_calls():
    # Identical first calls commit the program; a value baked into it would be stale.
    w = tg.randn(3, 4)
    f = tg.jit.cache(lambda: (w.std(dim=1), w.var(), w.logsumexp(0)))
    for _ in range(3):
        f()
    w._data *= 2.0
    std, var, lse = f()
    assert f.cache_info().hits == 2
    np.testing.assert_allclose(std._data, w._data.std(axis=1, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(var._data, w._data.var(ddof=1), rtol=1e-5)
    np.testing.assert_allclose(lse._data, np.log(np.exp(w._data).sum(0)), rtol=1e-5)
