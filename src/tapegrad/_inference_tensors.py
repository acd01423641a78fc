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

Misuse outside inference mode raises torch's RuntimeError at no cost to other tensors: an
inference tensor gets an :class:`InferenceCounter` as its version counter when it is made
(views share their base's counter, so a view of one has it too; a view of a normal tensor
made in inference mode takes its base's normal counter). Its ``bump`` (every in-place op
ends with one) refuses an in-place update, and reading its ``value`` (what a Node records
for each tensor it saves, ``saved=`` of make_result) refuses saving it for backward.
Not matched: the in-place check comes after the write (torch checks before writing);
ops whose backward closes over the input array instead of ``saved=`` do not refuse it.
"""

from __future__ import annotations

import threading

from . import grad_mode
from .tensor import INIT_MARK, Tensor, VersionCounter

__all__ = ["is_inference"]

_plain_wrap = Tensor.__dict__["_wrap"]
_plain = _plain_wrap.__func__
_state = grad_mode.STATE
_lock = threading.Lock()
_inside = [0]  # threads x nesting levels inside inference_mode


_INPLACE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
    "clone to get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for more details."
)  # torch's text, its missing spaces included
_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
    "`torch.inference_mode()`."
)
_value = VersionCounter.value  # the slot's descriptor


class InferenceCounter(VersionCounter):
    """The version counter of an inference tensor (Note [Inference tensors])."""

    __slots__ = ()

    @property
    def value(self):
        if not _state.inference:
            raise RuntimeError(_SAVED)
        return _value.__get__(self)

    @value.setter
    def value(self, v):
        _value.__set__(self, v)

    def bump(self, op_name: str, depth: int = 2) -> None:
        if not _state.inference:
            raise RuntimeError(_INPLACE)


def _counter() -> InferenceCounter:
    counter = InferenceCounter()
    counter.where = None
    return counter


def _mark(t: Tensor) -> None:
    if _state.inference:
        t._inference_ = True
        t._vc_ = _counter()


def _marking_wrap(array) -> Tensor:
    t = _plain(array)
    if _state.inference:
        t._inference_ = True
        t._vc_ = _counter()
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
