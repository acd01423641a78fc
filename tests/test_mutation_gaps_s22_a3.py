"""Tests for lines of ops/ that no in-process test ran (session 22, list a, part 3), and
regressions for the differences from torch fixed on the way (the docstrings say which)."""

import numpy as np
import pytest

import tapegrad as tg


def _same(got, want):
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def _error(call):
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return type(exc)
    return None


# -- ops/_registry.py, broadcasting.py -------------------------------------------------------


def test_vmap_hooked_fn_keeps_a_plain_attribute_error(torch_mod):
    """_registry.py:153 [drop] ``raise`` (vmap_hooked): group_norm handed None for its input
    raises AttributeError, as torch, not a vmap dispatch of an unbatched call."""
    with pytest.raises(AttributeError):
        torch_mod.nn.functional.group_norm(None, 2)
    with pytest.raises(AttributeError, match="NoneType"):
        tg.nn.functional.group_norm(None, 2)


def test_broadcast_shapes_as_torch(torch_mod):
    """A bug fixed (broadcasting.py:59, the old fallback message, now gone): a negative size
    is torch's ValueError (was a RuntimeError about mismatching sizes), and shapes of more
    than NumPy's 64 dims broadcast (np.broadcast_shapes refused them)."""
    for args in [(-1, 3), ((-2,),), ((2, -1), (2, 3))]:
        with pytest.raises(ValueError, match="negative length"):
            torch_mod.broadcast_shapes(*args)
        with pytest.raises(ValueError, match="negative length"):
            tg.broadcast_shapes(*args)
    for args in [((1,) * 70, (2,)), ((2, 1), (3,)), ((), ()), (3, (2, 1)), ((2, 0), (1,))]:
        assert tg.broadcast_shapes(*args) == tuple(torch_mod.broadcast_shapes(*args))
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError):
            lib.broadcast_shapes((2, 1), (3, 4, 1), (5,))
        with pytest.raises(TypeError):
            lib.broadcast_shapes((2.0,), (2,))
