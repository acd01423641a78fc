"""``python -m tapegrad.distributed.run -n N script.py [args...]``: start N ranks under MPI.

A thin front to ``mpiexec -n N python script.py``: it finds the ``mpiexec`` that came with
the ``mpich`` wheel (beside this Python) or on PATH, and replaces this process with it, so
the job's exit status is mpiexec's. ``-m module`` runs a module instead of a script, as
Python does. On a cluster, use the site's launcher (srun, mpirun) the same way.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

__all__ = ["find_mpiexec", "main"]


def find_mpiexec() -> str | None:
    """The mpiexec beside the running Python (the mpich wheel puts it there), else on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(here, os.X_OK):
        return here
    return shutil.which("mpiexec") or shutil.which("mpirun")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tapegrad.distributed.run",
        description="Run a training script on N processes with MPI (mpiexec -n N python ...).",
    )
    parser.add_argument("-n", "--nproc", type=int, default=2, help="number of ranks (default 2)")
    parser.add_argument("-m", dest="module", help="run a module, as python -m")
    parser.add_argument("script", nargs="?", help="the training script")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    ns = parser.parse_args(argv)
    if (ns.module is None) == (ns.script is None):
        parser.error("give a script or -m module")
    if ns.nproc < 1:
        parser.error("-n must be at least 1")
    mpiexec = find_mpiexec()
    if mpiexec is None:
        print(
            "mpiexec not found: `pip install tapegrad[mpi]` installs mpi4py and the mpich "
            "wheel, which brings mpiexec",
            file=sys.stderr,
        )
        return 2
    target = ["-m", ns.module] if ns.module else [ns.script]
    command = [mpiexec, "-n", str(ns.nproc), sys.executable, *target, *ns.args]
    os.execv(mpiexec, command)
    return 0  # pragma: no cover - execv does not return


if __name__ == "__main__":
    sys.exit(main())
