"""``torch.jit``'s TorchScript names: compiling is a no-op, the objects run eagerly.

Note [TorchScript is eager here]
``torch.jit.script(fn)`` and ``torch.jit.trace(fn, example)`` compile a function or
module into TorchScript, whose results are the eager results: TorchScript changes how a
program runs, not what it computes. So tapegrad returns the function or module itself,
and a PyTorch program that scripts a fused activation or traces a model for speed runs
unchanged and gives the same numbers (for the speed, ``tapegrad.jit.cache`` records and
replays a whole step). What cannot be honoured raises: TorchScript archives
(``torch.jit.save``/``load``) do not exist here.

Two differences are documented rather than emulated: tapegrad's ``trace`` does not run the
function (torch's runs it to record and, with ``check_trace``, again to check: a BatchNorm
in training mode counts those batches), and a traced function keeps its Python control
flow (torch's freezes the branch the example took).
"""

from __future__ import annotations

import contextlib
import typing

__all__ = [
    "script",
    "trace",
    "trace_module",
    "script_if_tracing",
    "ignore",
    "unused",
    "export",
    "interface",
    "annotate",
    "is_scripting",
    "is_tracing",
    "fork",
    "wait",
    "freeze",
    "optimize_for_inference",
    "save",
    "load",
    "set_fusion_strategy",
    "optimized_execution",
    "fuser",
    "enable_onednn_fusion",
    "onednn_fusion_enabled",
    "Final",
    "ScriptModule",
    "ScriptFunction",
    "TracerWarning",
    "Error",
    "Future",
]

Final = typing.Final


class ScriptModule:
    """torch's compiled-module class, for ``isinstance`` checks: no tapegrad object is one
    (``script`` returns the module itself, Note [TorchScript is eager here])."""


class ScriptFunction:
    """torch's compiled-function class, for ``isinstance`` checks (never an instance)."""


class TracerWarning(Warning):
    """torch's warning category for tracing (programs filter it; tapegrad never emits it)."""


class Error(RuntimeError):
    """torch.jit.Error: an exception raised inside TorchScript."""


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """``obj`` itself: the function or module runs eagerly, with TorchScript's results
    (Note [TorchScript is eager here])."""
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    """``func`` itself, not run (Note [TorchScript is eager here])."""
    return func


def trace_module(mod, inputs, *args, **kwargs):
    """``mod`` itself, not run (Note [TorchScript is eager here])."""
    return mod


def script_if_tracing(fn):
    """``fn`` itself."""
    return fn


def ignore(drop=False, **kwargs):
    """A TorchScript annotation: returns the function unchanged (nothing is compiled);
    also usable as ``@ignore(drop=True)``."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    """A TorchScript annotation: returns ``fn`` unchanged."""
    return fn


def export(fn):
    """A TorchScript annotation: returns ``fn`` unchanged."""
    return fn


def interface(obj):
    """A TorchScript annotation: returns the class unchanged."""
    return obj


def annotate(the_type, the_value):
    """``the_value`` (in TorchScript, a type hint for the compiler)."""
    return the_value


def is_scripting() -> bool:
    """False: nothing is ever compiled to TorchScript here."""
    return False


def is_tracing() -> bool:
    """False: ``trace`` does not run functions here."""
    return False


class Future:
    """The result of :func:`fork`: the call already ran; :meth:`wait` returns its value."""

    __slots__ = ("_value",)

    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value

    def done(self) -> bool:
        return True

    def value(self):
        return self._value


def fork(func, *args, **kwargs) -> Future:
    """Runs ``func(*args, **kwargs)`` now (torch's eager ``fork`` also runs it inline)."""
    return Future(func(*args, **kwargs))


def wait(future: Future):
    """The value of a :func:`fork`."""
    return future.wait()


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """``mod`` itself (freezing inlines a ScriptModule's attributes; nothing to do here)."""
    return mod


def optimize_for_inference(mod, other_methods=None):
    """``mod`` itself."""
    return mod


def _no_archive(name):
    raise RuntimeError(
        f"torch.jit.{name}: tapegrad has no TorchScript archives (torch.jit.script returns "
        "the module itself). Save the weights with tapegrad.save(model.state_dict(), path) "
        "and load them into the module's class with model.load_state_dict(tapegrad.load(path))."
    )


def save(m, f, _extra_files=None):
    """Raises: there are no TorchScript archives."""
    _no_archive("save")


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """Raises: there are no TorchScript archives."""
    _no_archive("load")


_FUSION = [[("STATIC", 2), ("DYNAMIC", 10)]]  # torch's default


def set_fusion_strategy(strategy):
    """Stores ``strategy`` (there is no fuser to use it) and returns the previous one, as
    torch does."""
    previous, _FUSION[0] = _FUSION[0], list(strategy)
    return previous


@contextlib.contextmanager
def optimized_execution(should_optimize):
    """A context that changes nothing."""
    yield


@contextlib.contextmanager
def fuser(name):
    """A context that changes nothing."""
    yield


def enable_onednn_fusion(enabled: bool) -> None:
    """Nothing to enable."""


def onednn_fusion_enabled() -> bool:
    """False."""
    return False
