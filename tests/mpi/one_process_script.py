"""Run (no mpiexec) by tests/mpi/test_distributed.py: the checks that need a fresh
interpreter of one process, in one interpreter (each start and ``import tapegrad`` cost more
CPU than the checks). One JSON line per check: ``{"check", "status", "detail"}``, status
"ok", "fail" (detail: the traceback) or "skip" (detail: why); the tests read their own line.
The order matters: nothing may import mpi4py before "importable"; "versions" last (torch).
"""

import json
import sys
import traceback


def importable():
    """Importing tapegrad's distributed parts does not initialise MPI."""
    import tapegrad  # noqa: F401, PLC0415
    import tapegrad.distributed  # noqa: F401, PLC0415
    import tapegrad.nn.parallel  # noqa: F401, PLC0415

    assert "mpi4py" not in sys.modules, "importing tapegrad.distributed loaded mpi4py"


def single():
    """In one process (no mpiexec) MPI gives a world of one: everything still works."""
    import tapegrad as tg  # noqa: PLC0415
    import tapegrad.distributed as dist  # noqa: PLC0415

    if not dist.is_available():
        return "mpi4py missing"
    dist.init_process_group("gloo", world_size=1, rank=0)
    assert dist.get_rank() == 0 and dist.get_world_size() == 1
    t = tg.tensor([1.0, 2.0])
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert t.tolist() == [1.0, 2.0]
    m = tg.nn.parallel.DDP(tg.nn.Linear(2, 1))
    m(t).sum().backward()
    assert m.module.weight.grad.tolist() == [[1.0, 2.0]]
    try:
        dist.init_process_group()
    except RuntimeError as e:
        assert "twice" in str(e), e
    else:
        raise AssertionError("second init accepted")
    dist.destroy_process_group()
    try:
        dist.init_process_group(world_size=3)
    except ValueError as e:
        assert "mpiexec -n 3" in str(e), e
    else:
        raise AssertionError("world_size=3 accepted without mpiexec -n 3")
    return None


def _versions(m, ddp, init, destroy):
    init()
    m.manual_seed(0)
    model = ddp(m.nn.Linear(3, 2))
    import numpy as np  # noqa: PLC0415

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


def versions():
    """The version counter of a parameter's .grad through DDP steps, in torch (gloo, a
    world of one) and in tapegrad (MPI, a world of one)."""
    import tapegrad as tg  # noqa: PLC0415
    import tapegrad.distributed as dist  # noqa: PLC0415

    if not dist.is_available():
        return "mpi4py missing: pip install tapegrad[mpi]"
    try:
        import torch  # noqa: PLC0415
        import torch.distributed as tdist  # noqa: PLC0415
    except ImportError:
        return "torch missing"
    theirs = _versions(
        torch,
        torch.nn.parallel.DistributedDataParallel,
        lambda: tdist.init_process_group("gloo", store=tdist.HashStore(), rank=0, world_size=1),
        tdist.destroy_process_group,
    )
    ours = _versions(
        tg,
        tg.nn.parallel.DistributedDataParallel,
        lambda: dist.init_process_group("gloo", world_size=1, rank=0),
        dist.destroy_process_group,
    )
    return {"torch": theirs, "tapegrad": ours}


for check in (importable, single, versions):
    try:
        got = check()
    except BaseException:  # noqa: BLE001 - reported, then the next check runs
        line = {"check": check.__name__, "status": "fail", "detail": traceback.format_exc()}
    else:
        if isinstance(got, str):
            line = {"check": check.__name__, "status": "skip", "detail": got}
        else:
            line = {"check": check.__name__, "status": "ok", "detail": got}
    print(json.dumps(line), flush=True)
