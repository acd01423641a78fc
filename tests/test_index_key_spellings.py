"""Every spelling of an integer in an index key is an int to PyTorch: a NumPy integer, a 0-d
NumPy array and a 0-d integer tensor index like ``1`` (Note [Ints in advanced keys] in
ops/indexing.py: torch applies them as ``select`` before the advanced indices, so in
``x[k, :, [0, 2]]`` the list's dim stays in place). ``normalize_key`` turns each into a
Python int; one left as a NumPy scalar counts as an advanced index and moves the dims.
Compared with torch: the value of ``x[key]``, its gradient, and ``x[key] = v``."""

import numpy as np
import pytest

import tapegrad as tg

INTS = {
    "int": lambda lib: 1,
    "np.int64": lambda lib: np.int64(1),
    "np.int32": lambda lib: np.int32(1),
    "np.uint8": lambda lib: np.uint8(1),
    "0-d array": lambda lib: np.array(1),
    "0-d tensor": lambda lib: lib.tensor(1),
}
_ALL = slice(None)
KEYS = {
    "k": lambda k: k,
    "k,:,:": lambda k: (k, _ALL, _ALL),
    "k,:,list": lambda k: (k, _ALL, [0, 2]),
    "list,:,k": lambda k: ([0, 2], _ALL, k),
    "k,list,:": lambda k: (k, [0, 2], _ALL),
    ":,k,list": lambda k: (_ALL, k, [0, 1]),
    "k,None,list": lambda k: (k, None, [0, 2]),
    "k,...,array": lambda k: (k, Ellipsis, np.array([[0], [3]])),
}


@pytest.mark.parametrize("spelling", list(INTS))
def test_an_integer_of_any_spelling_indexes_like_torch(torch_mod, spelling):
    torch = torch_mod
    x = np.arange(60.0).reshape(3, 4, 5)
    for name, make in KEYS.items():
        got = []
        for lib in (torch, tg):
            key = make(INTS[spelling](lib))
            t = lib.tensor(x, requires_grad=True)
            out = t[key]
            out.backward(lib.tensor(np.arange(out.numel(), dtype=float).reshape(tuple(out.shape))))
            y = lib.tensor(x)
            y[key] = -1.0
            got.append([np.asarray(a.detach().numpy()) for a in (out, t.grad, y)])
        for ours, want in zip(got[1], got[0]):
            assert ours.shape == want.shape, (name, ours.shape, want.shape)
            np.testing.assert_array_equal(ours, want, err_msg=name)
