"""Run under mpiexec -n N: every collective against what NumPy says it must give."""

import os

import numpy as np

import tapegrad as tg
import tapegrad.distributed as dist

dist.init_process_group(backend="mpi")
r, n = dist.get_rank(), dist.get_world_size()
# what test_launcher_runs_a_script reads (one write: ranks sharing a pipe cannot split it)
os.write(1, f"hello from {r} of {n}\n".encode())
assert dist.is_initialized() and dist.get_backend() == "mpi"
values = [np.arange(6, dtype=np.float64).reshape(2, 3) * (k + 1) + k for k in range(n)]
mine = values[r]


def check(got, want, what):
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, err_msg=f"{what} rank {r}")


for op, ref in [
    (dist.ReduceOp.SUM, sum(values)),
    (dist.ReduceOp.AVG, sum(values) / n),
    (dist.ReduceOp.MAX, np.max(values, axis=0)),
    (dist.ReduceOp.MIN, np.min(values, axis=0)),
    (dist.ReduceOp.PRODUCT, np.prod(values, axis=0)),
]:
    t = tg.tensor(mine)
    v0 = t._version
    dist.all_reduce(t, op=op)
    check(t, ref, f"all_reduce {op}")
    assert t._version > v0
    t = tg.tensor(mine)
    work = dist.all_reduce(t, op=op, async_op=True)
    work.wait()
    assert work.is_completed()
    check(t, ref, f"async all_reduce {op}")

# integers, float32, a non-contiguous tensor, float16
ti = tg.tensor(np.arange(4) + r)
dist.all_reduce(ti)
check(ti, sum(np.arange(4) + k for k in range(n)), "int all_reduce")
assert ti.dtype == np.int64
tt = tg.tensor(np.arange(12, dtype=np.float32).reshape(3, 4) + r).T
dist.all_reduce(tt)
check(tt, sum((np.arange(12).reshape(3, 4) + k).T for k in range(n)), "transposed all_reduce")
th = tg.tensor(np.ones(3, np.float16) * (r + 1))
dist.all_reduce(th)
check(th, np.full(3, n * (n + 1) / 2), "float16 all_reduce")
assert th.dtype == np.float16

# reduce to the last rank
t = tg.tensor(mine)
dist.reduce(t, dst=n - 1)
if r == n - 1:
    check(t, sum(values), "reduce")
else:
    check(t, mine, "reduce leaves non-destination ranks alone")

# broadcast from the last rank
t = tg.tensor(mine)
dist.broadcast(t, src=n - 1)
check(t, values[-1], "broadcast")

# all_gather and all_gather_into_tensor (concatenated and stacked)
outs = [tg.zeros(2, 3, dtype=tg.float64) for _ in range(n)]
dist.all_gather(outs, tg.tensor(mine))
for k in range(n):
    check(outs[k], values[k], "all_gather")
cat = tg.zeros(2 * n, 3, dtype=tg.float64)
dist.all_gather_into_tensor(cat, tg.tensor(mine))
check(cat, np.concatenate(values), "all_gather_into_tensor")
stacked = tg.zeros(n, 2, 3, dtype=tg.float64)
dist.all_gather_into_tensor(stacked, tg.tensor(mine))
check(stacked, np.stack(values), "all_gather_into_tensor stacked")

# reduce_scatter_tensor: rank k gets block k of the sum
big = [np.arange(n * 2, dtype=np.float64).reshape(n, 2) * (k + 1) for k in range(n)]
out = tg.zeros(2, dtype=tg.float64)
dist.reduce_scatter_tensor(out, tg.tensor(big[r].reshape(-1)))
check(out, sum(big)[r], "reduce_scatter_tensor")

# gather / scatter with root 0
t = tg.tensor(mine)
lst = [tg.zeros(2, 3, dtype=tg.float64) for _ in range(n)] if r == 0 else None
dist.gather(t, lst, dst=0)
if r == 0:
    for k in range(n):
        check(lst[k], values[k], "gather")
got = tg.zeros(2, 3, dtype=tg.float64)
dist.scatter(got, [tg.tensor(v) for v in values] if r == 0 else None, src=0)
check(got, values[r], "scatter")

# send/recv in a ring, and isend/irecv
right, left = (r + 1) % n, (r - 1) % n
buf = tg.zeros(2, 3, dtype=tg.float64)
if r % 2 == 0:
    dist.send(tg.tensor(mine), dst=right)
    sender = dist.recv(buf, src=left)
else:
    sender = dist.recv(buf, src=left)
    dist.send(tg.tensor(mine), dst=right)
assert sender == left
check(buf, values[left], "send/recv")
buf2 = tg.zeros(2, 3, dtype=tg.float64)
reqs = [dist.isend(tg.tensor(mine), dst=right, tag=7), dist.irecv(buf2, src=None, tag=7)]
for w in reqs:
    w.wait()
check(buf2, values[left], "isend/irecv")

# barrier, a subgroup, errors
dist.barrier()
dist.barrier(async_op=True).wait()
sub = dist.new_group([0, 1])
if r in (0, 1):
    t = tg.tensor(mine)
    dist.all_reduce(t, group=sub)
    check(t, values[0] + values[1], "subgroup all_reduce")
    assert dist.get_world_size(sub) == 2
else:
    assert sub is None
try:
    dist.all_gather([tg.zeros(1)], tg.zeros(2))
except ValueError as e:
    assert "one tensor per rank" in str(e)
else:
    raise AssertionError("all_gather accepted a list of the wrong length")
try:
    dist.all_reduce(tg.tensor([1, 2]), op=dist.ReduceOp.AVG)
except RuntimeError as e:
    assert "floating" in str(e)
else:
    raise AssertionError("AVG on integers accepted")
dist.destroy_process_group()
assert not dist.is_initialized()
print(f"rank {r}: collectives OK", flush=True)
