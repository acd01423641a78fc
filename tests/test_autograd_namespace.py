"""The small names of torch.autograd: grad-mode managers and submodules, the multithreading
flag, the profiler's record_function/profile, and autograd.graph's saved-tensor hooks."""

import json
import time

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import profiler

# (path in torch.autograd, the tapegrad object it must be, as torch's is torch.<name>)
SAME_OBJECT = [
    ("no_grad", "no_grad"),
    ("enable_grad", "enable_grad"),
    ("set_grad_enabled", "set_grad_enabled"),
    ("inference_mode", "inference_mode"),
    ("grad_mode.no_grad", "no_grad"),
    ("grad_mode.enable_grad", "enable_grad"),
    ("grad_mode.set_grad_enabled", "set_grad_enabled"),
    ("grad_mode.inference_mode", "inference_mode"),
    ("anomaly_mode.detect_anomaly", "autograd.detect_anomaly"),
    ("anomaly_mode.set_detect_anomaly", "autograd.set_detect_anomaly"),
    ("grad_mode.set_multithreading_enabled", "autograd.set_multithreading_enabled"),
]


def _get(root, path):
    for part in path.split("."):
        root = getattr(root, part)
    return root


@pytest.mark.parametrize("path,target", SAME_OBJECT)
def test_autograd_names_are_the_top_level_objects(torch_mod, path, target):
    assert _get(torch_mod.autograd, path) is _get(torch_mod, target)
    assert _get(tg.autograd, path) is _get(tg, target)


def test_grad_mode_from_the_autograd_namespace():
    x = tg.ones(2, requires_grad=True)
    with tg.autograd.no_grad():
        assert not (x * 2).requires_grad
        with tg.autograd.enable_grad():
            assert (x * 2).requires_grad
    with tg.autograd.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    with tg.autograd.inference_mode():
        assert (x * 2).is_inference()
    assert (x * 2).requires_grad


def test_multithreading_flag_as_torch(torch_mod):
    for m in (torch_mod, tg):
        assert m.autograd.is_multithreading_enabled() is True
        with m.autograd.set_multithreading_enabled(False):
            assert m.autograd.is_multithreading_enabled() is False
        assert m.autograd.is_multithreading_enabled() is True
        m.autograd.set_multithreading_enabled(False)  # takes effect at once
        assert m.autograd.is_multithreading_enabled() is False
        m.autograd.set_multithreading_enabled(True)


# -- profiler -------------------------------------------------------------------------------


def _profile(m):
    rf = m.autograd.profiler.record_function
    with m.autograd.profiler.profile() as prof:
        for _ in range(3):
            with rf("step"):
                with rf("forward"):
                    time.sleep(0.002)
                with rf("backward"):
                    pass
    return prof


def test_profile_groups_ranges_as_torch(torch_mod):
    got, want = _profile(tg), _profile(torch_mod)

    def user(events):
        return {e.key: e.count for e in events if e.key in ("step", "forward", "backward")}

    assert (
        user(got.key_averages())
        == user(want.key_averages())
        == {
            "step": 3,
            "forward": 3,
            "backward": 3,
        }
    )
    avg = {e.key: e for e in got.key_averages()}
    step, fwd, bwd = avg["step"], avg["forward"], avg["backward"]
    assert fwd.cpu_time_total >= 3 * 2000  # microseconds
    assert step.cpu_time_total >= fwd.cpu_time_total + bwd.cpu_time_total
    self_step = step.cpu_time_total - fwd.cpu_time_total - bwd.cpu_time_total
    assert step.self_cpu_time_total == pytest.approx(self_step)
    assert step.cpu_time == pytest.approx(step.cpu_time_total / 3)
    assert got.self_cpu_time_total == pytest.approx(step.cpu_time_total)
    events = got.function_events
    assert [e.name for e in events[:3]] == ["step", "forward", "backward"]
    assert events[1].cpu_parent is events[0] and events[0].cpu_children == events[1:3]


def test_profile_table_has_torchs_columns(torch_mod):
    got = _profile(tg).key_averages().table(sort_by="self_cpu_time_total", row_limit=2)
    want = _profile(torch_mod).key_averages().table(sort_by="self_cpu_time_total")
    head = lambda table: table.splitlines()[1].split()  # noqa: E731
    assert head(got) == head(want)
    rows = got.splitlines()[3:-2]
    assert len(rows) == 2 and rows[0].split()[0] == "forward"
    assert got.splitlines()[-1].startswith("Self CPU time total: ")
    with pytest.raises(AttributeError, match="nope"):
        _profile(tg).key_averages().table(sort_by="nope")


def test_record_function_decorator_and_outside_a_profile(tmp_path):
    @profiler.record_function("fib")
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    assert fib(5) == 5  # no profile active: nothing recorded, nothing raised
    with profiler.profile() as prof:
        assert fib(4) == 3
    events = prof.function_events
    assert len(events) == 9 and all(e.name == "fib" for e in events)
    assert len([e for e in events if e.cpu_parent is None]) == 1
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    trace = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert len(trace) == 9 and trace[0]["ph"] == "X"


def test_profiler_errors_and_warnings_as_torch(torch_mod):
    for m in (torch_mod, tg):
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            with m.autograd.profiler.emit_nvtx():
                pass
        with m.autograd.profiler.emit_itt():
            pass
    with pytest.warns(Warning) as want:
        with torch_mod.autograd.profiler.profile(use_cuda=True):
            pass
    with pytest.warns(Warning) as got:
        with profiler.profile(use_cuda=True):
            pass
    pairs = lambda record: [(w.category, str(w.message)) for w in record]  # noqa: E731
    assert pairs(got) == pairs(want)
    with pytest.raises(RuntimeError, match="didn't finish"):
        profiler.profile().key_averages()
    assert list(profiler.profile(enabled=False).__enter__().key_averages()) == []


# -- autograd.graph's saved-tensor hooks -------------------------------------------------


def test_save_on_cpu_runs_the_block_unchanged(torch_mod):
    x = np.linspace(-1, 1, 6)
    grads = []
    for m in (torch_mod, tg):
        t = m.tensor(x, requires_grad=True)
        with m.autograd.graph.save_on_cpu(pin_memory=False):
            y = (t.sin() * t).sum()
        y.backward()
        grads.append(t.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


def test_saved_tensors_hooks_refuse_rather_than_never_run():
    with pytest.raises(NotImplementedError, match="saved_tensors_hooks"):
        with tg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            pass


def test_disable_saved_tensors_hooks_as_torch(torch_mod):
    msg = "saved tensors default hooks are disabled"
    for m in (torch_mod, tg):
        with m.autograd.graph.disable_saved_tensors_hooks(msg):
            with pytest.raises(RuntimeError, match=msg):
                with m.autograd.graph.save_on_cpu():
                    pass
            with pytest.raises(RuntimeError, match=msg):
                with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
        with m.autograd.graph.save_on_cpu():
            pass


def test_increment_version_as_torch(torch_mod):
    for m in (torch_mod, tg):
        a, b = m.ones(2), m.ones(3)
        m.autograd.graph.increment_version(a)
        m.autograd.graph.increment_version([a, b])
        assert (a._version, b._version) == (2, 1)
    w = tg.ones(2, requires_grad=True)
    x = tg.ones(2)
    y = (w * x).sum()
    tg.autograd.graph.increment_version(x)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()
