"""``tapegrad.compiler``, as ``torch.compiler``: what code asks while it runs eagerly.

tapegrad has no graph compiler behind ``torch.compile`` (it returns the model unchanged,
see ``_settings.compile``), so every question here has eager mode's answer: nothing is
being compiled or exported, the decorators that steer Dynamo hand the function back, and
``reset``/``set_stance``/``cudagraph_mark_step_begin`` have nothing to act on. For a faster
repeated step, ``tapegrad.jit.cache`` records and replays the graph.
"""

from __future__ import annotations

import contextlib

from ._settings import compile  # noqa: A004 - torch.compiler.compile is torch.compile

__all__ = [
    "compile",
    "is_compiling",
    "is_dynamo_compiling",
    "is_exporting",
    "disable",
    "reset",
    "allow_in_graph",
    "assume_constant_result",
    "substitute_in_graph",
    "wrap_numpy",
    "list_backends",
    "get_default_backend",
    "set_default_backend",
    "set_stance",
    "cudagraph_mark_step_begin",
    "nested_compile_region",
]

# torch's answer to list_backends() without the optional ones (tvm, openxla...) installed
_BACKENDS = ["cudagraphs", "inductor"]
_STATE = {"backend": "inductor"}


def is_compiling() -> bool:
    """False: tapegrad code always runs eagerly (torch answers True only while Dynamo
    traces or ``torch.export`` exports)."""
    return False


def is_dynamo_compiling() -> bool:
    return False


def is_exporting() -> bool:
    return False


def _identity_decorator(fn):
    return fn


def disable(fn=None, recursive=True, *, reason=None):
    """``fn`` itself (or, without ``fn``, a decorator that returns its function): keeping a
    function out of compiled graphs changes nothing when nothing is compiled."""
    return _identity_decorator if fn is None else fn


def reset() -> None:
    """Nothing to clear: no compiled code is cached."""


def allow_in_graph(fn):
    """``fn``, unchanged."""
    return fn


def assume_constant_result(fn):
    """``fn``, unchanged."""
    return fn


def wrap_numpy(fn):
    """``fn``, unchanged (torch's wrapper only matters while tracing NumPy code)."""
    return fn


def substitute_in_graph(original_fn, *, can_constant_fold_through=False,
                        skip_signature_check=False):  # fmt: skip
    """A decorator that returns its function: the substitute is only used while tracing."""
    if not callable(original_fn):
        raise TypeError(f"substitute_in_graph expects a function but got {type(original_fn)!r}")
    return _identity_decorator


def nested_compile_region(fn=None, *, options=None, max_reuse_entries=8, reuse_hash_fn=None):
    """``fn`` (or a decorator returning its function): eager code has no regions to reuse."""
    return _identity_decorator if fn is None else fn


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    """The backend names torch lists without optional packages: ``torch.compile(backend=)``
    accepts them, and they all run eagerly here."""
    return list(_BACKENDS)


def get_default_backend():
    return _STATE["backend"]


def set_default_backend(backend) -> None:
    """Remembered for :func:`get_default_backend`; None restores ``"inductor"``."""
    _STATE["backend"] = "inductor" if backend is None else backend


class set_stance(contextlib.ContextDecorator):  # noqa: N801 - torch's name
    """Accepted as a call, a context manager or a decorator, with any stance (torch checks
    it only when it compiles): every stance runs eagerly here, which ``force_eager`` names."""

    def __init__(self, stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
        self.stance = stance

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def cudagraph_mark_step_begin() -> None:
    """Nothing to mark: there are no CUDA graphs."""
