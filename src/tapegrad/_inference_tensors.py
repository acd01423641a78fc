"""Which tensors were made under ``inference_mode`` (``Tensor.is_inference``).

Note [Inference tensors]
PyTorch marks every tensor made under ``torch.inference_mode()`` as an inference tensor,
and ``t.is_inference()`` says so for its lifetime, wherever it is asked (a view of one
is one too). Marking at creation must cost nothing outside inference mode
(``Tensor._wrap`` runs once per op), so the marking lives in a second ``_wrap`` that is
bound to Tensor only while some thread is inside ``inference_mode`` (counted through
grad_mode's INFERENCE_HOOK): it wraps as usual and, when *this* thread is in inference
mode, sets the tensor's ``_inference_`` slot (left unset otherwise: reading it raises
AttributeError, which means False). The constructors (``tg.tensor``, ``Tensor(...)``,
``Parameter``) go through tensor.py's ``_init``, which calls the same marking through
``INIT_MARK`` while it is set. Inside inference mode an op pays one call more.

Not done (PyTorch raises, tapegrad does not): using an inference tensor in a graph that
saves it for backward outside inference mode, and modifying one in place outside it. Both
would need a check on the hot paths of make_result and of the in-place ops.
"""

from __future__ import annotations

import threading

from . import grad_mode
from .tensor import INIT_MARK, Tensor

__all__ = ["is_inference"]

_plain_wrap = Tensor.__dict__["_wrap"]
_plain = _plain_wrap.__func__
_state = grad_mode.STATE
_lock = threading.Lock()
_inside = [0]  # threads x nesting levels inside inference_mode


def _mark(t: Tensor) -> None:
    if _state.inference:
        t._inference_ = True


def _marking_wrap(array) -> Tensor:
    t = _plain(array)
    if _state.inference:
        t._inference_ = True
    return t


def _count(step: int) -> None:
    with _lock:
        _inside[0] += step
        if _inside[0] == 1 and step == 1:
            Tensor._wrap = staticmethod(_marking_wrap)
            INIT_MARK[0] = _mark
        elif _inside[0] == 0:
            Tensor._wrap = _plain_wrap
            INIT_MARK[0] = None


grad_mode.INFERENCE_HOOK[0] = _count


def is_inference(self) -> bool:
    """Whether this tensor was made under ``inference_mode``, or is a view of one (as
    torch's ``Tensor.is_inference``)."""
    try:
        return self._inference_
    except AttributeError:
        return self._base is not None and is_inference(self._base)
