"""The saved-tensor hooks of ``torch.autograd.graph`` (re-exported by ``autograd.graph``).

Note [Saved-tensor hooks]
torch calls ``pack_hook`` on every tensor an op saves for backward and ``unpack_hook``
when backward reads it. tapegrad's backward rules are closures over their tensors (and
make_result's ``saved=`` only lists them), so there is no point at which a pack hook
could replace what a rule reads. Rather than run the block with the hooks never called
(wrong for any hook with an effect: offloading, counting, compressing), ``saved_tensors_hooks``
refuses on entry. ``save_on_cpu`` is the exception: its pack moves a tensor to the CPU and
its unpack moves it back, which for tapegrad's CPU tensors is the identity, so it runs as a
no-op when no CUDA device is in use.
"""

from __future__ import annotations

import threading

__all__ = [
    "saved_tensors_hooks",
    "save_on_cpu",
    "disable_saved_tensors_hooks",
    "increment_version",
]


class _Disabled(threading.local):
    message = None


_DISABLED = _Disabled()


def _check_enabled():
    if _DISABLED.message is not None:
        raise RuntimeError(_DISABLED.message)


class saved_tensors_hooks:  # noqa: N801 - torch's name
    """``pack_hook``/``unpack_hook`` for saved tensors: refused on entry (Note [Saved-tensor
    hooks]); tapegrad's backward rules hold their tensors directly.

    Raises:
        RuntimeError: inside ``disable_saved_tensors_hooks`` (its message), as torch.
        NotImplementedError: otherwise, on entry.
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _check_enabled()
        raise NotImplementedError(
            "torch.autograd.graph.saved_tensors_hooks: tapegrad cannot run pack/unpack hooks "
            "on saved tensors (its backward rules hold their tensors directly); remove the "
            "hooks, or use tapegrad.utils.checkpoint to trade memory for recomputation"
        )

    def __exit__(self, *exc):
        return False


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - torch's name
    """Keep saved tensors on the CPU: tapegrad's already are, so the block runs unchanged
    (Note [Saved-tensor hooks]).

    Raises:
        RuntimeError: inside ``disable_saved_tensors_hooks`` (its message), as torch.
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        self.pin_memory = pin_memory
        self.device_type = device_type
        super().__init__(lambda t: t, lambda t: t)

    def __enter__(self):
        _check_enabled()
        return self


class disable_saved_tensors_hooks:  # noqa: N801 - torch's name
    """Inside, entering ``saved_tensors_hooks``/``save_on_cpu`` raises
    ``RuntimeError(error_message)``; nesting restores the outer message on exit."""

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        self._prev = _DISABLED.message
        _DISABLED.message = self.error_message
        return None

    def __exit__(self, *exc):
        _DISABLED.message = self._prev
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)(self.error_message):
                return fn(*args, **kwargs)

        return wrapper


def increment_version(tensor) -> None:
    """Bump the version counter of ``tensor`` (or of each tensor in a list), as an
    in-place op would: saved copies of it then refuse to be used in backward."""
    tensors = (tensor,) if not isinstance(tensor, (list, tuple)) else tensor
    for t in tensors:
        t._vc.bump("increment_version")
