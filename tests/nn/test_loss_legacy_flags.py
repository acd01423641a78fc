"""The deprecated ``size_average``/``reduce`` flags of every loss module that takes them,
in all eight combinations with a flag set: torch's ``reduction`` and torch's values.

A rule of ``legacy_reduction`` that drifted (a flag left None where torch reads it as
True) changes the loss of unchanged old code silently: a sum for a mean, or a vector.
"""

import inspect
import itertools
import warnings

import numpy as np
import pytest

import tapegrad as tg

from .test_losses_more import MODULE_CASES, _run

torch = pytest.importorskip("torch")

FLAGS = [
    (sa, red)
    for sa, red in itertools.product((None, True, False), repeat=2)
    if (sa, red) != (None, None)
]
ROWS = {}
for _name, _kwargs, _arrays in MODULE_CASES:
    if "size_average" in inspect.signature(getattr(torch.nn, _name).__init__).parameters:
        ROWS.setdefault(
            _name,
            (
                {
                    k: v
                    for k, v in _kwargs.items()
                    if k not in ("reduction", "size_average", "reduce")
                },
                _arrays,
            ),
        )


@pytest.mark.parametrize("name", sorted(ROWS))
def test_legacy_flags_match_torch(name, torch_mod):
    kwargs, arrays = ROWS[name]
    for sa, red in FLAGS:

        def make(m, sa=sa, red=red):
            kw = {k: m.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return getattr(m.nn, name)(size_average=sa, reduce=red, **kw)

        ours, theirs = make(tg), make(torch_mod)
        assert ours.reduction == theirs.reduction, (sa, red)
        grads = [False] * len(arrays)
        out, _ = _run(tg, lambda F, m, *xs, f=ours: f(*xs), arrays, grads)
        ref, _ = _run(torch_mod, lambda F, m, *xs, f=theirs: f(*xs), arrays, grads)
        np.testing.assert_allclose(
            out.detach().numpy(),
            ref.detach().numpy(),
            rtol=1e-10,
            atol=1e-12,
            err_msg=str((sa, red)),
        )


def test_rows_found():
    assert len(ROWS) >= 12, sorted(ROWS)
