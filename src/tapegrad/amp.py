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

import numpy as np

from . import _warn, cuda
from .grad_mode import no_grad

__all__ = ["autocast", "GradScaler", "is_autocast_available"]


class autocast(contextlib.ContextDecorator):  # noqa: N801 - torch's name
    """Accepted for compatibility; computes in the inputs' own dtypes (see the module doc)."""

    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
        self.device_type = str(device_type)
        self.fast_dtype = dtype
        self._enabled = enabled

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


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


# torch.cuda.amp.* / torch.cpu.amp.* (deprecated spellings): the same classes
cuda.amp = type(cuda)("tapegrad.cuda.amp", "torch.cuda.amp: autocast and GradScaler.")
cuda.amp.autocast = functools.partial(autocast, "cuda")
cuda.amp.GradScaler = functools.partial(GradScaler, "cuda")
