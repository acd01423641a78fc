"""Every max pooling with ``return_indices`` (functions and modules) returns a Tensor by
default and a (values, indices) pair when asked, both equal to torch's.

torch's functions are boolean dispatches without a signature, so a default that drifted
(``return_indices=True``) changes what unchanged code gets (a tuple) with no error where
the result is only indexed or summed; the module classes keep the option as an attribute.
"""

import numpy as np
import pytest

import tapegrad as tg

# (name, input shape, positional arguments after the input)
FUNCTIONS = [
    ("max_pool1d", (2, 3, 9), (3, 2)),
    ("max_pool2d", (2, 3, 7, 6), (3, 2)),
    ("max_pool3d", (1, 2, 5, 6, 5), (2,)),
    ("adaptive_max_pool1d", (2, 3, 9), (4,)),
    ("adaptive_max_pool2d", (2, 3, 7, 6), ((3, 4),)),
    ("adaptive_max_pool3d", (1, 2, 5, 6, 5), ((2, 3, 2),)),
    ("fractional_max_pool2d", (2, 3, 8, 9), (2, (4, 5))),
    ("fractional_max_pool3d", (1, 2, 7, 8, 6), (2, (3, 4, 3))),
]
MODULES = [
    ("MaxPool1d", (2, 3, 9), (3, 2)),
    ("MaxPool2d", (2, 3, 7, 6), (3, 2)),
    ("MaxPool3d", (1, 2, 5, 6, 5), (2,)),
    ("AdaptiveMaxPool1d", (2, 3, 9), (4,)),
    ("AdaptiveMaxPool2d", (2, 3, 7, 6), ((3, 4),)),
    ("AdaptiveMaxPool3d", (1, 2, 5, 6, 5), ((2, 3, 2),)),
    ("FractionalMaxPool2d", (2, 3, 8, 9), (2, (4, 5))),
    ("FractionalMaxPool3d", (1, 2, 7, 8, 6), (2, (3, 4, 3))),
]


def _inputs(shape, name, m):
    rng = np.random.default_rng(len(name))
    x = rng.permutation(np.prod(shape)).reshape(shape).astype(np.float64)  # no ties
    kw = {}
    if "ractional" in name:  # the same window offsets in both libraries
        samples = rng.uniform(size=(shape[0], shape[1], len(shape) - 2))
        kw["_random_samples"] = m.tensor(samples)
    return m.tensor(x), kw


def _same(ours, theirs):
    assert isinstance(ours, tg.Tensor) and not isinstance(ours, tuple)
    assert ours.dtype == getattr(tg, str(theirs.dtype).split(".")[-1])
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def _check(make, name, shape, torch_mod):
    for flag in (None, False, True):
        got, want = (make(m, flag) for m in (tg, torch_mod))
        if flag:
            assert isinstance(got, tuple) and len(got) == 2, type(got)
            for o, t in zip(got, want, strict=True):
                _same(o, t)
        else:
            _same(got, want)


@pytest.mark.parametrize(("name", "shape", "args"), FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_functions_return_indices_only_when_asked(name, shape, args, torch_mod):
    def make(m, flag):
        x, kw = _inputs(shape, name, m)
        if flag is not None:
            kw["return_indices"] = flag
        return getattr(m.nn.functional, name)(x, *args, **kw)

    _check(make, name, shape, torch_mod)


@pytest.mark.parametrize(("name", "shape", "args"), MODULES, ids=[f[0] for f in MODULES])
def test_modules_return_indices_only_when_asked(name, shape, args, torch_mod):
    def make(m, flag):
        x, kw = _inputs(shape, name, m)
        if flag is not None:
            kw["return_indices"] = flag
        return getattr(m.nn, name)(*args, **kw)(x)

    _check(make, name, shape, torch_mod)
