"""``tapegrad.amp``, as ``torch.amp``: ``autocast`` and ``GradScaler``.

tapegrad has no reduced-precision kernels to switch to, so ``autocast`` is accepted and
changes nothing: ops run in their inputs' dtypes (float32 where torch would use
bfloat16/float16 inside the block; more precise, not the same bits). ``GradScaler``
is torch's algorithm: ``scale(loss)`` multiplies by the scale, ``step`` unscales the
gradients, skips the step when one is inf/NaN, and ``update`` backs the scale off
after such a step or grows it after ``growth_interval`` clean ones. As in torch, a
scaler for ``"cuda"`` without a GPU warns and disables itself (then every method is a
pass-through).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import warnings

import numpy as np

from . import _warn, cpu, cuda
from .grad_mode import no_grad

__all__ = ["autocast", "GradScaler", "is_autocast_available", "custom_fwd", "custom_bwd"]

# torch's default autocast dtypes per device type (what get_autocast_dtype answers)
_DEFAULT_DTYPE = dict.fromkeys(("cpu", "xla", "hpu", "maia"), "bfloat16")  # others float16


class _AutocastState(threading.local):
    """Per thread: (enabled, dtype) per device type, of the innermost autocast block or
    the last ``torch.set_autocast_*`` call; the cache flag and the nesting depth that
    ``tapegrad._torch_autocast`` reports."""

    def __init__(self):
        self.by_device = {}
        self.cache_enabled = True
        self.nesting = 0


_STATE = _AutocastState()


def _autocast_state(device_type: str):
    """(enabled, dtype) for ``device_type`` in this thread; dtype is None for the default."""
    return _STATE.by_device.get(device_type, (False, None))


class autocast(contextlib.ContextDecorator):  # noqa: N801 - torch's name
    """Accepted for compatibility; computes in the inputs' own dtypes (see the module doc).

    The block's state is recorded (per thread and device type) for ``custom_fwd`` and
    ``custom_bwd``; "cuda" without a GPU counts as disabled, as torch disables it there.
    """

    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
        self.device_type = str(device_type)
        self.fast_dtype = dtype
        if enabled and self.device_type == "cuda" and not cuda.is_available():
            _warn.warn("CUDA is not available or torch_xla is imported. Disabling autocast.")
            enabled = False
        self._enabled = enabled

    def __enter__(self):
        enabled = bool(self._enabled)
        stack = self.__dict__.setdefault("_prev", [])
        stack.append(_autocast_state(self.device_type))
        dtype = self.fast_dtype if self.fast_dtype is not None else stack[-1][1]
        _STATE.by_device[self.device_type] = (enabled, dtype)  # None dtype: keep the set one
        return self

    def __exit__(self, *exc):
        _STATE.by_device[self.device_type] = self._prev.pop()
        return False

    def _recreate_cm(self):
        return type(self)(self.device_type, self.fast_dtype, self._enabled)


def is_autocast_available(device_type: str) -> bool:
    """False: tapegrad has no autocast kernels."""
    return False


class GradScaler:
    """Loss scaling for mixed precision, as ``torch.amp.GradScaler``.

    >>> import tapegrad as tg
    >>> p = tg.nn.Parameter(tg.ones(2))
    >>> opt = tg.optim.SGD([p], lr=0.1)
    >>> scaler = tg.amp.GradScaler("cpu", init_scale=4.0)
    >>> scaler.scale((p * p).sum()).backward()
    >>> scaler.step(opt); scaler.update()
    >>> p.detach().tolist(), scaler.get_scale()
    ([0.800000011920929, 0.800000011920929], 4.0)
    """

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):  # fmt: skip
        self._device = str(device)
        if enabled and self._device.startswith("cuda") and not cuda.is_available():
            _warn.warn(
                "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
            )
            enabled = False
        self._enabled = enabled
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer = {}  # id(optimizer) -> {"unscaled": bool, "found_inf": bool}

    def is_enabled(self) -> bool:
        return self._enabled

    def get_scale(self) -> float:
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def scale(self, outputs):
        """``outputs`` (a tensor or nested lists/tuples of them) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * self._scale

    def _state(self, optimizer):
        fresh = {"unscaled": False, "found_inf": False}
        return self._per_optimizer.setdefault(id(optimizer), fresh)

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place, and note inf/NaN.

        Raises:
            RuntimeError: when called twice for one optimizer before :meth:`update`.
        """
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["unscaled"]:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        inv = 1.0 / self._scale
        found = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    g = p.grad._data
                    found = found or not bool(np.isfinite(g).all())
                    p.grad.mul_(np.asarray(inv, dtype=g.dtype))
        state["unscaled"], state["found_inf"] = True, found

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless done), then ``optimizer.step()`` unless a gradient is inf/NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        state = self._state(optimizer)
        if not state["unscaled"]:
            self.unscale_(optimizer)
        if state["found_inf"]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None) -> None:
        """Adjust the scale: back off after a skipped step, grow after enough clean ones."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale)
        else:
            if not self._per_optimizer:
                raise AssertionError("No inf checks were recorded prior to update.")
            if any(s["found_inf"] for s in self._per_optimizer.values()):
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._per_optimizer = {}

    def state_dict(self) -> dict:
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}  # fmt: skip

    def load_state_dict(self, state_dict) -> None:
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")  # fmt: skip
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])


