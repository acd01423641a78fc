"""tg.profiler against torch.profiler: which steps a schedule records, the ProfilerStep#N
ranges, on_trace_ready calls, schedule's actions and errors (Note [Profiler ranges])."""

import json

import pytest

import tapegrad as tg

SCHEDULES = [
    None,
    dict(wait=1, warmup=1, active=2),
    dict(wait=1, warmup=1, active=2, repeat=1),
    dict(wait=0, warmup=1, active=1, repeat=2, skip_first=1),
    dict(wait=2, warmup=1, active=3, repeat=1, skip_first_wait=1),
]


def _trace(m, sched_kwargs, steps=9):
    windows = []

    def ready(prof):
        windows.append(
            sorted(
                (e.key, e.count)
                for e in prof.key_averages()
                if e.key.startswith(("ProfilerStep", "work"))
            )
        )

    sched = m.profiler.schedule(**sched_kwargs) if sched_kwargs else None
    with m.profiler.profile(activities=[m.profiler.ProfilerActivity.CPU], schedule=sched,
                            on_trace_ready=ready) as prof:  # fmt: skip
        for i in range(steps):
            with m.profiler.record_function(f"work{i % 2}"):
                pass
            prof.step()
    return windows


@pytest.mark.parametrize("sched", SCHEDULES, ids=str)
def test_schedule_windows_as_torch(torch_mod, sched):
    with pytest.warns() if sched and sched["warmup"] == 0 else _nothing():
        got = _trace(tg, sched)
    want = _trace(torch_mod, sched)
    assert got == want
    assert got, "nothing was recorded"


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_schedule_actions_as_torch(torch_mod):
    for kwargs in [dict(wait=1, warmup=2, active=3, repeat=2, skip_first=2),
                   dict(wait=0, warmup=1, active=1, skip_first_wait=1)]:  # fmt: skip
        a = torch_mod.profiler.schedule(**kwargs)
        b = tg.profiler.schedule(**kwargs)
        assert [a(i).name for i in range(20)] == [b(i).name for i in range(20)]
    for kwargs in [dict(wait=-1, warmup=0, active=1), dict(wait=0, warmup=1, active=0)]:
        with pytest.raises(AssertionError) as want:
            torch_mod.profiler.schedule(**kwargs)
        with pytest.raises(AssertionError) as got:
            tg.profiler.schedule(**kwargs)
        assert str(got.value) == str(want.value)
    with pytest.warns(UserWarning, match="won't be using warmup"):
        tg.profiler.schedule(wait=0, warmup=0, active=1)
    assert {a.name for a in tg.profiler.supported_activities()} == {
        a.name for a in torch_mod.profiler.supported_activities()
    }
    assert [a.name for a in tg.profiler.ProfilerAction] == [
        a.name for a in torch_mod.profiler.ProfilerAction
    ]


def test_profile_errors_and_trace_handler(torch_mod, tmp_path):
    for m in (torch_mod, tg):
        with pytest.raises(AssertionError, match="must be initialized"):
            m.profiler.profile().key_averages()
        with pytest.warns(FutureWarning, match="`use_cuda` is deprecated"):
            m.profiler.profile(use_cuda=False)
    handler = tg.profiler.tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w")
    with tg.profiler.profile(on_trace_ready=handler):
        with tg.profiler.record_function("fwd"):
            pass
    (path,) = (tmp_path / "tb").iterdir()
    assert path.name.startswith("w.") and path.name.endswith(".pt.trace.json")
    assert [e["name"] for e in json.loads(path.read_text())["traceEvents"]] == ["fwd"]
