"""``tg.profiler``, as ``torch.profiler``: ``profile`` with ``schedule``/``step()`` and
``on_trace_ready``, ``record_function``, ``ProfilerActivity``, ``tensorboard_trace_handler``.

Events are the ``record_function`` ranges (Note [Profiler ranges] in
``autograd/profiler.py``), plus one range per step when a schedule is given, named
``ProfilerStep*`` in the results as torch's. The schedule decides which steps are
recorded: none while waiting or warming up, a fresh trace per active window, handed to
``on_trace_ready`` when the window closes (``RECORD_AND_SAVE``) or the profile stops.
"""

from __future__ import annotations

import enum
import os
import socket
import time
import warnings

from .autograd import profiler as _autograd_profiler
from .autograd.profiler import record_function

__all__ = [
    "profile",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
    "ProfilerAction",
    "ProfilerActivity",
    "record_function",
]


class ProfilerActivity(enum.Enum):
    """Where events come from; tapegrad records CPU ones only."""

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def supported_activities() -> set:
    return {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):  # fmt: skip
    """torch's step -> ProfilerAction function: skip ``skip_first`` steps, then cycles of
    ``wait`` idle, ``warmup`` and ``active`` recorded steps, ``repeat`` times (0: forever).

    Raises:
        AssertionError: for a negative count or ``active <= 0``, with torch's message.
    """

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0)."
        )
    if warmup == 0:
        warnings.warn(
            "Profiler won't be using warmup, this can skew profiler results", stacklevel=2
        )
    return schedule_fn


def _record_always(_step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False, use_python_export: bool = False):  # fmt: skip
    """An ``on_trace_ready`` that writes each trace as Chrome JSON into ``dir_name``
    (``<worker>.<time_ns>.pt.trace.json``), as torch's."""
    if use_gzip:
        raise NotImplementedError("tensorboard_trace_handler: use_gzip=True is not supported")

    def handler(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        prof.export_chrome_trace(os.path.join(dir_name, f"{name}.{time.time_ns()}.pt.trace.json"))

    return handler


class profile:  # noqa: N801 - torch's name
    """Profile ``record_function`` ranges, as ``torch.profiler.profile``.

    >>> import tapegrad as tg
    >>> sched = tg.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
    >>> seen = []
    >>> with tg.profiler.profile(schedule=sched, on_trace_ready=seen.append) as prof:
    ...     for _ in range(5):
    ...         with tg.profiler.record_function("train_step"):
    ...             pass
    ...         prof.step()
    >>> [e.count for e in prof.key_averages() if e.key == "train_step"]
    [2]
    >>> len(seen)
    1
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, use_cuda=None, custom_trace_id_callback=None,
                 post_processing_timeout_s=None):  # fmt: skip
        activities = set(activities) if activities is not None else supported_activities()
        if use_cuda is not None:
            warnings.warn(
                "`use_cuda` is deprecated, use `activities` argument instead",
                FutureWarning,
                stacklevel=2,
            )
            if use_cuda:
                activities.add(ProfilerActivity.CUDA)
            else:
                activities.discard(ProfilerActivity.CUDA)
        if not activities:
            raise AssertionError("No valid profiler activities found")
        self.activities = activities
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.schedule = schedule or _record_always
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.profiler = None  # the autograd profile of the current (or last) window
        self._recording = None
        self._step_range = None

    # -- the recording window --------------------------------------------------------------

    def _start_window(self) -> None:
        self._recording = _autograd_profiler.profile()
        self._recording.__enter__()

    def _end_window(self) -> None:
        self._recording.__exit__(None, None, None)
        for event in self._recording.function_events:
            if event.name.startswith("ProfilerStep#"):  # torch lists every step as one key
                event.name = event.key = "ProfilerStep*"
        self.profiler, self._recording = self._recording, None
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _enter_step(self) -> None:
        if self.record_steps and self._recording is not None:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def _exit_step(self) -> None:
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None

    def start(self) -> None:
        if self.current_action in _RECORDING:
            self._start_window()
        self._enter_step()

    def stop(self) -> None:
        self._exit_step()
        if self._recording is not None:
            self._end_window()

    def step(self) -> None:
        """End this step; the schedule's action for the next one may close the recording
        window (handing it to ``on_trace_ready``) or open a new one."""
        self._exit_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if self._recording is not None and (
            prev == ProfilerAction.RECORD_AND_SAVE or self.current_action not in _RECORDING
        ):
            self._end_window()
        if self._recording is None and self.current_action in _RECORDING:
            self._start_window()
        self._enter_step()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- results (of the last finished window) ----------------------------------------------

    def _last(self):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before getting key averages")
        return self.profiler

    def events(self):
        return self._last().events()

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):  # fmt: skip
        return self._last().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        self._last().export_chrome_trace(path)
