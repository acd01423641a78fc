"""Run under mpiexec -n N: DDP on 1/N of the batch per rank equals training on all of it."""

import sys

import numpy as np

import tapegrad as tg
import tapegrad.distributed as dist
from tapegrad import nn
from tapegrad.nn.parallel import DDP, DistributedDataParallel

dist.init_process_group()
r, n = dist.get_rank(), dist.get_world_size()

# DistributedSampler takes its rank and world size from the process group.
from tapegrad.utils.data.distributed import DistributedSampler  # noqa: E402

sampler = DistributedSampler(list(range(10)), shuffle=False)
assert (sampler.num_replicas, sampler.rank) == (n, r)
total = -(-10 // n) * n  # padded with the first indices, as torch
assert list(sampler) == (list(range(10)) + list(range(10))[: total - 10])[r:total:n]
cap = float(sys.argv[1]) if len(sys.argv) > 1 else 25.0


def make_model(seed):
    tg.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3)
    )


rng = np.random.default_rng(0)
X = rng.standard_normal((20, 12 * n, 5)).astype(np.float32)
Y = rng.standard_normal((20, 12 * n, 3)).astype(np.float32)

# Reference: one process, whole batch.
ref = make_model(100)  # rank 0 init, which DDP broadcasts
ref_opt = tg.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
for x, y in zip(X, Y):
    ref_opt.zero_grad()
    nn.functional.mse_loss(ref(tg.tensor(x)), tg.tensor(y)).backward()
    ref_opt.step()

# DDP: each rank starts from a different init (rank 0's is broadcast) and sees 1/n of the batch.
model = DistributedDataParallel(make_model(100 + r), bucket_cap_mb=cap)
assert DDP is DistributedDataParallel
assert list(model.state_dict())[0].startswith("module.")
opt = tg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for x, y in zip(X, Y):
    part = slice(r * 12, (r + 1) * 12)
    opt.zero_grad()
    nn.functional.mse_loss(model(tg.tensor(x[part])), tg.tensor(y[part])).backward()
    opt.step()
for p, q in zip(model.module.parameters(), ref.parameters()):
    np.testing.assert_allclose(
        p.numpy() if not p.requires_grad else p.detach().numpy(),
        q.detach().numpy(),
        rtol=2e-5,
        atol=2e-6,
    )
buckets = len(model._buckets)
print(
    f"rank {r}: DDP 20 steps match 1-process training ({buckets} buckets, "
    f"{model.stats['allreduce_bytes']} bytes all-reduced)",
    flush=True,
)

# no_sync: two micro-batches, the first without sync, equal one synchronised step on both.
acc = DDP(make_model(7))
whole = make_model(7)
x, y = X[0], Y[0]
halves = [slice(r * 12, r * 12 + 6), slice(r * 12 + 6, (r + 1) * 12)]
with acc.no_sync():
    (nn.functional.mse_loss(acc(tg.tensor(x[halves[0]])), tg.tensor(y[halves[0]])) / 2).backward()
(nn.functional.mse_loss(acc(tg.tensor(x[halves[1]])), tg.tensor(y[halves[1]])) / 2).backward()
nn.functional.mse_loss(whole(tg.tensor(x)), tg.tensor(y)).backward()
for p, q in zip(acc.module.parameters(), whole.parameters()):
    np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=2e-5, atol=1e-6)
print(f"rank {r}: no_sync accumulation matches", flush=True)


# find_unused_parameters: rank 0 never uses the second head.
class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.a = nn.Linear(4, 1)
        self.b = nn.Linear(4, 1)

    def forward(self, x, use_b):
        h = self.body(x).tanh()
        return self.a(h) + self.b(h) if use_b else self.a(h)


tg.manual_seed(3)
heads = DDP(TwoHeads(), find_unused_parameters=True)
xs = tg.tensor(np.ones((2, 4), np.float32) * (r + 1))
heads(xs, use_b=(r != 0)).sum().backward()
# b's gradient is the average over ranks where rank 0 contributed zero.
tg.manual_seed(3)
alone = TwoHeads()
contrib = []
for k in range(n):
    alone.zero_grad()
    alone(tg.tensor(np.ones((2, 4), np.float32) * (k + 1)), use_b=(k != 0)).sum().backward()
    contrib.append(alone.b.weight.grad.numpy().copy() if alone.b.weight.grad is not None else 0)
np.testing.assert_allclose(heads.module.b.weight.grad.numpy(), sum(contrib) / n, rtol=1e-5)
print(f"rank {r}: find_unused_parameters OK", flush=True)

# Under tg.jit.cache a DDP step runs eagerly (a replay could not all-reduce) and stays right.
import warnings  # noqa: E402

cached_model = DDP(make_model(11))
eager_model = DDP(make_model(11))
copt = tg.optim.SGD(cached_model.parameters(), lr=0.1)
eopt = tg.optim.SGD(eager_model.parameters(), lr=0.1)


def step(model, opt, x, y):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss


cached_step = tg.jit.cache(lambda x, y: step(cached_model, copt, x, y))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for x, y in zip(X[:5], Y[:5]):
        part = slice(r * 12, (r + 1) * 12)
        cached_step(tg.tensor(x[part]), tg.tensor(y[part]))
        step(eager_model, eopt, tg.tensor(x[part]), tg.tensor(y[part]))
assert any("run eagerly" in str(w.message) for w in caught), [str(w.message) for w in caught]
assert cached_step.cache_info().hits == 0
for p, q in zip(cached_model.parameters(), eager_model.parameters()):
    np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6)
print(f"rank {r}: jit.cache runs DDP steps eagerly", flush=True)
dist.destroy_process_group()
