"""The event lists of ``tg.autograd.profiler``, as ``torch.autograd.profiler_util``:
``FunctionEvent`` (one timed range), ``FunctionEventAvg`` (ranges grouped by name) and
``EventList`` with ``key_averages()``, ``table()`` and ``export_chrome_trace()``.
Times are in microseconds of wall clock, as torch's CPU times."""

from __future__ import annotations

import json

__all__ = ["Interval", "FunctionEvent", "FunctionEventAvg", "EventList"]


def _format_time(time_us: float) -> str:
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_share(time_us: float, total_us: float) -> str:
    return "NaN" if total_us == 0 else f"{time_us * 100.0 / total_us:.2f}%"


class Interval:
    """``[start, end]`` in microseconds since the profile began."""

    def __init__(self, start: float, end: float):
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        return self.end - self.start


class _Times:
    """The ``*_str`` spellings of the times, shared by events and averages."""

    @property
    def cpu_time_total_str(self) -> str:
        return _format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self) -> str:
        return _format_time(self.self_cpu_time_total)

    @property
    def cpu_time(self) -> float:
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def cpu_time_str(self) -> str:
        return _format_time(self.cpu_time)

    # No device: every device time is 0, as torch's CPU-only profiles.
    device_time_total = self_device_time_total = device_time = cuda_time = 0.0
    cpu_memory_usage = self_cpu_memory_usage = device_memory_usage = 0
    self_device_memory_usage = 0
    flops = 0
    is_async = is_remote = is_legacy = False
    node_id = -1


class FunctionEvent(_Times):
    """One ``record_function`` range: its name, thread, interval and nested children."""

    def __init__(self, id, name, thread, start_us, end_us):  # noqa: A002 - torch's name
        self.id = id
        self.name = self.key = name
        self.thread = thread
        self.time_range = Interval(start_us, end_us)
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.count = 1
        self.input_shapes: list = []
        self.stack: list = []
        self.scope = 0
        self.is_user_annotation = True

    @property
    def cpu_time_total(self) -> float:
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    def __repr__(self) -> str:
        return (
            f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
            f"cpu_time={self.cpu_time_str} start_us={self.time_range.start:.3f} "
            f"end_us={self.time_range.end:.3f} cpu_children={[c.id for c in self.cpu_children]}>"
        )


class FunctionEventAvg(_Times):
    """Events of one key summed: ``count``, ``cpu_time_total``, ``self_cpu_time_total``."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.input_shapes = None
        self.stack = None
        self.cpu_parent = None
        self.cpu_children = None

    def add(self, other) -> FunctionEventAvg:
        if self.key is None:
            self.key = other.key
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self) -> str:
        return (
            f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
            f"cpu_time={self.cpu_time_str} count={self.count}>"
        )


class EventList(list):
    """A list of events with torch's summaries."""

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False) -> EventList:  # fmt: skip
        """One ``FunctionEventAvg`` per event name, in order of first appearance."""
        groups: dict = {}
        for event in self:
            groups.setdefault(event.key, FunctionEventAvg()).add(event)
        return EventList(groups.values())

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg()
        for event in self:
            total.add(event)
        total.key = "Total"
        return total

    @property
    def self_cpu_time_total(self) -> float:
        return sum(event.self_cpu_time_total for event in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None) -> str:  # fmt: skip
        """torch's CPU columns: Name, Self CPU %, Self CPU, CPU total %, CPU total,
        CPU time avg, # of Calls; sorted by the attribute ``sort_by`` (descending)."""
        events = list(self)
        if sort_by is not None:
            events.sort(key=lambda e: getattr(e, sort_by), reverse=True)
        # torch sizes the Name column over every event, then skips nested ones
        name_width = min(max([len(str(e.key)) for e in events] + [4]) + 4, max_name_column_width)
        if top_level_events_only:
            events = [e for e in events if e.cpu_parent is None]
        if row_limit is not None and row_limit >= 0:
            events = events[:row_limit]
        total = self.self_cpu_time_total
        heads = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                 "# of Calls"]  # fmt: skip
        line = "-" * name_width + "  " + "  ".join("-" * 12 for _ in heads) + "  "
        rows = [line, f"{'Name':>{name_width}}  " + "".join(f"{h:>12}  " for h in heads), line]
        for e in events:
            name = str(e.key)
            if len(name) >= max_name_column_width - 3:  # torch's test, torch's cut
                name = name[: max_name_column_width - 3] + "..."
            cells = [
                _format_share(e.self_cpu_time_total, total),
                e.self_cpu_time_total_str,
                _format_share(e.cpu_time_total, total),
                e.cpu_time_total_str,
                e.cpu_time_str,
                str(e.count),
            ]
            rows.append(f"{name:>{name_width}}  " + "".join(f"{c:>12}  " for c in cells))
        rows += [line, f"Self CPU time total: {_format_time(total)}", ""]
        if top_level_events_only:
            rows = [
                "=" * (len(line) - 2),
                "This report only display top-level ops statistics",
            ] + rows
        if header is not None:
            rows = ["=" * (len(line) - 2), header] + rows
        return "\n".join(rows)

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as Chrome trace JSON (``chrome://tracing``, Perfetto)."""
        trace = [
            {
                "name": e.name,
                "ph": "X",
                "ts": e.time_range.start,
                "dur": e.cpu_time_total,
                "tid": e.thread,
                "pid": "CPU functions",
                "args": {},
            }
            for e in self
        ]
        with open(path, "w") as f:
            json.dump({"traceEvents": trace}, f)

    def __str__(self) -> str:
        return self.table()
