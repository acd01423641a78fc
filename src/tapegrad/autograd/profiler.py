"""``tg.autograd.profiler``, as ``torch.autograd.profiler``: ``profile`` and
``record_function``.

Note [Profiler ranges]
torch's profiler lists every aten op; tapegrad's ops have no profiler hook (one would sit
on the per-op path, ``make_result``), so a profile here holds the ranges that
``record_function`` marks: ``with record_function("forward"):`` or ``@record_function(...)``.
Their times are wall clock in microseconds; a range's self time is its time minus that of
the ranges nested in it on the same thread. ``key_averages().table()`` prints torch's CPU
columns over those ranges. Outside a profile, ``record_function`` only checks one list.
"""

from __future__ import annotations

import contextlib
import threading
import time
import warnings

from .profiler_util import EventList, FunctionEvent

__all__ = ["profile", "record_function", "emit_nvtx", "emit_itt", "EventList", "FunctionEvent"]

_ACTIVE: list = []  # the profiles entered and not yet exited (any thread)
_LOCK = threading.Lock()


class record_function(contextlib.ContextDecorator):  # noqa: N801 - torch's name
    """Mark a named range for the active profiles (a context manager or a decorator).

    Args:
        name: the range's name in the profile.
        args: an optional string kept with the range (torch's ``args``).
    """

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self._profiles = ()

    def _recreate_cm(self):
        # A fresh range per decorated call, so recursion and threads do not share one.
        return type(self)(self.name, self.args)

    def __enter__(self):
        self._profiles = tuple(_ACTIVE)
        if self._profiles:
            self._start = time.perf_counter_ns()
        return self

    def __exit__(self, *exc):
        if self._profiles:
            end = time.perf_counter_ns()
            thread = threading.get_ident()
            for prof in self._profiles:
                prof._add(self.name, thread, self._start, end)
            self._profiles = ()
        return False


class profile:  # noqa: N801 - torch's name
    """Collect the ``record_function`` ranges run while it is active (Note [Profiler ranges]).

    Takes torch's keywords; device, memory, shape, stack and FLOP options record nothing
    more here (``use_cuda``/``use_device='cuda'`` warn that CUDA is not available, as a CPU
    build of torch does).

    >>> import tapegrad as tg
    >>> with tg.autograd.profiler.profile() as prof:
    ...     with tg.autograd.profiler.record_function("step"):
    ...         y = tg.ones(3) * 2
    >>> [(e.key, e.count) for e in prof.key_averages()]
    [('step', 1)]
    """

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None, acc_events=False,
                 custom_trace_id_callback=None, post_processing_timeout_s=None,
                 activity_filters=None):  # fmt: skip
        self.enabled = enabled
        if not enabled:
            return
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.acc_events = acc_events
        if use_cuda:
            warnings.warn(
                "The attribute `use_cuda` will be deprecated soon, please use "
                "``use_device = 'cuda'`` instead.",
                FutureWarning,
                stacklevel=2,
            )
            use_device = "cuda"
        if use_device == "cuda":
            from .. import cuda

            if not cuda.is_available():
                warnings.warn("CUDA is not available, disabling CUDA profiling", stacklevel=2)
                use_device = None
        self.use_device = use_device
        self.entered = False
        self.function_events = None
        self._raw: list = []
        self._origin = 0

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._raw = []
        self._origin = time.perf_counter_ns()
        with _LOCK:
            _ACTIVE.append(self)
        return self

    def __exit__(self, *exc):
        if not self.enabled:
            return False
        with _LOCK:
            if self in _ACTIVE:
                _ACTIVE.remove(self)
        self.function_events = self._build()
        return False

    def _add(self, name, thread, start, end):
        self._raw.append((name, thread, start, end))

    def _build(self) -> EventList:
        """Events in order of start, each linked to the innermost range enclosing it."""
        raw = sorted(self._raw, key=lambda r: (r[1], r[2], -r[3]))
        events = EventList()
        open_by_thread: dict = {}
        for i, (name, thread, start, end) in enumerate(raw):
            event = FunctionEvent(i, name, thread, (start - self._origin) / 1e3,
                                  (end - self._origin) / 1e3)  # fmt: skip
            stack = open_by_thread.setdefault(thread, [])
            while stack and stack[-1].time_range.end < event.time_range.end:
                stack.pop()
            if stack:
                event.cpu_parent = stack[-1]
                stack[-1].cpu_children.append(event)
            stack.append(event)
            events.append(event)
        events.sort(key=lambda e: e.time_range.start)
        return events

    def _finished(self) -> EventList:
        if not self.enabled:
            return EventList()
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self.function_events

    def events(self) -> EventList:
        return self._finished()

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False) -> EventList:  # fmt: skip
        return self._finished().key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self):
        return self._finished().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        return self._finished().self_cpu_time_total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False) -> str:  # fmt: skip
        return self._finished().table(
            sort_by=sort_by,
            row_limit=row_limit,
            max_name_column_width=max_name_column_width,
            header=header,
            top_level_events_only=top_level_events_only,
        )

    def export_chrome_trace(self, path: str) -> None:
        self._finished().export_chrome_trace(path)

    def __str__(self) -> str:
        return self.table() if self.function_events is not None else repr(self)


class emit_nvtx:  # noqa: N801 - torch's name
    """NVTX ranges for nvprof: needs CUDA, so entering raises as in a CPU build of torch."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.record_shapes = record_shapes

    def __enter__(self):
        if self.enabled:  # disabled: None, as torch's
            raise AssertionError("Torch not compiled with CUDA enabled")

    def __exit__(self, *exc):
        return False


class emit_itt:  # noqa: N801 - torch's name
    """Intel ITT ranges for VTune: tapegrad emits none; the block runs unchanged."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.record_shapes = record_shapes

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
