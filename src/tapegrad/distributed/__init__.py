"""``tapegrad.distributed``: training across processes and machines on MPI, as torch.distributed.

Launch N processes with ``mpiexec -n N python script.py`` (or
``python -m tapegrad.distributed.run -n N script.py``); each calls
``init_process_group()`` and then runs collectives on tensors. Importing this package
never imports mpi4py (Note [Distributed failure] in process_group.py for what happens when
a rank fails).

>>> import tapegrad.distributed as dist
>>> dist.is_initialized()
False
"""

from .collectives import (
    ReduceOp,
    Work,
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    broadcast,
    gather,
    irecv,
    isend,
    recv,
    reduce,
    reduce_scatter_tensor,
    scatter,
    send,
)
from .process_group import (
    GroupMember,
    ProcessGroup,
    barrier,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_initialized,
    is_mpi_available,
    new_group,
)

reduce_op = ReduceOp  # the old torch name

__all__ = [name for name in dir() if not name.startswith("_")]
