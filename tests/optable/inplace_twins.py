"""Table rows: the ``_`` twins of the hand-written ops (Note [Generated in-place twins]).

One :class:`Twin` per in-place method: its extra arguments (built with ``m``, the same for
tapegrad and torch), self's shape and domain. The op table gets a row for each
differentiable twin (the op run on a non-leaf ``x * 1.0``); tests/test_inplace_methods.py
reads the same rows for values, identity of the result, versions and the leaf error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

import tapegrad as tg

from . import OpCase, away_from

_R = np.random.default_rng(7)
_M32 = _R.uniform(-1, 1, (3, 2))
_M24 = _R.uniform(-1, 1, (2, 4))
_V2 = _R.uniform(-1, 1, (2,))
_V3 = _R.uniform(-1, 1, (3,))
_V4 = _R.uniform(-1, 1, (4,))
_B232 = _R.uniform(-1, 1, (2, 3, 2))
_B224 = _R.uniform(-1, 1, (2, 2, 4))
_S34 = _R.uniform(-1, 1, (3, 4))
_S32 = _R.uniform(-1, 1, (3, 2))
_MASK = np.array([[True, False, True, False], [False, True, True, False], [True] * 4])


def _f(m, a):
    return m.tensor(a, dtype=m.float64)


def _i(m, a):
    return m.tensor(np.asarray(a), dtype=m.int64)


def _b(m, a):
    return m.tensor(np.asarray(a), dtype=m.bool)


_IDX2 = [[0, 2], [1, 0], [3, 1]]  # a (3, 2) index into dim 1 of (3, 4)


@dataclasses.dataclass
class Twin:
    """One in-place method: ``getattr(x, name)(*args(m))`` on a float64 ``x`` of ``shape``."""

    name: str
    shape: tuple = (3, 4)
    args: Callable = lambda m: ()
    domain: tuple = (-2.0, 2.0)
    kinks: tuple = ()  # points the gradient jumps at: inputs are kept away from them
    step: bool = False  # piecewise constant: torch's gradient is a ZeroTensor
    grad: bool = True  # a gradient row in the op table
    dtype: str = "float64"

    def inputs(self, rng):
        if self.kinks:
            return away_from(self.kinks, *self.domain)(self.shape)(rng)
        return rng.uniform(*self.domain, size=self.shape)


TWINS = [
    Twin("abs_", kinks=(0.0,)),
    Twin("absolute_", kinks=(0.0,)),
    Twin("neg_"),
    Twin("negative_"),
    Twin("sign_", step=True),
    Twin("ceil_", step=True, kinks=(-1.0, 0.0, 1.0)),
    Twin("floor_", step=True, kinks=(-1.0, 0.0, 1.0)),
    Twin("round_", step=True, kinks=(-1.5, -0.5, 0.5, 1.5)),
    Twin("exp_"),
    Twin("expm1_"),
    Twin("log_", domain=(0.5, 2.0)),
    Twin("log1p_", domain=(0.5, 2.0)),
    Twin("sqrt_", domain=(0.5, 2.0)),
    Twin("rsqrt_", domain=(0.5, 2.0)),
    Twin("sin_"),
    Twin("cos_"),
    Twin("tan_", domain=(-1.0, 1.0)),
    Twin("tanh_"),
    Twin("sigmoid_"),
    Twin("relu_", kinks=(0.0,)),
    Twin("erf_"),
    Twin("conj_physical_"),
    Twin("pow_", args=lambda m: (2.5,), domain=(0.5, 2.0)),
    Twin("pow_", args=lambda m: (_f(m, _S34),), domain=(0.5, 2.0)),
    Twin("remainder_", args=lambda m: (1.5,), domain=(0.1, 1.4)),
    Twin("fmod_", args=lambda m: (1.5,), domain=(-1.4, 1.4)),
    Twin("floor_divide_", args=lambda m: (1.5,), grad=False),
    Twin("divide_", args=lambda m: (1.5,)),
    Twin("true_divide_", args=lambda m: (1.5,)),
    Twin("multiply_", args=lambda m: (_f(m, _S34),)),
    Twin("subtract_", args=lambda m: (_f(m, _S34),)),
    Twin("clip_", args=lambda m: (-0.5, 0.5), kinks=(-0.5, 0.5)),
    Twin("eq_", args=lambda m: (0.5,), grad=False),
    Twin("ne_", args=lambda m: (0.5,), grad=False),
    Twin("lt_", args=lambda m: (0.5,), grad=False),
    Twin("le_", args=lambda m: (0.5,), grad=False),
    Twin("gt_", args=lambda m: (0.5,), grad=False),
    Twin("ge_", args=lambda m: (0.5,), grad=False),
    Twin("greater_", args=lambda m: (0.5,), grad=False),
    Twin("greater_equal_", args=lambda m: (0.5,), grad=False),
    Twin("less_", args=lambda m: (0.5,), grad=False),
    Twin("less_equal_", args=lambda m: (0.5,), grad=False),
    Twin("not_equal_", args=lambda m: (0.5,), grad=False),
    Twin("masked_fill_", args=lambda m: (_b(m, _MASK), -1.0)),
    Twin("masked_scatter_", args=lambda m: (_b(m, _MASK), _f(m, _S34))),
    Twin("scatter_", args=lambda m: (1, _i(m, _IDX2), _f(m, _S32))),
    Twin("scatter_add_", args=lambda m: (1, _i(m, _IDX2), _f(m, _S32))),
    Twin("scatter_reduce_", args=lambda m: (1, _i(m, _IDX2), _f(m, _S32), "sum")),
    Twin("index_add_", args=lambda m: (1, _i(m, [2, 0]), _f(m, _S32))),
    Twin("index_copy_", args=lambda m: (1, _i(m, [2, 0]), _f(m, _S32))),
    Twin("index_fill_", args=lambda m: (1, _i(m, [2, 0]), -1.0)),
    Twin("index_put_", args=lambda m: ((_i(m, [0, 2]), _i(m, [1, 3])), _f(m, _V2))),
    Twin("index_reduce_", args=lambda m: (1, _i(m, [2, 0]), _f(m, _S32), "prod")),
    Twin("put_", args=lambda m: (_i(m, [0, 5, 11]), _f(m, _V3))),
    Twin("cumsum_", args=lambda m: (1,)),
    Twin("cumprod_", args=lambda m: (1,)),
    Twin("tril_"),
    Twin("triu_", args=lambda m: (1,)),
    Twin("renorm_", args=lambda m: (2, 0, 1.0)),
    Twin("addmm_", args=lambda m: (_f(m, _M32), _f(m, _M24))),
    Twin("addmv_", shape=(3,), args=lambda m: (_f(m, _M32), _f(m, _V2))),
    Twin("addbmm_", args=lambda m: (_f(m, _B232), _f(m, _B224))),
    Twin("baddbmm_", shape=(2, 3, 4), args=lambda m: (_f(m, _B232), _f(m, _B224))),
    Twin("addr_", args=lambda m: (_f(m, _V3), _f(m, _V4))),
    Twin("fill_diagonal_", args=lambda m: (2.0,)),
    Twin("fill_diagonal_", shape=(7, 3), args=lambda m: (2.0, True)),
    Twin("fill_diagonal_", shape=(3, 3, 3), args=lambda m: (2.0,)),
    # the view ops' twins: shape and strides only
    Twin("t_"),
    Twin("transpose_", shape=(2, 3, 4), args=lambda m: (0, 2)),
    Twin("swapaxes_", shape=(2, 3, 4), args=lambda m: (1, 2)),
    Twin("swapdims_", shape=(2, 3, 4), args=lambda m: (0, 1)),
    Twin("squeeze_", shape=(1, 3, 1), args=lambda m: (0,)),
    Twin("squeeze_", shape=(1, 3, 1)),
    Twin("unsqueeze_", args=lambda m: (1,)),
    # integer-only twins (no gradient)
    Twin("gcd_", args=lambda m: (_i(m, [[4, 6, 9, 0]] * 3),), grad=False, dtype="int64"),
    Twin("lcm_", args=lambda m: (_i(m, [[4, 6, 9, 1]] * 3),), grad=False, dtype="int64"),
]


def run(twin: Twin, m, x):
    """``x.<twin>(*args)``; a step's result times ``x`` so its gradient is not all zeros."""
    return getattr(x, twin.name)(*twin.args(m))


def _case(twin: Twin) -> OpCase:
    def fn(m, x):
        y = run(twin, m, x * 1.0)
        return y * x if twin.step else y

    return OpCase(
        getattr(tg.Tensor, twin.name).__name__,  # the registered name of an alias
        fn,
        [twin.shape],
        inputs=lambda rng: [twin.inputs(rng)],
        name=f"twin-{TWINS.index(twin)}",
    )


CASES = [_case(t) for t in TWINS if t.grad and t.dtype == "float64"]
