"""tg.save on the file system: permissions, links, and temporaries of killed saves
(Note [Atomic saves] in tapegrad/_atomic_file.py)."""

import os
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _atomic_file
from tapegrad.serialization import FormatError

posix = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions, links and signals")


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@posix
@pytest.mark.parametrize("mode", [0o600, 0o640, 0o444])
def test_saving_keeps_the_permissions_of_an_existing_file(tmp_path, mode):
    path = tmp_path / "m.tg"
    tg.save({"v": 1}, path)
    os.chmod(path, mode)
    tg.save({"v": 2}, path)
    assert _mode(path) == mode
    assert tg.load(path) == {"v": 2}


@posix
def test_a_new_file_follows_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        tg.save({"v": 1}, tmp_path / "m.tg")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "m.tg") == 0o640


@posix
def test_saving_through_a_symlink_writes_the_target(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "m.tg"
    tg.save({"v": 1}, target)
    os.chmod(target, 0o600)
    link = tmp_path / "latest.tg"
    link.symlink_to(target)
    tg.save({"v": 2}, link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert tg.load(target) == {"v": 2} and _mode(target) == 0o600
    assert sorted(os.listdir(tmp_path / "real")) == ["m.tg"]


@posix
def test_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "new.tg")
    tg.save({"v": 3}, link)
    assert link.is_symlink() and tg.load(tmp_path / "new.tg") == {"v": 3}


@posix
def test_hard_links_all_see_the_new_content(tmp_path):
    first, second = tmp_path / "a.tg", tmp_path / "b.tg"
    tg.save({"v": tg.zeros(100)}, first)
    os.link(first, second)
    tg.save({"v": tg.ones(3)}, second)
    assert os.stat(first).st_ino == os.stat(second).st_ino
    np.testing.assert_array_equal(tg.load(first)["v"].numpy(), np.ones(3))
    assert sorted(os.listdir(tmp_path)) == ["a.tg", "b.tg"]


def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@posix
def test_a_save_removes_temporaries_of_dead_writers_only(tmp_path):
    path = tmp_path / "m.tg"
    host = _atomic_file._HOST
    other_host = f"{(int(host, 16) + 1) % 2**32:08x}"
    dead, alive = _dead_pid(), os.getppid()
    names = {
        "dead": f".m.tg.tg-{host}-{dead}-0123456789ab.tmp",
        "alive": f".m.tg.tg-{host}-{alive}-0123456789ab.tmp",
        "mine": f".m.tg.tg-{host}-{os.getpid()}-0123456789ab.tmp",
        "other host": f".m.tg.tg-{other_host}-{dead}-0123456789ab.tmp",
        "other file": f".n.tg.tg-{host}-{dead}-0123456789ab.tmp",
    }
    for name in names.values():
        (tmp_path / name).write_bytes(b"partial")
    tg.save({"v": 1}, path)
    left = set(os.listdir(tmp_path))
    assert names["dead"] not in left
    assert left == {"m.tg"} | {names[k] for k in ("alive", "mine", "other host", "other file")}


def _write_forever(path):  # pragma: no cover - runs in a forked child, killed there
    state = {"w": tg.randn(1024, 1024), "b": tg.randn(1024)}  # 4 MiB
    i = 0
    while True:
        state["step"] = i
        tg.save(state, path)
        i += 1


def _start_writer(path):
    """A process saving to ``path`` in a loop: a fork of this one (a fresh interpreter
    importing tapegrad cost more CPU than the test). The kill is what matters; the child
    runs nothing of pytest's and never exits on its own."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            _write_forever(path)
        finally:
            os._exit(1)
    return pid


@posix
def test_killed_saves_leave_a_loadable_file_and_no_lasting_temporaries(tmp_path):
    path = tmp_path / "m.tg"
    rng = np.random.default_rng(0)
    orphans_seen = 0
    kills = 2
    for _ in range(kills):
        tg.save({"step": -1}, path)
        pid = _start_writer(path)
        try:
            # Wait until it has started writing, then kill it at a random moment of a save.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if len(os.listdir(tmp_path)) > 1 or tg.load(path)["step"] >= 0:
                    break
                time.sleep(0.005)
            time.sleep(rng.uniform(0, 0.05))
        finally:  # a failing load above must not leave the writer running
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == -signal.SIGKILL  # killed, not ended
        orphans_seen += len(os.listdir(tmp_path)) - 1
        try:
            tg.load(path)  # the old or the new content, complete
        except FormatError as exc:  # pragma: no cover - the point of the test
            pytest.fail(f"a killed save left a corrupt file: {exc}")
        tg.save({"step": -1}, path)
        assert os.listdir(tmp_path) == ["m.tg"]
    # Not asserted (timing), but shown with -rP: how many kills landed mid-write.
    print(f"{kills} kills, {orphans_seen} orphaned temporaries removed by the next save")
