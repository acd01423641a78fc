"""The process group: ``init_process_group`` over MPI, ranks, barriers, groups, failure handling.

Note [Distributed failure]
An uncaught exception on one rank must not leave the others blocked forever in a
collective. ``init_process_group`` therefore installs a ``sys.excepthook`` that prints the
rank and the error to stderr and calls ``MPI.COMM_WORLD.Abort``, which ends every rank
of the job (mpiexec then exits non-zero). The hook waits a moment between writing and
aborting: the abort kills mpiexec's I/O forwarders too, and under load they had not yet
passed the message on (the job then ended with an empty stderr). Joining the group itself
is guarded by a timeout: a non-blocking barrier is polled until every rank has arrived.
"""

from __future__ import annotations

import datetime
import os
import sys
import time
import traceback

from ._mpi import INSTALL_HINT, available, mpi

__all__ = [
    "ProcessGroup",
    "GroupMember",
    "group",
    "init_process_group",
    "destroy_process_group",
    "is_available",
    "is_initialized",
    "is_mpi_available",
    "get_rank",
    "get_world_size",
    "get_backend",
    "barrier",
    "new_group",
    "DEFAULT_TIMEOUT",
]

#: How long ``init_process_group`` waits for every rank (``TAPEGRAD_DIST_TIMEOUT`` seconds
#: overrides it), as ``datetime.timedelta``.
DEFAULT_TIMEOUT = datetime.timedelta(seconds=float(os.environ.get("TAPEGRAD_DIST_TIMEOUT", 300)))

_BACKENDS = ("mpi", "gloo")  # gloo is accepted for ported scripts: it runs on MPI here


class ProcessGroup:
    """A set of ranks that run collectives together: a wrapper of an MPI communicator."""

    def __init__(self, comm, ranks=None):
        self.comm = comm
        self.ranks = list(range(comm.Get_size())) if ranks is None else list(ranks)

    def rank(self) -> int:
        return self.comm.Get_rank()

    def size(self) -> int:
        return self.comm.Get_size()

    def __repr__(self) -> str:
        return f"ProcessGroup(backend='mpi', rank={self.rank()}, size={self.size()})"


class _World:
    """``dist.group.WORLD``: resolves to the default group once it exists."""

    WORLD = None


group = _World()
GroupMember = group

ABORT_GRACE_SECONDS = 0.5
_STATE = {"world": None, "excepthook": None}


def is_available() -> bool:
    """Whether distributed training can run here (mpi4py is importable)."""
    return available()


def is_mpi_available() -> bool:
    return available()


def is_initialized() -> bool:
    return _STATE["world"] is not None


def init_process_group(
    backend=None,
    init_method=None,
    timeout=None,
    world_size: int = -1,
    rank: int = -1,
    store=None,
    group_name: str = "",
    pg_options=None,
    device_id=None,
) -> None:
    """Join the default process group: every process started by ``mpiexec -n N``.

    Rank and world size come from MPI; ``world_size``/``rank``, when given (as torch
    scripts do, often from ``RANK``/``WORLD_SIZE``), must agree with it. ``init_method``
    and ``store`` are accepted for ported scripts and unused: MPI already knows its peers.

    Args:
        backend: ``"mpi"`` (default) or ``"gloo"`` (runs on MPI too). ``"nccl"`` needs
            CUDA, which tapegrad does not run on.
        timeout: ``datetime.timedelta`` (or seconds) to wait for every rank to join.

    Raises:
        RuntimeError: mpi4py is missing (says how to install it), the group is already
            initialised, or not every rank joined within ``timeout``.
        ValueError: an unknown backend, or ``rank``/``world_size`` that disagree with MPI.
    """
    if backend is not None:
        name = str(backend).lower()
        if name == "nccl":
            raise ValueError(
                "init_process_group: backend 'nccl' needs CUDA GPUs; tapegrad runs on CPUs "
                "over MPI: use backend='mpi' (or omit it)"
            )
        if name not in _BACKENDS:
            raise ValueError(
                f"init_process_group: unknown backend {backend!r}; tapegrad supports 'mpi'"
            )
    if is_initialized():
        raise RuntimeError("trying to initialize the default process group twice")
    if not available():
        raise RuntimeError(INSTALL_HINT)
    MPI = mpi()
    comm = MPI.COMM_WORLD
    if world_size not in (-1, None) and int(world_size) != comm.Get_size():
        raise ValueError(
            f"init_process_group: world_size={world_size} but MPI started "
            f"{comm.Get_size()} process(es); launch with `mpiexec -n {world_size} python ...` "
            "or `python -m tapegrad.distributed.run -n {world_size} ...`"
        )
    if rank not in (-1, None) and int(rank) != comm.Get_rank():
        raise ValueError(
            f"init_process_group: rank={rank} but MPI gave this process rank {comm.Get_rank()}; "
            "with MPI the launcher assigns ranks (omit rank=)"
        )
    _join(comm, _seconds(timeout))
    world = ProcessGroup(comm)
    _STATE["world"] = world
    group.WORLD = world
    if comm.Get_size() > 1:
        _install_abort_hook(comm)


