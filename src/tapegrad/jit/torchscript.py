"""``torch.jit.script`` / ``torch.jit.trace``: TorchScript does not exist in tapegrad."""

from __future__ import annotations

__all__ = ["script", "trace", "ignore", "unused"]


def _no_torchscript(name):
    raise RuntimeError(
        f"torch.jit.{name}: tapegrad has no TorchScript compiler. Remove the call (the "
        "function or module runs eagerly as is), or wrap a training step in "
        "tapegrad.jit.cache(fn) to record and replay it fast."
    )


def script(obj=None, *args, **kwargs):
    """Raises: TorchScript is not available."""
    _no_torchscript("script")


def trace(func=None, *args, **kwargs):
    """Raises: TorchScript is not available."""
    _no_torchscript("trace")


def ignore(fn=None, **kwargs):
    """A TorchScript annotation: returns ``fn`` unchanged (nothing is compiled)."""
    return fn if fn is not None else (lambda f: f)


unused = ignore
