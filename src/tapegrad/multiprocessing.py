"""``tapegrad.multiprocessing``, as ``torch.multiprocessing``: the standard library's
``multiprocessing`` (every name of it), torch's sharing-strategy settings, and ``spawn`` /
``start_processes``, which run ``fn(i, *args)`` in ``nprocs`` processes and raise the first
failure in the parent.

tapegrad tensors travel between processes by pickling (their NumPy arrays are copied):
there is no shared-memory tensor storage, so the sharing strategy is remembered and
reported but changes nothing. Imported on first use of ``tapegrad.multiprocessing``.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import time
from multiprocessing import *  # noqa: F403 - torch.multiprocessing re-exports them all

__all__ = [
    "set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn",
    "start_processes", "ProcessContext", "ProcessException", "ProcessRaisedException",
    "ProcessExitedException", *multiprocessing.__all__,
]  # fmt: skip

_ALL_STRATEGIES = (
    {"file_system", "file_descriptor"} if sys.platform != "darwin" else {"file_system"}
)
_STATE = {"strategy": "file_descriptor" if sys.platform != "darwin" else "file_system"}


def get_all_sharing_strategies() -> set:
    """The strategies torch offers on this platform (a set)."""
    return set(_ALL_STRATEGIES)


def get_sharing_strategy() -> str:
    return _STATE["strategy"]


def set_sharing_strategy(new_strategy) -> None:
    """Remembered (tensors are pickled, so no strategy changes how they travel).

    Raises:
        AssertionError: a strategy torch does not know (torch's message).
    """
    if new_strategy not in _ALL_STRATEGIES:
        raise AssertionError(
            f"invalid sharing strategy {new_strategy!r}, expected one of {_ALL_STRATEGIES}"
        )
    _STATE["strategy"] = new_strategy


class ProcessException(Exception):  # noqa: N818 - torch's name
    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg, self.error_index, self.error_pid = msg, error_index, error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A process's ``fn`` raised; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A process exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        args = (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)
        return type(self), args


def _wrap(fn, i, args, error_file):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:  # noqa: BLE001 - reported to the parent, which raises it
        import traceback

        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    """The processes ``start_processes(join=False)`` started; :meth:`join` waits for them."""

    def __init__(self, processes, error_files):
        self.processes, self.error_files = processes, error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list:
        return [int(p.pid) for p in self.processes]

    def join(self, timeout=None, grace_period=None) -> bool:
        """True once every process has exited cleanly, False while some still run (after
        ``timeout`` seconds).

        Raises:
            ProcessRaisedException: a process's ``fn`` raised (the others are terminated).
            ProcessExitedException: a process exited with a non-zero code or a signal.
        """
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        failed = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            self.processes[index].join()
            if self.processes[index].exitcode != 0:
                failed = index
                break
        if failed is None:
            return not self.sentinels
        self._stop_all(30 if grace_period is None else grace_period)
        process = self.processes[failed]
        path = self.error_files[failed]
        if os.path.getsize(path) == 0:
            code = process.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                raise ProcessExitedException(
                    f"process {failed:d} terminated with signal {name}",
                    failed, process.pid, code, name,
                )  # fmt: skip
            raise ProcessExitedException(
                f"process {failed:d} terminated with exit code {code:d}", failed, process.pid, code
            )
        with open(path, "rb") as fh:
            trace = pickle.load(fh)
        msg = f"\n\n-- Process {failed:d} terminated with the following error:\n{trace}"
        raise ProcessRaisedException(msg, failed, process.pid)

    def _stop_all(self, grace):
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        end = time.monotonic() + grace
        for p in self.processes:
            p.join(max(0.0, end - time.monotonic()))
            if p.is_alive():
                p.kill()
                p.join()


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run ``fn(i, *args)`` for ``i`` in ``range(nprocs)``, each in its own process
    (``start_method``: "spawn", "fork" or "forkserver"). With ``join``, wait for all and
    return None; else return the :class:`ProcessContext`."""
    ctx = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        fd, path = tempfile.mkstemp(prefix="tapegrad-mp-")
        os.close(fd)  # an empty file: the child writes its traceback there on failure
        p = ctx.Process(target=_wrap, args=(fn, i, args, path), daemon=daemon)
        p.start()
        processes.append(p)
        error_files.append(path)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    try:
        while not context.join():
            pass
    finally:
        for path in error_files:
            with contextlib.suppress(OSError):
                os.unlink(path)
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """:func:`start_processes` (torch's ``mp.spawn``)."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
