"""torch's build flags, ``torch.layout``, ``set_default_tensor_type`` and
``F.native_channel_shuffle``, against torch."""

import warnings

import numpy as np
import pytest

import tapegrad as tg


def test_flags_are_booleans_and_layout_types_strided(torch_mod):
    for name in ("has_lapack", "has_spectral", "has_mkl", "has_openmp"):
        assert type(getattr(tg, name)) is type(getattr(torch_mod, name)) is bool
    assert tg.has_lapack and tg.has_spectral  # linalg and fft work
    assert isinstance(tg.strided, tg.layout) and isinstance(torch_mod.strided, torch_mod.layout)


@pytest.mark.parametrize(
    "spell",
    [
        lambda lib: lib.DoubleTensor,
        lambda lib: "torch.DoubleTensor",
        lambda lib: "torch.FloatTensor",
    ],
)
def test_set_default_tensor_type_sets_the_default_dtype_and_warns_like_torch(torch_mod, spell):
    got = []
    for lib in (tg, torch_mod):
        before = lib.get_default_dtype()
        try:
            if lib is tg:
                with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
                    lib.set_default_tensor_type(spell(lib))
            else:  # torch warns once per process
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    lib.set_default_tensor_type(spell(lib))
            got.append(str(lib.tensor([1.5]).dtype).removeprefix("torch."))
        finally:
            lib.set_default_dtype(before)
    assert got[0] == got[1]


@pytest.mark.parametrize(
    "bad, error",
    [
        ("torch.IntTensor", TypeError),
        ("torch.LongTensor", TypeError),
        ("torch.float64", TypeError),
        (3, TypeError),
        ("LongTensor", ModuleNotFoundError),
        ("float64", ModuleNotFoundError),
    ],
)
def test_set_default_tensor_type_refuses_what_torch_refuses(torch_mod, bad, error):
    match = "only floating-point types" if error is TypeError else "No module named"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=match):
            torch_mod.set_default_tensor_type(bad)
    with pytest.warns(UserWarning), pytest.raises(error, match=match):
        tg.set_default_tensor_type(bad)
    with pytest.warns(UserWarning), pytest.raises(TypeError, match="only floating-point types"):
        tg.set_default_tensor_type(tg.LongTensor)
    assert tg.get_default_dtype() == np.float32


def test_native_channel_shuffle_is_channel_shuffle(torch_mod):
    x = np.arange(2 * 6 * 2, dtype=np.float32).reshape(2, 6, 2)
    got = tg.nn.functional.native_channel_shuffle(tg.tensor(x), 3).numpy()
    want = torch_mod.nn.functional.native_channel_shuffle(torch_mod.tensor(x), 3).numpy()
    np.testing.assert_array_equal(got, want)
