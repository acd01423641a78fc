"""Loading mpi4py on demand, with an error that says how to install it.

``import tapegrad.distributed`` never imports mpi4py: importing it initialises MPI, which
a program that never trains across processes should not pay for (or fail on).
"""

from __future__ import annotations

_MPI = None

INSTALL_HINT = (
    "tapegrad.distributed runs on MPI through mpi4py, which is not installed: "
    "`pip install tapegrad[mpi]` (mpi4py and the mpich wheel, which brings `mpiexec`), "
    "or `pip install mpi4py` against your cluster's MPI"
)


def available() -> bool:
    """Whether mpi4py can be imported (does not initialise MPI)."""
    if _MPI is not None:
        return True
    import importlib.util  # noqa: PLC0415

    return importlib.util.find_spec("mpi4py") is not None


def mpi():
    """The ``mpi4py.MPI`` module (initialises MPI on first call)."""
    global _MPI
    if _MPI is None:
        try:
            from mpi4py import MPI  # noqa: PLC0415
        except ImportError as e:
            raise RuntimeError(INSTALL_HINT) from e
        _MPI = MPI
    return _MPI
