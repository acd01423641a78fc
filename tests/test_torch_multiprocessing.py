"""tapegrad.multiprocessing against torch.multiprocessing (brief n20): the names, the
sharing strategies, and spawn/start_processes (with "fork", the cheap start method)."""

from __future__ import annotations

import sys

import pytest

import tapegrad as tg

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork start method")


def test_names_and_sharing_strategies_as_torch(torch_mod):
    mp, theirs = tg.multiprocessing, torch_mod.multiprocessing
    assert set(theirs.__all__) <= set(mp.__all__)
    assert mp.get_all_sharing_strategies() == theirs.get_all_sharing_strategies()
    assert mp.get_sharing_strategy() == theirs.get_sharing_strategy()
    mp.set_sharing_strategy("file_system")
    assert mp.get_sharing_strategy() == "file_system"
    mp.set_sharing_strategy("file_descriptor")
    errors = []
    for m in (mp, theirs):
        with pytest.raises(AssertionError) as info:
            m.set_sharing_strategy("bogus")
        errors.append(str(info.value).split(", expected")[0])
    assert errors[0] == errors[1]
    assert mp.Process is theirs.Process and mp.cpu_count() == theirs.cpu_count()


def _square_into(i, queue, x):
    queue.put((i, (x * (i + 1)).sum().item()))


def _raise_in_one(i):
    if i == 1:
        raise ValueError("boom in process 1")


def _exit_three(i):
    sys.exit(3)


def test_spawn_runs_fn_per_process_and_joins():
    mp = tg.multiprocessing
    queue = mp.get_context("fork").SimpleQueue()
    assert mp.spawn(_square_into, (queue, tg.ones(3)), nprocs=2, start_method="fork") is None
    assert sorted(queue.get() for _ in range(2)) == [(0, 3.0), (1, 6.0)]
    ctx = mp.start_processes(_square_into, (queue, tg.ones(2)), 1, join=False,
                             start_method="fork")  # fmt: skip
    assert isinstance(ctx, mp.ProcessContext) and len(ctx.pids()) == 1
    while not ctx.join():
        pass
    assert queue.get() == (0, 2.0)


def test_spawn_raises_the_first_failure_as_torch():
    mp = tg.multiprocessing
    with pytest.raises(mp.ProcessRaisedException) as info:
        mp.spawn(_raise_in_one, nprocs=2, start_method="fork")
    assert info.value.error_index == 1
    head = "\n\n-- Process 1 terminated with the following error:\nTraceback"  # torch's
    assert str(info.value).startswith(head)
    assert "ValueError: boom in process 1" in str(info.value)
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3"):
        mp.spawn(_exit_three, start_method="fork")
