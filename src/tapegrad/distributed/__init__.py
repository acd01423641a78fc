"""``tapegrad.distributed``, as ``torch.distributed``: a placeholder until process groups land.

Importable so scripts load. ``is_available()`` says whether mpi4py (the transport
tapegrad will use) imports; ``is_initialized()`` is False; every function that needs a
process group raises a RuntimeError that says so. Code written as
``if dist.is_available() and dist.is_initialized(): ...`` runs single-process unchanged.
"""

from __future__ import annotations

import enum

__all__ = [
    "is_available",
    "is_initialized",
    "init_process_group",
    "destroy_process_group",
    "get_rank",
    "get_world_size",
    "get_backend",
    "barrier",
    "all_reduce",
    "reduce",
    "broadcast",
    "all_gather",
    "gather",
    "scatter",
    "new_group",
    "ReduceOp",
]


def is_available() -> bool:
    """True when mpi4py can be imported (``pip install tapegrad[mpi]``)."""
    try:
        import mpi4py  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True


def is_initialized() -> bool:
    """Whether a default process group exists: always False for now."""
    return False


class ReduceOp(enum.Enum):
    """Reduction operations of the collectives."""

    SUM = "sum"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    AVG = "avg"


def _not_yet(name):
    def fn(*args, **kwargs):
        raise RuntimeError(
            f"torch.distributed.{name}: process groups are not implemented in tapegrad yet "
            "(tapegrad.distributed is a placeholder; distributed training over MPI is a "
            "separate issue). Run single-process, guarded by `dist.is_initialized()`."
        )

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Raises RuntimeError: ``{name}`` needs a process group, not available yet."
    return fn


for _name in __all__[2:-1]:
    globals()[_name] = _not_yet(_name)
del _name
