"""tg.fft: the real-to-real transforms (irfft, hfft) with norm= and gradients of any order,
the frequency/shift helpers, and a clear error for the transforms that need complex dtypes."""

import numpy as np
import pytest

import tapegrad as tg

R = np.random.default_rng(0)

CASES = {
    "irfft": ((5,), lambda m, a: m.fft.irfft(a)),
    "irfft-ortho": ((2, 5), lambda m, a: m.fft.irfft(a, n=7, dim=1, norm="ortho")),
    "irfft-forward": ((5, 3), lambda m, a: m.fft.irfft(a, n=6, dim=0, norm="forward")),
    "irfft-cut": ((5,), lambda m, a: m.fft.irfft(a, n=4)),
    "irfft-pad": ((3,), lambda m, a: m.fft.irfft(a, n=9)),
    "hfft": ((5,), lambda m, a: m.fft.hfft(a)),
    "hfft-ortho": ((2, 4), lambda m, a: m.fft.hfft(a, n=5, norm="ortho")),
    "hfft-forward": ((2, 4), lambda m, a: m.fft.hfft(a, norm="forward")),
    "fftshift": ((3, 4), lambda m, a: m.fft.fftshift(a)),
    "ifftshift": ((3, 5), lambda m, a: m.fft.ifftshift(a, dim=1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch_to_second_order(name, torch_mod):
    shape, fn = CASES[name]
    x = R.standard_normal(shape)
    res = []
    for m in (tg, torch_mod):
        a = m.tensor(x, dtype=m.float64, requires_grad=True)
        out = fn(m, a)
        w = m.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)), dtype=m.float64)
        (g,) = m.autograd.grad((out * out * w).sum(), [a], create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), [a])
        res.append([out.detach().numpy(), g.detach().numpy(), gg.numpy()])
    for ours, theirs in zip(*res):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["irfft-ortho", "hfft"])
def test_gradcheck(name):
    shape, fn = CASES[name]
    x = tg.tensor(R.standard_normal(shape), dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(lambda a: fn(tg, a), [x])
    assert tg.autograd.gradgradcheck(lambda a: fn(tg, a), [x])


def test_frequencies(torch_mod):
    np.testing.assert_allclose(tg.fft.fftfreq(5, 0.1).numpy(), torch_mod.fft.fftfreq(5, 0.1))
    got = tg.fft.rfftfreq(6, dtype=tg.float64)
    assert got.dtype == tg.float64
    np.testing.assert_allclose(got.numpy(), torch_mod.fft.rfftfreq(6, dtype=torch_mod.float64))


def test_complex_transforms_say_why_they_are_missing():
    with pytest.raises(NotImplementedError, match="complex"):
        tg.fft.rfft(tg.ones(4))
    with pytest.raises(ValueError, match="normalization"):
        tg.fft.irfft(tg.ones(4), norm="bad")
