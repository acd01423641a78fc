"""Every element of the graph cache's signature (issue 18), and what a replay may return.

``key_of`` must tell apart any two calls whose recorded programs could differ; for
each element of the signature there is a pair of calls that differ only in it, and
the cached function must give the eager result (values, dtype, graph) for both.
"""

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.jit.signature import key_of


def _t(shape=(2, 3), dtype=tg.float32, requires_grad=False):
    return tg.ones(*shape, dtype=dtype, requires_grad=requires_grad)


# (element, args of call a, args of call b): a and b differ in exactly that element
DIFFER = [
    ("tensor shape", lambda: (_t((2, 3)),), lambda: (_t((3, 2)),)),
    ("tensor strides", lambda: (_t((3, 3)),), lambda: (_t((3, 3)).T,)),
    ("tensor dtype", lambda: (_t(),), lambda: (_t(dtype=tg.float64),)),
    ("tensor device (array type)", lambda: (_t(),), lambda: (_other_device(_t()),)),
    ("tensor requires_grad", lambda: (_t(),), lambda: (_t(requires_grad=True),)),
    ("array shape", lambda: (np.ones(3),), lambda: (np.ones(4),)),
    ("array strides", lambda: (np.ones((2, 3)),), lambda: (np.ones((3, 2)).T,)),
    ("array dtype", lambda: (np.ones(3, np.float32),), lambda: (np.ones(3, np.int32),)),
    ("tensor vs array", lambda: (np.ones(3, np.float32),), lambda: (_t((3,)),)),
    ("value", lambda: (2.0,), lambda: (3.0,)),
    ("value type (1 == 1.0 == True)", lambda: (1,), lambda: (1.0,)),
    ("bool vs int", lambda: (1,), lambda: (True,)),
    ("sign of a float zero", lambda: (0.0,), lambda: (-0.0,)),
    ("None vs value", lambda: (None,), lambda: (0,)),
    ("tuple vs list", lambda: ((1, 2),), lambda: ([1, 2],)),
    ("nested tensor", lambda: ([_t((2,))],), lambda: ([_t((3,))],)),
    ("dict value", lambda: ({"a": _t((2,))},), lambda: ({"a": _t((3,))},)),
    ("dict key", lambda: ({"a": 1},), lambda: ({"b": 1},)),
    ("argument count", lambda: (1,), lambda: (1, 1)),
    ("argument order", lambda: (1, 2.0), lambda: (2.0, 1)),
]


class _Device(np.ndarray):
    """An array of another type, standing in for a device array (CuPy on a GPU)."""


def _other_device(t):
    t._data = t._data.view(_Device)
    return t


@pytest.mark.parametrize(("what", "a", "b"), DIFFER, ids=[d[0] for d in DIFFER])
def test_each_element_changes_the_key(what, a, b):
    assert key_of(a(), {})[0] != key_of(b(), {})[0], what


def test_keyword_arguments_are_part_of_the_key():
    x = _t()
    assert key_of((x,), {"scale": 2.0})[0] != key_of((x,), {"scale": 3.0})[0]
    assert key_of((x,), {"scale": 2.0})[0] != key_of((x,), {"shift": 2.0})[0]
    assert key_of((x,), {})[0] != key_of((x, None), {})[0]


def test_grad_and_inference_mode_are_part_of_the_key():
    keys = {key_of((_t(),), {})[0]}
    with tg.no_grad():
        keys.add(key_of((_t(),), {})[0])
    with tg.inference_mode():
        keys.add(key_of((_t(),), {})[0])
    assert len(keys) == 3


def test_equal_signatures_share_a_key_and_return_the_leaves():
    x, y, a = _t(), _t(), np.zeros(3)
    key_x, leaves = key_of((x, [a, 2.0], {"k": y}), {"z": x})
    assert key_x == key_of((y, [np.ones(3), 2.0], {"k": x}), {"z": y})[0]
    assert [id(v) for v in leaves] == [id(x), id(a), id(y), id(x)]