def _seconds(timeout) -> float:
    if timeout is None:
        timeout = DEFAULT_TIMEOUT
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


def _join(comm, seconds: float) -> None:
    """A barrier that gives up after ``seconds`` (Note [Distributed failure])."""
    request = comm.Ibarrier()
    deadline = time.monotonic() + seconds
    pause = 1e-4
    while not request.Test():
        if time.monotonic() > deadline:
            print(
                f"tapegrad.distributed: rank {comm.Get_rank()} of {comm.Get_size()}: not every "
                f"rank joined init_process_group within {seconds:g} s; aborting the job",
                file=sys.stderr,
                flush=True,
            )
            time.sleep(ABORT_GRACE_SECONDS)
            comm.Abort(1)
            raise RuntimeError("init_process_group timed out")  # pragma: no cover
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _install_abort_hook(comm) -> None:
    previous = sys.excepthook

    def abort_on_uncaught(kind, value, tb):
        text = "".join(traceback.format_exception(kind, value, tb))
        sys.stderr.write(
            f"tapegrad.distributed: rank {comm.Get_rank()} of {comm.Get_size()} raised an "
            f"uncaught exception; aborting the job so the other ranks do not hang:\n{text}"
        )
        sys.stderr.flush()
        time.sleep(ABORT_GRACE_SECONDS)  # let mpiexec forward the message before the abort
        comm.Abort(1)

    _STATE["excepthook"] = previous
    sys.excepthook = abort_on_uncaught


def destroy_process_group(group=None) -> None:
    """Leave the default group (MPI itself stays initialised until the process exits)."""
    if group is not None and group is not _STATE["world"]:
        comm = group.comm
        if comm is not mpi().COMM_WORLD:
            comm.Free()
        return
    if _STATE["world"] is None:
        return
    previous = _STATE["excepthook"]
    if previous is not None:
        sys.excepthook = previous
        _STATE["excepthook"] = None
    _STATE["world"] = None
    globals()["group"].WORLD = None


def default_group() -> ProcessGroup:
    world = _STATE["world"]
    if world is None:
        raise RuntimeError(
            "Default process group has not been initialized, please make sure to call "
            "init_process_group (launch with `mpiexec -n N python script.py`)"
        )
    return world


def resolve(group) -> ProcessGroup:
    if group is None or group is GroupMember.WORLD:
        return default_group()
    return group


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (the default group when omitted)."""
    return resolve(group).rank()


def get_world_size(group=None) -> int:
    return resolve(group).size()


def get_backend(group=None) -> str:
    resolve(group)
    return "mpi"


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Block until every rank of ``group`` reaches this call."""
    comm = resolve(group).comm
    if async_op:
        from .collectives import Work  # noqa: PLC0415

        return Work(comm.Ibarrier())
    comm.Barrier()
    return None


def new_group(
    ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False
):
    """A group of some ranks of the default group. Every rank must call it (as in torch);
    ranks outside ``ranks`` get ``GroupMember.NON_GROUP_MEMBER`` (None)."""
    world = default_group()
    if ranks is None:
        return ProcessGroup(world.comm.Dup())
    ranks = sorted(int(r) for r in ranks)
    for r in ranks:
        if not 0 <= r < world.size():
            raise ValueError(f"new_group: rank {r} is not in the world of size {world.size()}")
    sub = world.comm.Create_group(world.comm.Get_group().Incl(ranks))
    if sub == mpi().COMM_NULL:
        return None
    return ProcessGroup(sub, ranks)


GroupMember.NON_GROUP_MEMBER = None
