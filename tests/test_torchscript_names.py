"""Note [TorchScript is eager here]: torch.jit's compile calls return the object itself, so
programs that script or trace run unchanged and give torch's numbers."""

import numpy as np
import pytest

import tapegrad as tg


def _gelu_fused(x, w):
    return x * tg.sigmoid(1.702 * x) @ w


def test_script_and_trace_return_the_object_and_its_results_are_torchs(torch_mod):
    torch = torch_mod
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    w = np.arange(8, dtype=np.float32).reshape(4, 2) / 8

    def t_fused(x, w):
        return x * torch.sigmoid(1.702 * x) @ w

    assert tg.jit.script(_gelu_fused) is _gelu_fused
    lin = tg.nn.Linear(4, 2)
    assert tg.jit.script(lin) is lin
    assert tg.jit.trace(lin, tg.ones(1, 4)) is lin
    assert tg.jit.trace_module(lin, {"forward": tg.ones(1, 4)}) is lin
    assert tg.jit.freeze(lin) is lin and tg.jit.optimize_for_inference(lin) is lin
    got = tg.jit.script(_gelu_fused)(tg.tensor(x), tg.tensor(w)).numpy()
    want = t_fused(torch.tensor(x), torch.tensor(w)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_annotations_and_queries_match_torch(torch_mod):
    torch = torch_mod
    for lib in (tg, torch):
        assert lib.jit.is_scripting() is False
        assert lib.jit.is_tracing() is False
        assert lib.jit.annotate(int, 3) == 3
        assert lib.jit.export(_gelu_fused) is _gelu_fused
        assert lib.jit.unused(_gelu_fused) is _gelu_fused
        assert lib.jit.ignore(_gelu_fused) is _gelu_fused
        assert lib.jit.ignore(drop=True)(_gelu_fused) is _gelu_fused
        assert lib.jit.wait(lib.jit.fork(lambda a, b: a + b, 2, b=3)) == 5
        assert issubclass(lib.jit.TracerWarning, Warning)
        assert not isinstance(lib.nn.Linear(1, 1), lib.jit.ScriptModule)
        before = lib.jit.set_fusion_strategy([("STATIC", 20)])
        assert lib.jit.set_fusion_strategy(before) == [("STATIC", 20)]
        assert before == [("STATIC", 2), ("DYNAMIC", 10)]  # torch's default
        with lib.jit.optimized_execution(False), lib.jit.fuser("fuser0"):
            pass
    assert tg.jit.onednn_fusion_enabled() is torch.jit.onednn_fusion_enabled() is False


@pytest.mark.parametrize(
    "call", [lambda: tg.jit.save(tg.nn.Linear(1, 1), "m.pt"), lambda: tg.jit.load("m.pt")]
)
def test_archives_raise_saying_what_to_do_instead(call):
    with pytest.raises(RuntimeError, match=r"tapegrad.save\(model.state_dict\(\), path\)"):
        call()


def test_version_module_answers_as_torch_cpu(torch_mod):
    assert tg.version.__version__ == tg.__version__
    for name in ("cuda", "hip", "debug"):
        assert getattr(tg.version, name) == getattr(torch_mod.version, name)  # a CPU build