def test_unhashable_argument_is_a_clear_error():
    with pytest.raises(TypeError, match="set is not hashable"):
        key_of(({1},), {})
    with pytest.raises(TypeError, match="not hashable"):
        tg.jit.cache(lambda s: s)({1})


def _calls(c, f, args_list, repeat=3):
    """Call cached ``c`` and eager ``f`` ``repeat`` times on each args; compare."""
    for make in args_list:
        for _ in range(repeat):
            got, want = c(*make()), f(*make())
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got._data, want._data)
            assert np.signbit(got._data).tolist() == np.signbit(want._data).tolist()


def test_float_zero_sign_replays_its_own_program():
    def f(x, s):
        return x * s

    c = tg.jit.cache(f)
    _calls(c, f, [lambda: (_t((2,)), 0.0), lambda: (_t((2,)), -0.0)])
    assert c.cache_info().hits == 2


def test_array_dtype_replays_its_own_program():
    def f(x, a):
        return x * tg.from_numpy(a)

    c = tg.jit.cache(f)
    arrays = [lambda d=d: (_t((3,)), np.arange(3, dtype=d)) for d in (np.float32, np.int32)]
    arrays.append(lambda: (_t((3,)), np.arange(3, dtype=np.float64)))
    _calls(c, f, arrays)
    assert c.cache_info().hits == 3


def test_requires_grad_argument_gets_its_graph():
    """A call whose argument requires grad records apart, and its output keeps a graph."""

    def f(x):
        return (x * 3.0).sum()

    c = tg.jit.cache(f)
    for _ in range(3):
        assert c(_t()).grad_fn is None
    assert c.cache_info().hits == 1
    with pytest.warns(RuntimeWarning, match="returns a tensor that requires grad"):
        c(_t(requires_grad=True))
    for _ in range(3):
        x = _t(requires_grad=True)
        out = c(x)
        assert out.requires_grad and out.grad_fn is not None
        out.backward()
        np.testing.assert_array_equal(x.grad._data, np.full((2, 3), 3.0))
    assert c.cache_info().hits == 1


def test_backward_inside_the_call_still_replays():
    """A train step's loss requires grad but its graph was consumed: replays go on."""
    w = tg.ones(3, requires_grad=True)

    @tg.jit.cache
    def step(x):
        w.grad = None
        loss = (w * x).sum()
        loss.backward()
        return loss

    for _ in range(6):
        step(_t((3,)))
    assert step.cache_info().hits == 3
    np.testing.assert_array_equal(w.grad._data, np.ones(3))


def test_returning_a_leaf_that_requires_grad_runs_eagerly():
    w = tg.ones(3, requires_grad=True)
    c = tg.jit.cache(lambda x: (w, x * 2.0))
    with pytest.warns(RuntimeWarning, match=r"requires grad \(a leaf\)"):
        c(_t((3,)))
    for _ in range(3):
        assert c(_t((3,)))[0] is w


@pytest.mark.parametrize("wrap", [tuple, list, lambda a: {"a": a[0], "b": a[1]}])
def test_arrays_nested_in_arguments_are_read_at_each_replay(wrap):
    """Plain arrays inside a tuple, list or dict argument are inputs, not constants, even
    when ``fn`` computes on them with NumPy before they meet a tensor."""

    def f(x, arrays):
        a, b = arrays.values() if isinstance(arrays, dict) else arrays
        return x * tg.from_numpy(a * 2.0) + tg.from_numpy(b)

    c = tg.jit.cache(f)
    with warnings.catch_warnings():
        # NOTE: a list or dict argument is walked as state and never replays (its
        # identity changes each call): correct, eager; only a tuple replays today
        warnings.simplefilter("ignore", RuntimeWarning)
        for k in range(5):
            arrays = wrap([np.full(3, k, np.float32), np.arange(3, dtype=np.float32) * k])
            want = f(_t((3,)), arrays)._data
            np.testing.assert_array_equal(c(_t((3,)), arrays)._data, want)
    if wrap is tuple:
        assert c.cache_info().hits == 3
