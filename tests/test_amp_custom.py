"""torch.amp.custom_fwd/custom_bwd and the deprecated torch.cuda.amp spellings, against torch."""

import warnings

import pytest

import tapegrad as tg


def _enabled(m, device):
    return m.is_autocast_enabled(device) if m is not tg else tg.amp._autocast_state(device)[0]


def _function(m, cast_inputs):
    seen = {}

    class Double(m.autograd.Function):
        @staticmethod
        @m.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx, x, scale=None):
            seen["fwd_dtype"] = str(x.dtype).split(".")[-1]
            seen["fwd_autocast"] = _enabled(m, "cpu")
            seen["scale_dtype"] = None if scale is None else str(scale.dtype).split(".")[-1]
            return x * 2

        @staticmethod
        @m.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen["bwd_autocast"] = _enabled(m, "cpu")
            return g * 2, None

    return Double, seen


@pytest.mark.parametrize(
    "cast_inputs,dtype",
    [(None, "float32"), ("float32", "float64"), ("float64", "float32"), ("float16", "float32")],
)
@pytest.mark.parametrize("in_autocast", [False, True])
def test_custom_fwd_bwd_as_torch(torch_mod, cast_inputs, dtype, in_autocast):
    results = []
    for m in (torch_mod, tg):
        fn, seen = _function(m, None if cast_inputs is None else getattr(m, cast_inputs))
        x = m.ones(3, dtype=getattr(m, dtype), requires_grad=True)
        scale = m.ones(1, dtype=getattr(m, dtype))
        with m.autocast("cpu", dtype=m.bfloat16, enabled=in_autocast):
            y = fn.apply(x, scale)
        y.sum().backward()
        seen["grad"] = x.grad.tolist()
        results.append(seen)
    assert results[1] == results[0]


def test_custom_fwd_checks_device_type(torch_mod):
    for m in (torch_mod, tg):
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            m.amp.custom_fwd(device_type=0)
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            m.amp.custom_bwd(device_type=None)


def test_autocast_state_nests_and_cuda_without_gpu_is_disabled(torch_mod):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for m in (torch_mod, tg):
            with m.autocast("cpu"):
                assert _enabled(m, "cpu")
                with m.autocast("cpu", enabled=False):
                    assert not _enabled(m, "cpu")
                assert _enabled(m, "cpu")
            assert not _enabled(m, "cpu")
            with m.autocast("cuda"):
                assert _enabled(m, "cuda") is m.cuda.is_available()


@pytest.mark.parametrize("name", ["custom_fwd", "custom_bwd"])
def test_cuda_amp_spellings_warn_as_torch(torch_mod, name):
    msgs = []
    for m in (torch_mod, tg):
        with pytest.warns(FutureWarning) as record:
            deco = getattr(m.cuda.amp, name)

            @deco
            def f(ctx, x):
                return x

        msgs.append(str(record[0].message))
        assert record[0].filename == __file__
    assert msgs[0] == msgs[1]


WARNING_CALLS = [
    lambda m: m.autocast("cuda"),
    lambda m: m.amp.autocast("cuda", enabled=False),
    lambda m: m.autocast("cpu"),
    lambda m: m.cuda.amp.autocast(),
    lambda m: m.cuda.amp.GradScaler(),
    lambda m: m.cuda.amp.GradScaler(enabled=False),
]


@pytest.mark.parametrize("call", WARNING_CALLS)
def test_cuda_autocast_and_scaler_warnings_as_torch(torch_mod, call):
    seen = []
    for m in (torch_mod, tg):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            obj = call(m)
        seen.append([(w.category, str(w.message)) for w in record])
        assert m is torch_mod or all(w.filename == __file__ for w in record)
        if hasattr(obj, "is_enabled"):
            assert obj.is_enabled() is False
    assert seen[1] == seen[0]


def test_cuda_amp_imports_as_a_module(torch_mod):
    import importlib

    mod = importlib.import_module("tapegrad.cuda.amp")
    assert mod is tg.cuda.amp
    from tapegrad.cuda.amp import GradScaler, autocast, custom_bwd, custom_fwd  # noqa: F401

    names = ["GradScaler", "autocast", "custom_fwd", "custom_bwd"]
    assert all(hasattr(importlib.import_module("torch.cuda.amp"), n) for n in names)
