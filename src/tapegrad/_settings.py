"""Process-wide settings of torch's namespace: threads, determinism, ``compile``, ``is_tensor``.

``set_num_threads(n)`` limits NumPy's BLAS threads through threadpoolctl when that
package is installed (it usually is, as a scikit-learn dependency); without it the
value is remembered and reported by ``get_num_threads`` but NumPy keeps its own
setting (use the ``OMP_NUM_THREADS`` environment variable before starting Python).
"""

from __future__ import annotations

import os

from .tensor import DEFAULT_PRINT_OPTIONS, PRINT_OPTIONS, Tensor

__all__ = [
    "set_num_threads",
    "get_num_threads",
    "set_num_interop_threads",
    "get_num_interop_threads",
    "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled",
    "set_deterministic_debug_mode",
    "get_deterministic_debug_mode",
    "set_float32_matmul_precision",
    "get_float32_matmul_precision",
    "compile",
    "is_tensor",
    "set_printoptions",
]

_STATE = {"threads": None, "interop": 1, "limiter": None, "deterministic": False,
          "warn_only": False, "matmul": "highest"}  # fmt: skip


def set_num_threads(n: int) -> None:
    """Use ``n`` threads for NumPy's BLAS (through threadpoolctl when installed)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {n!r}")
    _STATE["threads"] = n
    try:
        from threadpoolctl import threadpool_limits  # noqa: PLC0415 - optional
    except ImportError:
        return
    _STATE["limiter"] = threadpool_limits(limits=n, user_api="blas")


def get_num_threads() -> int:
    """The value given to :func:`set_num_threads`; before that, the BLAS thread count that
    threadpoolctl reports, else the number of CPUs."""
    if _STATE["threads"] is not None:
        return _STATE["threads"]
    try:
        from threadpoolctl import threadpool_info  # noqa: PLC0415 - optional
    except ImportError:
        return os.cpu_count() or 1
    counts = [lib["num_threads"] for lib in threadpool_info() if lib.get("user_api") == "blas"]
    return max(counts) if counts else os.cpu_count() or 1


def set_num_interop_threads(n: int) -> None:
    """Accepted (tapegrad runs ops on the calling thread)."""
    _STATE["interop"] = int(n)


def get_num_interop_threads() -> int:
    return _STATE["interop"]


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Accepted: tapegrad's CPU kernels are deterministic already."""
    _STATE["deterministic"] = bool(mode)
    _STATE["warn_only"] = bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return _STATE["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """The ``warn_only`` of the last :func:`use_deterministic_algorithms` call."""
    return _STATE["warn_only"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode) -> None:
    """``use_deterministic_algorithms`` by level: 0/"default" off, 1/"warn" warn only,
    2/"error" on (torch's spelling of the same switch)."""
    if not isinstance(debug_mode, (int, str)):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(
                "invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                f"but got {debug_mode}"
            )
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(
            f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}"
        )
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0, 1 or 2, as :func:`set_deterministic_debug_mode` takes them."""
    if not _STATE["deterministic"]:
        return 0
    return 1 if _STATE["warn_only"] else 2


def set_float32_matmul_precision(precision: str) -> None:
    """Accepted ("highest", "high", "medium"); NumPy's float32 matmul is always full precision."""
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision {precision!r}: expected highest, high or medium")
    _STATE["matmul"] = precision


def get_float32_matmul_precision() -> str:
    return _STATE["matmul"]


def compile(model=None, **kwargs):  # noqa: A001 - torch's name
    """``torch.compile``: returns ``model`` unchanged (also as a decorator), so it runs eagerly.

    For a faster repeated training step, wrap the step in ``tapegrad.jit.cache``.
    """
    if model is None:
        return lambda m: m
    return model


def is_tensor(obj) -> bool:
    """True for a tapegrad Tensor (and Parameter)."""
    return isinstance(obj, Tensor)


_PROFILES = {
    "default": {},
    "short": {"precision": 2, "edgeitems": 2},
    "full": {"threshold": float("inf")},
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None) -> None:  # fmt: skip
    """How tensors print, as ``torch.set_printoptions``: digits after the point, the element
    count above which the middle is elided (``edgeitems`` kept at each end), line width,
    and ``sci_mode`` (True: always scientific, False: never, None: automatic). A ``profile``
    ("default", "short", "full") resets the options first.

    >>> import tapegrad as tg
    >>> tg.set_printoptions(precision=2)
    >>> tg.tensor([1.23456, 2.0])
    tensor([1.23, 2.00])
    >>> tg.set_printoptions(profile="default")
    """
    opts = PRINT_OPTIONS  # read by Tensor.__repr__; changed in place
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: unknown profile {profile!r}; use one of "
                             f"{sorted(_PROFILES)}")  # fmt: skip
        opts.clear()
        opts.update(DEFAULT_PRINT_OPTIONS, **_PROFILES[profile])
    given = {"precision": precision, "threshold": threshold, "edgeitems": edgeitems,
             "linewidth": linewidth}  # fmt: skip
    opts.update({k: v for k, v in given.items() if v is not None})
    if sci_mode is not None or profile is not None:
        opts["sci_mode"] = sci_mode
