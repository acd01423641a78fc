"""``import tapegrad`` loads only what every program needs (Note [Lazy bfloat16]).

ml_dtypes 0.7 takes about 2 s of CPU to import (1.9 s measured on a 2-core AMD EPYC,
against 12 ms for 0.6), and every process that imports tapegrad paid it: each MPI rank,
each test that starts a Python, every script. A module that binds ``_dtypes.bfloat16``
at import time (``conversions.py`` did, from issue 10 part V on) brings it back silently,
so the test runs a fresh interpreter and looks at ``sys.modules``.
"""

import subprocess
import sys

# Optional or heavy packages that tapegrad imports on first use, never with itself.
LAZY = (
    "ml_dtypes",
    "torch",
    "matplotlib",
    "tqdm",
    "mpi4py",
    "sklearn",
    "graphviz",
    "threadpoolctl",
    "scipy.linalg",
    "scipy.stats",
    "scipy.sparse",
)


def test_import_tapegrad_loads_no_optional_package():
    code = f"import sys, tapegrad\nprint(','.join(m for m in {LAZY!r} if m in sys.modules))\n"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "", f"imported by `import tapegrad`: {out.stdout.strip()}"


def test_bfloat16_still_works_after_the_lazy_import():
    code = (
        "import sys, tapegrad as tg\n"
        "x = tg.ones(3).bfloat16()\n"
        "assert 'ml_dtypes' in sys.modules\n"
        "print(x.dtype, (x * 2).dtype, x.half().dtype, x.short().dtype)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.split() == ["bfloat16", "bfloat16", "float16", "int16"]
