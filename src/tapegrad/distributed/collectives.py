"""Collectives on tensors, through mpi4py's buffer interface (no pickling).

Every collective works in place on the tensor's array, as torch.distributed does, and
bumps the tensor's version counter. An array MPI cannot send as it is (not C-contiguous,
or a dtype without an MPI type, such as float16 and bfloat16) goes through a staging
copy that is written back when the operation completes. ``async_op=True`` returns a
:class:`Work` whose ``wait()`` completes it.

Note [Collectives and the graph cache]
A collective is not a NumPy call, so ``tapegrad.jit.cache`` cannot replay it. Each
collective therefore reports itself as a read of the tensor into Python; a cached step
that calls one runs eagerly (with the cache's one-time warning) instead of replaying a
program that silently skips the communication.
"""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor, _notify_read
from ._mpi import mpi
from .process_group import resolve

__all__ = [
    "ReduceOp",
    "Work",
    "all_reduce",
    "reduce",
    "broadcast",
    "all_gather",
    "all_gather_into_tensor",
    "reduce_scatter_tensor",
    "gather",
    "scatter",
    "send",
    "recv",
    "isend",
    "irecv",
]


class ReduceOp:
    """How ``all_reduce``/``reduce``/``reduce_scatter_tensor`` combine values."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


def _mpi_op(op):
    MPI = mpi()
    table = {
        ReduceOp.SUM: MPI.SUM,
        ReduceOp.AVG: MPI.SUM,  # divided by the group size afterwards
        ReduceOp.PRODUCT: MPI.PROD,
        ReduceOp.MIN: MPI.MIN,
        ReduceOp.MAX: MPI.MAX,
        ReduceOp.BAND: MPI.BAND,
        ReduceOp.BOR: MPI.BOR,
        ReduceOp.BXOR: MPI.BXOR,
    }
    key = op.lower() if isinstance(op, str) else op
    if key not in table:
        raise ValueError(f"unknown reduce op {op!r}; use dist.ReduceOp.SUM, AVG, PRODUCT, MIN, MAX")
    return table[key], key


# dtypes MPI has no type for travel as float32 (exact for float16 and bfloat16 values).
_STAGED_KINDS = {"float16", "bfloat16"}


class _Buffer:
    """An array MPI can use for ``t``, and how to write results back into ``t``."""

    __slots__ = ("tensor", "array", "staged")

    def __init__(self, t: Tensor, name: str, write: bool):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}: expected a Tensor, got {type(t).__name__}")
        _notify_read(t, name)  # Note [Collectives and the graph cache]
        data = t._data
        self.tensor = t
        self.staged = data.dtype.name in _STAGED_KINDS or not data.flags.c_contiguous
        if data.dtype.name in _STAGED_KINDS:
            self.array = data.astype(np.float32)
        elif not data.flags.c_contiguous:
            self.array = np.ascontiguousarray(data)
        else:
            self.array = data
        if write and not data.flags.writeable:
            raise RuntimeError(f"{name}: the tensor's memory is read-only")

    def finish(self, scale=None):
        arr = self.array
        if scale is not None:
            if arr.dtype.kind in "fc":
                arr /= scale
            else:
                np.floor_divide(arr, scale, out=arr)
        if self.staged:
            self.tensor._data[...] = arr
        self.tensor._vc.value += 1


class Work:
    """An operation started with ``async_op=True``; ``wait()`` completes it."""

    def __init__(self, request, on_done=None):
        self._request = request
        self._on_done = on_done
        self._done = False
        self._result = None

    def is_completed(self) -> bool:
        if not self._done and self._request.Test():
            self._complete()
        return self._done

    def wait(self, timeout=None) -> bool:
        if not self._done:
            self._request.Wait()
            self._complete()
        return True

    def _complete(self):
        self._done = True
        if self._on_done is not None:
            self._result = self._on_done()

    def result(self):
        self.wait()
        return self._result

    def get_future(self):
        return self


def _run(comm_call, async_op, on_done):
    """Start the non-blocking MPI call ``comm_call()``; wait now unless ``async_op``."""
    work = Work(comm_call(), on_done)
    if async_op:
        return work
    work.wait()
    return None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Combine ``tensor`` across every rank of ``group``; every rank gets the result, in place."""
    pg = resolve(group)
    mop, key = _mpi_op(op)
    buf = _Buffer(tensor, "all_reduce", write=True)
    if key == ReduceOp.AVG and buf.array.dtype.kind not in "fc":
        raise RuntimeError(
            f"all_reduce: ReduceOp.AVG needs a floating tensor, got {buf.array.dtype}"
        )
    scale = pg.size() if key == ReduceOp.AVG else None
    MPI = mpi()
    return _run(
        lambda: pg.comm.Iallreduce(MPI.IN_PLACE, buf.array, op=mop),
        async_op,
        lambda: buf.finish(scale),
    )


