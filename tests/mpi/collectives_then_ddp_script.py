"""Run under mpiexec -n N CAP: collectives_script.py, then ddp_script.py CAP, in one job.

One start of N ranks instead of two: each rank's interpreter start and ``import tapegrad``
cost more CPU than either script's checks. collectives_script.py ends with
destroy_process_group() and checks it, so ddp_script.py joins a fresh process group.
"""

import pathlib
import runpy
import sys

HERE = pathlib.Path(__file__).resolve().parent
cap = sys.argv[1:]
runpy.run_path(str(HERE / "collectives_script.py"), run_name="__main__")
sys.argv = [str(HERE / "ddp_script.py"), *cap]
runpy.run_path(str(HERE / "ddp_script.py"), run_name="__main__")
