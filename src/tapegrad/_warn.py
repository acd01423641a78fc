"""Warnings at the user's line.

Note [Warning locations]
A warning names the line of the code that called tapegrad, as PyTorch's Python-level warnings
do, so that ``-W error`` tracebacks, ``warnings.filterwarnings(module=...)`` and the printed
``file:line`` point at the user's program. A fixed ``stacklevel`` cannot: the same check runs
under a registered op's wrapper, a Tensor method, an nn.Module's ``__call__`` or a functional
helper, each a different number of frames deep. :func:`warn` walks out of the package instead.
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["warn"]

_ROOT = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message, category=UserWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the first frame outside tapegrad."""
    frame = sys._getframe(1)
    level = 2  # warnings.warn's stacklevel of this function's caller
    while frame is not None and frame.f_code.co_filename.startswith(_ROOT):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