def reduce(tensor, dst=0, op=ReduceOp.SUM, group=None, async_op=False):
    """Combine ``tensor`` across ranks into rank ``dst``'s tensor."""
    pg = resolve(group)
    mop, key = _mpi_op(op)
    buf = _Buffer(tensor, "reduce", write=True)
    root = _group_rank(pg, dst, "dst")
    MPI = mpi()
    mine = pg.rank() == root
    scale = pg.size() if key == ReduceOp.AVG and mine else None
    if mine:
        call = lambda: pg.comm.Ireduce(MPI.IN_PLACE, buf.array, op=mop, root=root)  # noqa: E731
    else:
        call = lambda: pg.comm.Ireduce(buf.array, None, op=mop, root=root)  # noqa: E731
    return _run(call, async_op, (lambda: buf.finish(scale)) if mine else None)


def broadcast(tensor, src=0, group=None, async_op=False):
    """Copy rank ``src``'s tensor into ``tensor`` on every rank."""
    pg = resolve(group)
    buf = _Buffer(tensor, "broadcast", write=True)
    root = _group_rank(pg, src, "src")
    return _run(lambda: pg.comm.Ibcast(buf.array, root=root), async_op, buf.finish)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fill ``tensor_list[r]`` with rank r's ``tensor``, on every rank."""
    pg = resolve(group)
    _check_list(tensor_list, pg.size(), tensor, "all_gather", "tensor_list")
    src = _Buffer(tensor, "all_gather", write=False)
    recv = np.empty((pg.size(),) + src.array.shape, src.array.dtype)

    def done():
        for t, part in zip(tensor_list, recv):
            t._data[...] = part
            t._vc.value += 1

    return _run(lambda: pg.comm.Iallgather(src.array, recv), async_op, done)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Concatenate every rank's ``input_tensor`` along dim 0 (or stack, when ``output_tensor``
    has one more dim) into ``output_tensor``."""
    pg = resolve(group)
    n = pg.size()
    inp = _Buffer(input_tensor, "all_gather_into_tensor", write=False)
    shape = inp.array.shape
    cat = (shape[0] * n,) + shape[1:] if shape else (n,)
    if output_tensor.shape not in (cat, (n,) + shape):
        raise ValueError(
            f"all_gather_into_tensor: output has shape {list(output_tensor.shape)}; expected "
            f"{list(cat)} (concatenated) or {[n, *shape]} (stacked) for input {list(shape)} "
            f"on {n} ranks"
        )
    if output_tensor.dtype != input_tensor.dtype:
        raise TypeError("all_gather_into_tensor: output and input must have the same dtype")
    out = _Buffer(output_tensor, "all_gather_into_tensor", write=True)
    return _run(lambda: pg.comm.Iallgather(inp.array, out.array), async_op, out.finish)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input`` across ranks and give rank r the r-th block (along dim 0) in ``output``."""
    pg = resolve(group)
    n = pg.size()
    mop, key = _mpi_op(op)
    inp = _Buffer(input, "reduce_scatter_tensor", write=False)
    out = _Buffer(output, "reduce_scatter_tensor", write=True)
    if inp.array.size != out.array.size * n or inp.array.dtype != out.array.dtype:
        raise ValueError(
            f"reduce_scatter_tensor: input {list(input.shape)} {input.dtype} must hold {n} "
            f"blocks of output {list(output.shape)} {output.dtype}"
        )
    scale = n if key == ReduceOp.AVG else None
    return _run(
        lambda: pg.comm.Ireduce_scatter_block(inp.array, out.array, op=mop),
        async_op,
        lambda: out.finish(scale),
    )


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """Collect every rank's ``tensor`` into ``gather_list`` on rank ``dst``."""
    pg = resolve(group)
    root = _group_rank(pg, dst, "dst")
    src = _Buffer(tensor, "gather", write=False)
    mine = pg.rank() == root
    if mine:
        _check_list(gather_list, pg.size(), tensor, "gather", "gather_list")
        recv = np.empty((pg.size(),) + src.array.shape, src.array.dtype)
    elif gather_list:
        raise ValueError("gather: gather_list must be given only on the destination rank")
    else:
        recv = None

    def done():
        if mine:
            for t, part in zip(gather_list, recv):
                t._data[...] = part
                t._vc.value += 1

    return _run(lambda: pg.comm.Igather(src.array, recv, root=root), async_op, done)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """Give rank r ``scatter_list[r]`` of rank ``src``, in ``tensor``."""
    pg = resolve(group)
    root = _group_rank(pg, src, "src")
    out = _Buffer(tensor, "scatter", write=True)
    if pg.rank() == root:
        _check_list(scatter_list, pg.size(), tensor, "scatter", "scatter_list")
        send_arr = np.ascontiguousarray(
            np.stack([t._data for t in scatter_list]).astype(out.array.dtype, copy=False)
        )
    elif scatter_list:
        raise ValueError("scatter: scatter_list must be given only on the source rank")
    else:
        send_arr = None
    return _run(lambda: pg.comm.Iscatter(send_arr, out.array, root=root), async_op, out.finish)