def _check_device_type(device_type) -> None:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def _cast(value, device_type, dtype):
    """torch's amp ``_cast``: floating tensors on ``device_type`` other than float64."""
    from . import _dtypes
    from .tensor import Tensor

    if isinstance(value, Tensor):
        eligible = (
            value.is_floating_point()
            and value.device.type == device_type
            and value.dtype != _dtypes.float64
        )
        return value.to(dtype) if eligible else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, device_type, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorate a custom ``Function.forward`` for autocast, as ``torch.amp.custom_fwd``.

    Inside an enabled ``autocast(device_type)`` block with ``cast_inputs`` set, floating
    tensors among the arguments are cast to ``cast_inputs`` and ``forward`` runs with
    autocast disabled; otherwise it runs as is. ``ctx`` remembers the autocast state for
    :func:`custom_bwd`.

    Raises:
        ValueError: if ``device_type`` is not a str.
    """
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        enabled, dtype = _autocast_state(device_type)
        args[0]._dtype = dtype if dtype is not None else _autocast_default(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = enabled
            return fwd(*args, **kwargs)
        args[0]._fwd_used_autocast = False
        if enabled:
            with autocast(device_type=device_type, enabled=False):
                return fwd(
                    *_cast(args, device_type, cast_inputs),
                    **_cast(kwargs, device_type, cast_inputs),
                )
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Run a custom ``Function.backward`` in the autocast state its forward saw, as
    ``torch.amp.custom_bwd``.

    Raises:
        ValueError: if ``device_type`` is not a str.
    """
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd


def _autocast_default(device_type: str):
    from . import _dtypes

    return _dtypes.to_dtype(_DEFAULT_DTYPE.get(device_type, "float16"))


def _deprecated_cuda(fn, name):
    def wrapper(*args, **kwargs):
        warnings.warn(
            f"`torch.cuda.amp.{name}(args...)` is deprecated. "
            f"Please use `torch.amp.{name}(args..., device_type='cuda')` instead.",
            FutureWarning,
            stacklevel=2,
        )
        return fn(*args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = name
    return wrapper


def _device_amp(module, device_type):
    """``torch.<device>.amp``: the deprecated ``autocast`` and ``GradScaler`` spellings bound
    to ``device_type``, registered in sys.modules so that ``from torch.cuda.amp import
    GradScaler`` imports, as it does from torch."""
    name = f"{module.__name__}.amp"
    amp = type(module)(name, f"torch.{device_type}.amp: autocast and GradScaler.")
    sys.modules[name] = module.amp = amp

    class _Autocast(autocast):
        __doc__ = f"``torch.{device_type}.amp.autocast``: deprecated, ``autocast`` on it."

        def __init__(self, enabled=True, dtype=None, cache_enabled=True):
            _warn.warn(
                f"`torch.{device_type}.amp.autocast(args...)` is deprecated. "
                f"Please use `torch.amp.autocast('{device_type}', args...)` instead.",
                FutureWarning,
            )
            super().__init__(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    class _GradScaler(GradScaler):
        __doc__ = f"``torch.{device_type}.amp.GradScaler``: deprecated, ``GradScaler`` on it."

        def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                     growth_interval=2000, enabled=True):  # fmt: skip
            _warn.warn(
                f"`torch.{device_type}.amp.GradScaler(args...)` is deprecated. "
                f"Please use `torch.amp.GradScaler('{device_type}', args...)` instead.",
                FutureWarning,
            )
            super().__init__(device_type, init_scale, growth_factor, backoff_factor,
                             growth_interval, enabled)  # fmt: skip

    _Autocast.__name__ = _Autocast.__qualname__ = "autocast"
    _GradScaler.__name__ = _GradScaler.__qualname__ = "GradScaler"
    amp.autocast, amp.GradScaler = _Autocast, _GradScaler
    return amp


_device_amp(cpu, "cpu")
_device_amp(cuda, "cuda")
cuda.amp.custom_fwd = _deprecated_cuda(
    lambda fwd=None, *, cast_inputs=None: custom_fwd(
        fwd, device_type="cuda", cast_inputs=cast_inputs
    ),
    "custom_fwd",
)
cuda.amp.custom_bwd = _deprecated_cuda(
    lambda bwd=None: custom_bwd(bwd, device_type="cuda"), "custom_bwd"
)
