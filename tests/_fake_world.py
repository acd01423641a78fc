"""A process group of one rank without MPI, for tests of DistributedDataParallel's own
bookkeeping (buckets, flags, versions, broadcasts) in the test process. The real collectives
are tested under ``mpiexec`` in tests/mpi."""

import types


def fake_world_of_one(monkeypatch, broadcasts=None, **comm):
    """Make ``tapegrad.nn.parallel.distributed`` see an initialized world of one rank and
    return that module.

    ``comm``: the communicator's methods (default: an ``Iallreduce`` whose request is done at
    once, and a ``Bcast`` that leaves the buffer as it is: one rank already holds rank 0's
    values). ``broadcasts``: a list that records each ``_broadcast_coalesced`` call's tensors
    instead of broadcasting them.
    """
    from tapegrad.nn.parallel import distributed as ddp

    done = types.SimpleNamespace(Test=lambda: True, Wait=lambda: None)
    methods = {"Iallreduce": lambda send, recv, op: done, "Bcast": lambda buf, root: None}
    methods.update(comm)
    group = types.SimpleNamespace(comm=types.SimpleNamespace(**methods))
    mpi = types.SimpleNamespace(IN_PLACE=object(), SUM="sum", MAX="max")
    monkeypatch.setattr(ddp.dist, "is_initialized", lambda: True)
    monkeypatch.setattr(ddp.dist, "get_world_size", lambda group=None: 1)
    monkeypatch.setattr(ddp.dist._mpi, "mpi", lambda: mpi)
    monkeypatch.setattr(ddp.dist.process_group, "resolve", lambda _: group)
    if broadcasts is not None:
        monkeypatch.setattr(
            ddp, "_broadcast_coalesced", lambda ts, group: broadcasts.append(list(ts))
        )
    return ddp
