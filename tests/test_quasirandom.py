"""torch.quasirandom.SobolEngine: unscrambled points equal torch's bit for bit; scrambled
ones keep the properties (torch's RNG is not ours) and are reproducible with ``seed``."""

import numpy as np
import pytest

import tapegrad as tg

SobolEngine = tg.quasirandom.SobolEngine


def _np(t):
    return t.numpy() if not hasattr(t, "detach") else t.detach().numpy()


@pytest.mark.parametrize("dim", [1, 5, 300, 21201])
def test_unscrambled_equals_torch_bitwise(torch_mod, dim):
    n = 70 if dim < 1000 else 3
    a, b = torch_mod.quasirandom.SobolEngine(dim), SobolEngine(dim)
    for step in (lambda e: e.draw(n), lambda e: e.draw(1), lambda e: e.draw(n, dtype=None)):
        x, y = _np(step(a)), _np(step(b))
        assert y.dtype == x.dtype == np.float32
        np.testing.assert_array_equal(y, x)
    assert a.num_generated == b.num_generated


def test_state_methods_as_torch(torch_mod):
    torch = torch_mod
    a, b = torch.quasirandom.SobolEngine(4), SobolEngine(4)
    script = [
        ("fast_forward", (5,)), ("draw", (3,)), ("fast_forward", (1000,)),
        ("draw", (2,)), ("reset", ()), ("draw_base2", (3,)), ("draw_base2", (3,)),
    ]  # fmt: skip
    for method, args in script:
        x, y = getattr(a, method)(*args), getattr(b, method)(*args)
        if method in ("fast_forward", "reset"):
            assert x is a and y is b
        else:
            np.testing.assert_array_equal(_np(y), _np(x))
        assert a.num_generated == b.num_generated
    x = a.draw(3, dtype=torch.float64)
    y = b.draw(3, dtype=tg.float64)
    assert y.dtype == tg.float64
    np.testing.assert_array_equal(_np(y), _np(x))
    with pytest.raises(ValueError, match="power of 2") as e_tg:
        b.draw_base2(1)
    with pytest.raises(ValueError, match="power of 2") as e_t:
        a.draw_base2(1)
    assert str(e_tg.value) == str(e_t.value)
    assert repr(SobolEngine(3, scramble=True, seed=1)) == repr(
        torch.quasirandom.SobolEngine(3, scramble=True, seed=1)
    )


def test_draw_into_out_and_bad_dimension():
    out = tg.empty(0)
    res = SobolEngine(3).draw(4, out=out)
    assert res is out and out.shape == (4, 3)
    for dim in (0, 21202):
        with pytest.raises(ValueError, match=r"\[1, 21201\]"):
            SobolEngine(dim)


def test_scrambled_properties_and_seed():
    a = _np(SobolEngine(3, scramble=True, seed=7).draw_base2(6))
    b = _np(SobolEngine(3, scramble=True, seed=7).draw_base2(6))
    c = _np(SobolEngine(3, scramble=True, seed=8).draw_base2(6))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert ((a >= 0) & (a < 1)).all()
    # balance: each of the 2**6 points falls in its own 1/64 interval, in every dimension
    for col in a.T:
        assert sorted(np.floor(col * 64).astype(int)) == list(range(64))
    # 2-D strata: 8x8 cells of any pair of dimensions hold one point each
    cells = np.floor(a[:, :2] * 8).astype(int)
    assert len({tuple(r) for r in cells}) == 64
    tg.manual_seed(3)
    d = _np(SobolEngine(3, scramble=True).draw(4))
    tg.manual_seed(3)
    np.testing.assert_array_equal(_np(SobolEngine(3, scramble=True).draw(4)), d)
    assert not np.array_equal(d, a[:4])  # scrambling changed the points
