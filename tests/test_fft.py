"""tg.fft: every transform against torch (values, dtypes, gradients with a complex
cotangent, second derivatives) in float64 and complex128, gradcheck in complex128, the
real-input irfft/hfft, the frequency/shift helpers and the errors."""

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


def _real(m, a):
    return a.real if a.is_complex() else a


TRANSFORMS = {
    "fft": lambda m, a: m.fft.fft(a),
    "fft-n": lambda m, a: m.fft.fft(a, n=7, dim=0, norm="ortho"),
    "ifft": lambda m, a: m.fft.ifft(a, n=3),
    "fft2": lambda m, a: m.fft.fft2(a, norm="forward"),
    "ifft2": lambda m, a: m.fft.ifft2(a, s=(3, 7)),
    "fftn": lambda m, a: m.fft.fftn(a),
    "ifftn": lambda m, a: m.fft.ifftn(a, dim=(0,), norm="ortho"),
    "rfft": lambda m, a: m.fft.rfft(_real(m, a)),
    "rfft-n": lambda m, a: m.fft.rfft(_real(m, a), n=8, dim=0),
    "rfft2": lambda m, a: m.fft.rfft2(_real(m, a), norm="ortho"),
    "rfftn": lambda m, a: m.fft.rfftn(_real(m, a), s=(4, 5)),
    "irfft": lambda m, a: m.fft.irfft(a),
    "irfft-n": lambda m, a: m.fft.irfft(a, n=9, dim=0, norm="forward"),
    "irfft2": lambda m, a: m.fft.irfft2(a),
    "irfftn": lambda m, a: m.fft.irfftn(a, s=(3, 6), norm="ortho"),
    "hfft": lambda m, a: m.fft.hfft(a, n=7),
    "hfft2": lambda m, a: m.fft.hfft2(a, norm="ortho"),
    "hfftn": lambda m, a: m.fft.hfftn(a, s=(-1, 4)),
    "ihfft": lambda m, a: m.fft.ihfft(_real(m, a)),
    "ihfft2": lambda m, a: m.fft.ihfft2(_real(m, a), norm="forward"),
    "ihfftn": lambda m, a: m.fft.ihfftn(_real(m, a), s=(3, 3)),
}


def _numpy(t):
    return t.detach().resolve_conj().numpy() if hasattr(t, "resolve_conj") else t.numpy()


def _through(m, fn, x):
    """Value, gradient for a complex cotangent, and the second derivative of Σ w|out|²."""
    a = m.tensor(x, requires_grad=True)
    out = fn(m, a)
    shape = tuple(out.shape)
    k = np.arange(int(np.prod(shape)))
    cot = np.cos(k).reshape(shape)
    if out.is_complex():
        cot = cot + 1j * np.sin(k).reshape(shape)
    (g1,) = m.autograd.grad(
        out, [a], grad_outputs=m.tensor(cot, dtype=out.dtype), retain_graph=True
    )
    w = m.tensor(np.cos(k).reshape(shape))
    loss = (out.abs() ** 2 * w).sum() if out.is_complex() else (out * out * w).sum()
    (g,) = m.autograd.grad(loss, [a], create_graph=True)
    (gg,) = m.autograd.grad((g.abs() ** 2).sum() if g.is_complex() else (g * g).sum(), [a])
    return str(out.dtype).split(".")[-1], [_numpy(out), _numpy(g1), _numpy(g), _numpy(gg)]


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transform_matches_torch(name, dtype, torch_mod):
    x = R.standard_normal((4, 5))
    if dtype == "complex128":
        x = x + 1j * R.standard_normal((4, 5))
    ours_dtype, ours = _through(tg, TRANSFORMS[name], x)
    theirs_dtype, theirs = _through(torch_mod, TRANSFORMS[name], x)
    assert ours_dtype == theirs_dtype
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ["fft-n", "ifft2", "rfft2", "irfftn", "hfft", "ihfftn"])
def test_gradcheck_complex128(name):
    x = R.standard_normal((3, 4)) + 1j * R.standard_normal((3, 4))
    a = tg.tensor(x, requires_grad=True)
    fn = TRANSFORMS[name]
    assert tg.autograd.gradcheck(lambda t: fn(tg, t), [a])
    assert tg.autograd.gradgradcheck(lambda t: fn(tg, t), [a])


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "hfft2", "ihfft"])
def test_float32_gives_complex64_as_torch(name, torch_mod):
    x = R.standard_normal((4, 6)).astype(np.float32)
    ours = TRANSFORMS[name](tg, tg.tensor(x))
    theirs = TRANSFORMS[name](torch_mod, torch_mod.tensor(x))
    assert str(ours.dtype) == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(_numpy(ours), _numpy(theirs), rtol=1e-4, atol=1e-4)


def test_integer_input_takes_the_default_dtype(torch_mod):
    assert tg.fft.fft(tg.arange(4)).dtype == tg.complex64
    assert str(torch_mod.fft.fft(torch_mod.arange(4)).dtype) == "torch.complex64"