def send(tensor, dst, group=None, tag=0):
    """Send ``tensor`` to rank ``dst`` (blocks until it can be reused)."""
    isend(tensor, dst, group, tag).wait()


def recv(tensor, src=None, group=None, tag=0):
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns the sender."""
    work = irecv(tensor, src, group, tag)
    work.wait()
    return work._result


def isend(tensor, dst, group=None, tag=0) -> Work:
    pg = resolve(group)
    buf = _Buffer(tensor, "send", write=False)
    peer = _group_rank(pg, dst, "dst")
    return Work(pg.comm.Isend(buf.array, dest=peer, tag=tag))


def irecv(tensor, src=None, group=None, tag=0) -> Work:
    pg = resolve(group)
    MPI = mpi()
    buf = _Buffer(tensor, "recv", write=True)
    peer = MPI.ANY_SOURCE if src is None else _group_rank(pg, src, "src")
    status = MPI.Status()
    request = pg.comm.Irecv(buf.array, source=peer, tag=tag)

    def done():
        buf.finish()
        return status.Get_source()

    return Work(_StatusRequest(request, status), done)


class _StatusRequest:
    """A receive request that records the sender in ``status`` when it completes."""

    def __init__(self, request, status):
        self._request = request
        self._status = status

    def Test(self):
        return self._request.Test(self._status)

    def Wait(self):
        return self._request.Wait(self._status)


def _group_rank(pg, rank, what) -> int:
    rank = int(rank)
    if not 0 <= rank < pg.size():
        raise ValueError(f"{what}={rank} is not a rank of a group of size {pg.size()}")
    return rank


def _check_list(tensors, n, like, op, name):
    if tensors is None or len(tensors) != n:
        got = "None" if tensors is None else f"{len(tensors)} tensors"
        raise ValueError(f"{op}: {name} must hold one tensor per rank ({n}), got {got}")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {name} must hold Tensors, got {type(t).__name__}")
        if t.shape != like.shape or t.dtype != like.dtype:
            raise ValueError(
                f"{op}: every tensor of {name} must have the input's shape {list(like.shape)} "
                f"and dtype {like.dtype}, got {list(t.shape)} {t.dtype}"
            )
