"""Run by tests/mpi/test_distributed.py::test_ddp_grad_versions_are_torchs: the version
counter of a parameter's .grad through DDP steps, in torch (gloo, a world of one) and in
tapegrad (MPI, a world of one)."""

import json

import numpy as np
import torch
import torch.distributed as tdist

import tapegrad as tg
import tapegrad.distributed as dist


def versions(m, ddp, init, destroy):
    init()
    m.manual_seed(0)
    model = ddp(m.nn.Linear(3, 2))
    x = m.tensor(np.arange(12.0, dtype=np.float32).reshape(4, 3))
    seen = []
    w = model.module.weight
    model(x).sum().backward()  # a fresh .grad
    seen.append(w.grad._version)
    model(x).sum().backward()  # accumulated, then overwritten by the all-reduce
    seen.append(w.grad._version)
    model.module.zero_grad(set_to_none=False)
    seen.append(w.grad._version)
    with model.no_sync():  # accumulated only
        model(x).sum().backward()
    seen.append(w.grad._version)
    model(x).sum().backward()
    seen.append(w.grad._version)
    destroy()
    return seen


theirs = versions(
    torch,
    torch.nn.parallel.DistributedDataParallel,
    lambda: tdist.init_process_group("gloo", store=tdist.HashStore(), rank=0, world_size=1),
    tdist.destroy_process_group,
)
ours = versions(
    tg,
    tg.nn.parallel.DistributedDataParallel,
    lambda: dist.init_process_group("gloo", world_size=1, rank=0),
    dist.destroy_process_group,
)
print(json.dumps({"torch": theirs, "tapegrad": ours}))
