"""Shared helpers for the autograd feature tests: one function, two frameworks."""

import numpy as np

import tapegrad as tg


def slice_(m, x, start, stop):
    """``x[start:stop]`` along dim 0; a constant selection matmul while tapegrad lacks indexing."""
    if m is not tg or hasattr(tg.Tensor, "__getitem__"):
        return x[start:stop]
    sel = np.eye(x.shape[0])[start:stop]
    return m.tensor(sel, dtype=x.dtype) @ x


def as_np(x):
    """A tapegrad or torch tensor (or nested tuples of them) as NumPy arrays."""
    if isinstance(x, tuple):
        return tuple(as_np(t) for t in x)
    if isinstance(x, np.ndarray):
        return x
    return x.detach().numpy()


def assert_close(a, b, rtol=1e-7, atol=1e-9):
    """Equal values and equal nesting of tuples."""
    a, b = as_np(a), as_np(b)
    if isinstance(b, tuple):
        assert isinstance(a, tuple) and len(a) == len(b), (type(a), len(b))
        for x, y in zip(a, b):
            assert_close(x, y, rtol, atol)
        return
    assert not isinstance(a, tuple)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