def test_errors_like_torch(torch_mod):
    z = tg.tensor([1 + 1j, 2j])
    with pytest.raises(RuntimeError, match="rfft expects a real input"):
        tg.fft.rfft(z)
    with pytest.raises(RuntimeError, match="normalization"):
        tg.fft.irfft(tg.ones(4), norm="bad")
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        tg.fft.fft(tg.ones(3), n=0)
    with pytest.raises(RuntimeError, match="same length"):
        tg.fft.fftn(tg.ones(3, 4), s=(2,), dim=(0, 1))
    with pytest.raises(IndexError):
        tg.fft.fft(tg.tensor(1.0))


STFT = {
    "default": dict(n_fft=8, return_complex=True),
    "window": dict(n_fft=8, hop_length=3, win_length=6, normalized=True, return_complex=True),
    "twosided": dict(n_fft=6, center=False, onesided=False, return_complex=True),
    "real_view": dict(n_fft=8, pad_mode="constant", return_complex=False),
}


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("name", sorted(STFT))
def test_stft_matches_torch(name, dtype, torch_mod):
    kw = dict(STFT[name])
    if dtype == "complex128" and kw.get("onesided", True) and "onesided" in kw:
        pytest.skip("a complex input has no one-sided STFT")
    if dtype == "complex128":
        kw.setdefault("onesided", False)
    x = R.standard_normal((2, 20)) + (1j * R.standard_normal((2, 20)) if dtype != "float64" else 0)

    def fn(m, a):
        window = None
        if "win_length" in kw:
            window = m.tensor(np.hanning(kw["win_length"]))
        return m.stft(a, window=window, **kw)

    ours_dtype, ours = _through(tg, fn, x)
    theirs_dtype, theirs = _through(torch_mod, fn, x)
    assert ours_dtype == theirs_dtype
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)


def test_stft_needs_return_complex_for_real_input():
    with pytest.raises(RuntimeError, match="return_complex"):
        tg.stft(tg.ones(16), 8)


# istft(spectrogram) rows: stft's keywords that made it, and istft's own
ISTFT = {
    "default": dict(n_fft=8, hop_length=2, window="hann"),
    "short_window": dict(n_fft=8, hop_length=3, win_length=6, window="hann", normalized=True),
    "no_center_length": dict(n_fft=8, hop_length=2, window="hann", center=False, length=18),
    "twosided_complex": dict(n_fft=6, hop_length=2, window="hann", onesided=False,
                             return_complex=True),
    "twosided_real": dict(n_fft=6, hop_length=2, window="hann", onesided=False),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ISTFT))
def test_istft_matches_torch_with_gradients(name, torch_mod):
    kw = dict(ISTFT[name])
    n_fft, win = kw["n_fft"], kw.pop("win_length", kw["n_fft"])
    n_freq = n_fft if kw.get("onesided") is False else n_fft // 2 + 1
    spec = R.standard_normal((2, n_freq, 7)) + 1j * R.standard_normal((2, n_freq, 7))

    def fn(m, a):
        window = m.tensor(np.hanning(win) + 0.1)
        return m.istft(a, win_length=win, **{**kw, "window": window})

    ours_dtype, ours = _through(tg, fn, spec)
    theirs_dtype, theirs = _through(torch_mod, fn, spec)
    assert ours_dtype == theirs_dtype
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)


def test_istft_inverts_stft_and_refuses_as_torch(torch_mod):
    x = R.standard_normal(20)
    for m in (tg, torch_mod):
        w, hann = m.tensor(np.hanning(8) + 0.1), m.hann_window(8, dtype=m.float64)
        spec = m.stft(m.tensor(x), 8, 2, window=w, return_complex=True)
        np.testing.assert_allclose(m.istft(spec, 8, 2, window=w).numpy(), x, atol=1e-12)
        with pytest.warns(UserWarning, match="padded with zeros"):
            assert tuple(m.istft(spec, 8, 2, window=w, length=25).shape) == (25,)
        with pytest.warns(UserWarning, match="A window was not provided"):
            m.istft(spec, 8, 2)
        bad = [
            (lambda: m.istft(m.view_as_real(spec), 8, 2, window=w), "complex-valued input"),
            (lambda: m.istft(spec, 8, 2, window=w, return_complex=True), "onesided output"),
            (lambda: m.istft(spec, 6, 2, window=w[:6]), "match n_fft / 2 \\+ 1"),
            (lambda: m.istft(spec, 8, 9, window=w), "0 < hop_length <= win_length"),
            (lambda: m.istft(spec, 8, 2, window=m.zeros(8)), "window overlap add min"),
            (lambda: m.istft(spec, 8, 2, window=hann, center=False), "window overlap add min"),
        ]
        for call, match in bad:
            with pytest.raises(RuntimeError, match=match):
                call()
