"""DistributedDataParallel: one model replica per rank, gradients averaged in buckets.

Note [DDP buckets]
At construction the parameters that require grad are grouped, in reverse order of
registration (backward produces the last layers' gradients first), into buckets of about
``bucket_cap_mb`` of one dtype each; every bucket owns one flat array. Each parameter gets
a post-accumulate-grad hook: when its gradient has been accumulated into ``.grad`` the
hook copies it into its slice of the bucket, and when the last parameter of a bucket is
ready the bucket's non-blocking ``Iallreduce`` starts, so communication overlaps the rest
of backward (each later hook also gives MPI a chance to progress the requests in flight).
At the end of ``backward()`` (engine.queue_callback) every request is waited for, the
sums are divided by the world size, and each ``.grad`` receives the average.

A parameter that took no part in the loss never fires its hook, so its bucket would never
start. With ``find_unused_parameters=True`` the forward pass walks the output's graph and
marks the parameters it does not reach as ready at once (their slice holds zeros, or the
gradient already in ``.grad``); without it, backward ends with an error naming them, as in
torch, and the job aborts (Note [Distributed failure]) instead of hanging the other ranks.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np

from ... import distributed as dist
from ...autograd import engine
from ...autograd.graph import iter_graph
from ...grad_mode import is_grad_enabled
from ...tensor import Tensor, _notify_read
from ..module import Module

__all__ = ["DistributedDataParallel"]


class _Bucket:
    __slots__ = ("params", "offsets", "flat", "pending", "request", "ready", "used")

    def __init__(self, params, dtype):
        self.params = params
        sizes = [p._data.size for p in params]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.flat = np.zeros(int(self.offsets[-1]), dtype)
        self.pending = len(params)
        self.request = None
        self.ready = np.zeros(len(params), bool)
        self.used = np.zeros(len(params), np.int8)


class DistributedDataParallel(Module):
    """Wrap ``module`` so that ``backward()`` leaves every rank with the averaged gradients.

    Args:
        module: the model; ranks must build the same architecture.
        broadcast_buffers: copy rank 0's buffers (BatchNorm statistics) before each forward.
        bucket_cap_mb: bucket size in MiB (Note [DDP buckets]).
        find_unused_parameters: tolerate parameters that some forward passes do not use.
        process_group: the group to average over (default: every rank).
        device_ids, output_device, dim, gradient_as_bucket_view, static_graph: accepted for
            ported scripts (CPU only; gradients are copied out of the buckets).

    Use it as torch's: ``model = DDP(model)``, then ``loss = lossfn(model(x), y)``,
    ``loss.backward()``, ``opt.step()``; ``with model.no_sync():`` accumulates gradients
    locally for a few micro-batches, and the next synchronised backward averages the sum.
    Under ``tapegrad.jit.cache`` a DDP step runs eagerly (Note [Collectives and the graph
    cache]): the cache cannot replay MPI calls, and never replays a step that skips them.
    """

    def __init__(
        self,
        module: Module,
        device_ids=None,
        output_device=None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        process_group=None,
        bucket_cap_mb: float = 25,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
        **kwargs,
    ):
        super().__init__()
        if not dist.is_initialized():
            raise RuntimeError(
                "DistributedDataParallel: the default process group has not been initialized; "
                "call tapegrad.distributed.init_process_group() first"
            )
        self.module = module
        self.process_group = process_group
        self.dim = dim  # torch's attribute (the scatter dim of its device_ids path)
        self.broadcast_buffers = bool(broadcast_buffers)
        self.find_unused_parameters = bool(find_unused_parameters)
        self.require_backward_grad_sync = True
        self.bucket_bytes_cap = int(bucket_cap_mb * 1024 * 1024)
        object.__setattr__(self, "_world", dist.get_world_size(process_group))
        object.__setattr__(self, "_buckets", [])
        object.__setattr__(self, "_where", {})
        object.__setattr__(self, "_armed", False)
        object.__setattr__(self, "_queued", False)
        object.__setattr__(self, "_handles", [])
        object.__setattr__(self, "stats", {"allreduce_bytes": 0, "steps": 0, "wait_seconds": 0.0})
        self._sync_module_states()
        self._build_buckets()

    # -- construction --------------------------------------------------------------------

    def _sync_module_states(self) -> None:
        """Copy rank 0's parameters and buffers to every rank (one broadcast per dtype)."""
        tensors = [p for p in self.module.parameters()] + [b for b in self.module.buffers()]
        _broadcast_coalesced(tensors, self.process_group)

    def _build_buckets(self) -> None:
        params = [p for p in self.module.parameters() if p.requires_grad]
        seen = set()
        unique = []
        for p in params:
            if id(p) not in seen:
                seen.add(id(p))
                unique.append(p)
        groups = {}
        for p in reversed(unique):  # backward produces the last layers' gradients first
            groups.setdefault(p._data.dtype, []).append(p)
        for dtype, members in groups.items():
            current, size = [], 0
            for p in members:
                nbytes = p._data.nbytes
                if current and size + nbytes > self.bucket_bytes_cap:
                    self._buckets.append(_Bucket(current, dtype))
                    current, size = [], 0
                current.append(p)
                size += nbytes
            if current:
                self._buckets.append(_Bucket(current, dtype))
        for b, bucket in enumerate(self._buckets):
            for i, p in enumerate(bucket.params):
                self._where[id(p)] = (b, i)
                self._handles.append(p.register_post_accumulate_grad_hook(self._on_grad_ready))

    # -- forward ---------------------------------------------------------------------------

    def forward(self, *inputs, **kwargs):
        if self._armed and self._queued:
            self._finish_reduction()  # a backward that never ended (e.g. it raised)
        if self.broadcast_buffers and self.training:
            buffers = list(self.module.buffers())
            if buffers:
                # torch syncs them under _unsafe_preserve_version_counter: no version bump
                versions = [b._vc.value for b in buffers]
                _broadcast_coalesced(buffers, self.process_group)
                for b, v in zip(buffers, versions, strict=True):
                    b._vc.value = v
        output = self.module(*inputs, **kwargs)
        if is_grad_enabled() and self.require_backward_grad_sync and self._buckets:
            self._arm(output)
        return output

    def _arm(self, output) -> None:
        for bucket in self._buckets:
            bucket.pending = len(bucket.params)
            bucket.request = None
            bucket.ready[:] = False
            bucket.used = np.zeros(len(bucket.params), np.int8)
        object.__setattr__(self, "_armed", True)
        object.__setattr__(self, "_queued", False)
        if self.find_unused_parameters:
            reached = set()
            for node in iter_graph(_tensors_in(output)):
                variable = getattr(node, "variable", None)
                if variable is not None:
                    reached.add(id(variable))
            for bucket in self._buckets:
                for i, p in enumerate(bucket.params):
                    if id(p) not in reached:
                        self._mark_ready(bucket, i, p, used=False)

    # -- backward ----------------------------------------------------------------------------

    def _on_grad_ready(self, param: Tensor) -> None:
        if not self._armed or not self.require_backward_grad_sync:
            return
        _notify_read(param, "DistributedDataParallel all-reduce")  # jit: run this step eagerly
        if not self._queued:
            engine.queue_callback(self._finish_reduction)
            object.__setattr__(self, "_queued", True)
        b, i = self._where[id(param)]
        bucket = self._buckets[b]
        if bucket.ready[i]:
            return  # a second accumulation in the same backward: _start refreshes the slice
        self._mark_ready(bucket, i, param, used=True)
        for other in self._buckets:  # let MPI progress the requests in flight
            if other.request is not None:
                other.request.Test()

    def _mark_ready(self, bucket, i, param, used: bool) -> None:
        lo, hi = bucket.offsets[i], bucket.offsets[i + 1]
        grad = param.grad
        if grad is None:
            bucket.flat[lo:hi] = 0
        else:
            bucket.flat[lo:hi] = grad._data.reshape(-1)
        bucket.ready[i] = True
        bucket.used[i] = 1 if used else 0
        bucket.pending -= 1
        if bucket.pending == 0:
            self._start(bucket)

    def _start(self, bucket) -> None:
        MPI = dist._mpi.mpi()
        comm = dist.process_group.resolve(self.process_group).comm
        # Refresh the slices: a parameter used twice in one backward accumulates twice.
        for i, p in enumerate(bucket.params):
            if bucket.used[i] and p.grad is not None:
                bucket.flat[bucket.offsets[i] : bucket.offsets[i + 1]] = p.grad._data.reshape(-1)
        bucket.request = comm.Iallreduce(MPI.IN_PLACE, bucket.flat, op=MPI.SUM)
        self.stats["allreduce_bytes"] += bucket.flat.nbytes
        if self.find_unused_parameters:  # which parameters some rank used
            bucket.request = _Both(
                bucket.request, comm.Iallreduce(MPI.IN_PLACE, bucket.used, op=MPI.MAX)
            )

    def _finish_reduction(self) -> None:
        if not self._armed:
            return
        object.__setattr__(self, "_armed", False)
        missing = []
        for name, p in self.module.named_parameters():
            where = self._where.get(id(p))
            if where is not None and not self._buckets[where[0]].ready[where[1]]:
                missing.append(name)
        if missing:
            raise RuntimeError(
                "DistributedDataParallel: backward finished without gradients for parameters "
                f"{missing}, so their bucket's all-reduce never started (the other ranks would "
                "wait for it forever). Pass find_unused_parameters=True if some parameters "
                "do not take part in every forward pass."
            )
        scale = float(self._world)
        start = time.perf_counter()
        for bucket in self._buckets:
            bucket.request.Wait()
        self.stats["wait_seconds"] += time.perf_counter() - start  # communication not hidden
        for bucket in self._buckets:
            bucket.request = None
            bucket.flat /= scale
            for i, p in enumerate(bucket.params):
                if self.find_unused_parameters and not bucket.used[i]:
                    continue  # used on no rank: leave .grad as it is
                view = bucket.flat[bucket.offsets[i] : bucket.offsets[i + 1]].reshape(p.shape)
                if p.grad is None:
                    p.grad = Tensor._wrap(view.copy())
                else:
                    p.grad._data[...] = view
                    p.grad._vc.value += 1
        self.stats["steps"] += 1

    # -- user API --------------------------------------------------------------------------

    @contextlib.contextmanager
    def no_sync(self):
        """Accumulate gradients locally inside the block; the first synchronised backward
        after it averages the accumulated sums."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous


class _Both:
    """Two requests that complete together."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def Test(self):
        return self.a.Test() and self.b.Test()

    def Wait(self):
        self.a.Wait()
        self.b.Wait()


def _tensors_in(output):
    if isinstance(output, Tensor):
        return [output] if output.grad_fn is not None else []
    if isinstance(output, dict):
        output = list(output.values())
    if isinstance(output, (list, tuple)):
        found = []
        for item in output:
            found.extend(_tensors_in(item))
        return found
    return []


def _broadcast_coalesced(tensors, group) -> None:
    """Broadcast ``tensors`` from rank 0 with one message per dtype. Each non-empty tensor
    is written in place (one version; torch copies empty ones back not at all)."""
    by_dtype = {}
    for t in tensors:
        by_dtype.setdefault(t._data.dtype, []).append(t)
    comm = dist.process_group.resolve(group).comm
    for dtype, ts in by_dtype.items():
        if dtype.name in ("float16", "bfloat16"):
            for t in ts:
                if t._data.size:  # every rank holds the same shapes
                    dist.broadcast(t, 0, group)
            continue
        flat = np.concatenate([t._data.reshape(-1) for t in ts]) if ts else np.empty(0, dtype)
        comm.Bcast(flat, root=0)
        offset = 0
        for t in ts:
            n = t._data.size
            if n:
                t._data[...] = flat[offset : offset + n].reshape(t._data.shape)
                t._vc.value += 1
            offset += n
