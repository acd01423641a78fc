"""Run under mpiexec -n 2: a rank that raises ends the whole job (Note [Distributed failure])."""

import sys

import numpy as np

import tapegrad as tg
import tapegrad.distributed as dist
from tapegrad import nn

dist.init_process_group()
r = dist.get_rank()
case = sys.argv[1]
if case == "raise":
    if r == 1:
        raise ValueError("boom on purpose")
    dist.barrier()  # rank 0 would wait here forever without the abort
elif case == "unused":
    model = nn.parallel.DDP(nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1)))
    x = tg.tensor(np.ones((2, 3), np.float32))
    out = model.module[0](x).sum() if r == 0 else model(x).sum()
    model._arm(out)  # as forward would: rank 0 skipped the second layer
    out.backward()
    dist.barrier()
print(f"rank {r}: still running", flush=True)
