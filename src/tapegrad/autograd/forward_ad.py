"""Forward-mode AD: dual tensors (``dual_level``, ``make_dual``, ``unpack_dual``).

Note [Forward-mode tangents]
While a dual level is open, ``graph.FORWARD[0]`` is set and every Node that
``make_result``/``make_results`` records is handed to :func:`_propagate`, which gives
the Node's outputs their tangents (one check per op otherwise: zero cost when no
level is open). Tangents live in a side table of the level, keyed by the tensor.

Tangents are filed by (Node, output number), so the output that a backward rule
rebuilds from its saved array (``save_output``) carries the tangent of the result.
A tangent is ``J · t`` summed over the op's inputs. An op may register an explicit
rule in :data:`JVP_RULES` (by Node name); otherwise it is derived from the op's own
backward rule, which is linear in the incoming gradient ``u``: with ``v(u) = Jᵀu``
recorded in tapegrad ops, ``J t = d/du <v(u), t>`` (the transpose of the transpose).
This is exact for every op whose backward is written in differentiable tapegrad ops
(the house rule); a backward whose result does not depend on ``u`` through the graph
raises NotImplementedError naming the op, never a wrong tangent.

Dual tensors must take part in recording: ``make_dual`` returns a tensor that
requires grad (an identity of the primal), so every op on it goes through the funnel.
Tangents may carry a leading batch of B directions (``jacfwd``): the derived rule then
runs the backward under the batch prefix of Note [Batched gradients], and a rule that
returns a gradient without the prefix raises BatchingError (callers fall back).

Levels (as PyTorch 2.13): one dual level at a time. Entering a level while one is open
raises RuntimeError("Nested forward mode AD is not supported at the moment"), and so does
a tg.func forward transform (``jvp``, ``jacfwd``) called inside a ``dual_level()`` the
user opened, or ``dual_level()`` entered inside such a transform. The transforms compose
with each other (``jvp`` of ``jvp``, ``jacfwd(jacfwd(f))``): a transform that finds a level
opened by another transform (``_STATE.transform``) computes its ``J t`` as the derivative
of a vector-Jacobian product instead (_func_fwd.py), which needs no second level.

Limits: ops run under ``no_grad`` record
nothing and so propagate no tangent (unlike PyTorch): turning grad mode off while
tangents are live warns once, and an in-place op there on a tensor with a tangent
raises rather than leave the tangent stale.
"""

from __future__ import annotations

import contextlib
import threading
from collections import namedtuple

import numpy as np

from .. import _warn, grad_mode
from ..grad_mode import STATE, enable_grad
from ..tensor import Tensor
from . import engine, graph

__all__ = [
    "dual_level",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
    "UnpackedDualTensor",
    "JVP_RULES",
]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])

# Node name -> rule(tangents, inputs, outs) returning one tangent (or None) per output, or
# NotImplemented to use the derived rule. Rules see unbatched tangents only (jacfwd's
# batched tangents always take the derived rule, which follows Note [Batched gradients]).
JVP_RULES: dict = {}


class _Level(threading.local):
    level = None  # None or an int (the open level)
    tangents = None  # id(tensor) -> (tensor, tangent)
    batch = ()  # (B,) while tangents carry B directions
    busy = False  # inside a derived rule: its own ops need no tangents
    transform = False  # the open level belongs to a tg.func transform, not to the user


_STATE = _Level()
_OPEN = [0]  # open levels over all threads (the hook stays installed while any is open)
_OPEN_LOCK = threading.Lock()  # the count and the hooks change together, one thread at a time


NESTED = "Nested forward mode AD is not supported at the moment"


def enter_dual_level() -> int:
    """Open a dual level and return its index (0).

    Raises:
        RuntimeError: a level is already open (PyTorch's message; see the Note on levels).
    """
    if _STATE.level is not None:
        raise RuntimeError(NESTED)
    _STATE.level = 0
    _STATE.transform = False
    _STATE.tangents = {}
    _STATE.batch = ()
    with _OPEN_LOCK:
        _OPEN[0] += 1
        graph.FORWARD[0] = _propagate
        graph.FORWARD[1] = _inplace_guard
        grad_mode.NO_GRAD_HOOK[0] = _warn_no_grad
    return 0


def exit_dual_level(*, level=None) -> None:
    """Close the open dual level: every tangent made inside it is dropped."""
    if _STATE.level is None:
        raise RuntimeError("forward_ad: exit_dual_level called with no open dual level")
    if level is not None and level != _STATE.level:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. "
            "This is not supported."
        )
    _STATE.level = None
    _STATE.transform = False
    _STATE.tangents = None
    _STATE.batch = ()
    with _OPEN_LOCK:
        _OPEN[0] -= 1
        if _OPEN[0] == 0:
            graph.FORWARD[0] = None
            graph.FORWARD[1] = None
            grad_mode.NO_GRAD_HOOK[0] = None


@contextlib.contextmanager
def dual_level():
    """Context manager: tangents made by :func:`make_dual` live until it exits.

    >>> import tapegrad as tg
    >>> import tapegrad.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     x = fwAD.make_dual(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 0.0]))
    ...     fwAD.unpack_dual(x * x).tangent.detach()
    tensor([2., 0.])
    """
    level = enter_dual_level()
    try:
        yield level
    finally:
        exit_dual_level(level=level)


@contextlib.contextmanager
def transform_level():
    """The dual level of a tg.func transform (jvp, jacfwd): as :func:`dual_level`, marked
    so that a nested transform differentiates a vjp instead (see the Note on levels)."""
    level = enter_dual_level()
    _STATE.transform = True
    try:
        yield level
    finally:
        exit_dual_level(level=level)


def check_transform_nesting(name: str) -> bool:
    """True if a tg.func transform's level is open (the caller nests in it); raise as
    PyTorch does when the open level is the user's own ``dual_level()``."""
    if _STATE.level is None:
        return False
    if not _STATE.transform:
        raise RuntimeError(f"{name}: {NESTED} (called inside a forward_ad.dual_level())")
    return True


def make_dual(tensor: Tensor, tangent: Tensor, *, level=None) -> Tensor:
    """A tensor with ``tensor``'s value that carries ``tangent`` (same shape, float dtype).

    Raises:
        RuntimeError: outside a dual level, or for a tangent of the wrong shape/dtype.
    """
    if _STATE.level is None:
        raise RuntimeError(
            "make_dual: no dual level is open; use `with tg.autograd.forward_ad.dual_level():`"
        )
    if level is not None and level != _STATE.level:
        raise RuntimeError(f"make_dual: Invalid level given to _make_dual (level {level})")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError("make_dual: expected Tensors for the primal and the tangent")
    if tensor._data.dtype.kind != "f":
        raise ValueError(
            f"make_dual: expected the primal to be floating point, got dtype {tensor.dtype}"
        )
    want = _STATE.batch + tuple(tensor._data.shape)
    if tuple(tangent._data.shape) != want:
        raise RuntimeError(
            f"make_dual: trying to set a forward gradient of shape {list(tangent.shape)} on "
            f"a tensor of shape {list(tensor.shape)}; they must have the same shape"
        )
    if tangent._data.dtype != tensor._data.dtype:
        raise RuntimeError(
            f"make_dual: the tangent's dtype {tangent.dtype} must match the primal's {tensor.dtype}"
        )
    with enable_grad():
        _STATE.busy = True
        try:
            dual = tensor.reshape(tensor.shape) if tensor._rg else tensor.detach()
        finally:
            _STATE.busy = False
        if not dual._rg:
            dual.requires_grad_(True)
    _store(dual, tangent)
    return dual


def _key(t: Tensor):
    """Where a tangent is filed: by the recording Node and output number for a result
    (so the output a backward rule rebuilds from its saved array finds it too), by the
    tensor itself for a leaf."""
    node = t.grad_fn
    if node is not None:
        return (id(node), t._output_nr), node
    return id(t), t


def _store(t: Tensor, tangent: Tensor) -> None:
    key, owner = _key(t)
    _STATE.tangents[key] = (owner, tangent)


def tangent_of(t) -> Tensor | None:
    """The tangent ``t`` carries at the open level, or None."""
    table = _STATE.tangents
    if not table or not isinstance(t, Tensor):
        return None
    key, owner = _key(t)
    entry = table.get(key)
    return entry[1] if entry is not None and entry[0] is owner else None


def unpack_dual(tensor: Tensor, *, level=None) -> UnpackedDualTensor:
    """``(primal, tangent)``; the tangent is None where ``tensor`` carries none."""
    if level is not None and _STATE.level is not None and level != _STATE.level:
        raise RuntimeError(f"unpack_dual: Invalid level given to _fw_primal (level {level})")
    return UnpackedDualTensor(tensor, tangent_of(tensor))


_WARNED = [False]


@contextlib.contextmanager
def untracked():
    """Ops run here need no tangents (a custom Function's forward, whose outputs get their
    tangents from its recorded Node): its no_grad does not warn (torch does not either)."""
    was = _STATE.busy
    _STATE.busy = True
    try:
        yield
    finally:
        _STATE.busy = was


def _warn_no_grad() -> None:
    """grad_mode.NO_GRAD_HOOK: grad mode switched off while tangents are live."""
    if _WARNED[0] or _STATE.busy or not _STATE.tangents:
        return
    _WARNED[0] = True
    _warn.warn(
        "forward-mode AD: grad mode was turned off (no_grad) inside a dual level; tapegrad "
        "records nothing there, so results of ops run with grad mode off carry no tangent "
        "(PyTorch propagates tangents under no_grad). Keep grad mode on for the ops whose "
        "tangents you need.",
        UserWarning,
    )


def _inplace_guard(self, others, op) -> None:
    """Raise for an in-place op that would change a tangent-carrying tensor unrecorded.

    Recorded in-place ops need nothing: the result of the out-of-place op gets its
    tangent, and ``self`` takes over that result's Node, under which the tangent is
    filed. Under no_grad nothing is recorded, so the tangent would go stale.
    """
    if _STATE.busy or not _STATE.tangents or STATE.enabled:
        return
    if tangent_of(self) is not None or any(tangent_of(o) is not None for o in others):
        raise NotImplementedError(
            f"forward-mode AD: the in-place op {op} on a tensor with a tangent is not "
            "supported by tapegrad; use the out-of-place op"
        )


def _propagate(outs, inputs, node) -> None:
    """graph.FORWARD hook: give ``outs`` (just recorded by ``node``) their tangents."""
    st = _STATE
    if st.busy or not st.tangents:
        return
    tans = [tangent_of(t) for t in inputs]
    if all(t is None for t in tans):
        return
    if any(o._data.dtype.kind == "c" for o in outs) or any(
        t is not None and x._data.dtype.kind == "c" for x, t in zip(inputs, tans)
    ):
        raise NotImplementedError(
            f"forward-mode AD (jvp, jacfwd, make_dual) through complex tensors is not "
            f"supported ({node.name()}); use reverse mode (backward, grad, jacrev), which "
            "supports them (docs/complex.md)"
        )
    st.busy = True
    try:
        rule = JVP_RULES.get(node._name) if not st.batch else None
        out_tans = NotImplemented if rule is None else rule(tans, inputs, outs)
        if out_tans is NotImplemented:
            out_tans = _derived(outs, inputs, tans, node, st.batch)
    finally:
        st.busy = False
    for o, t in zip(outs, out_tans):
        if t is not None and o._data.dtype.kind in "fV":  # a rule's tangent has o's dtype
            _store(o, t)


def _derived(outs, inputs, tans, node, batch):
    """``J t`` from the backward rule: ``d/du Σ_i <backward(u)_i, t_i>`` (see the Note)."""
    with enable_grad():
        # The rule is linear in u, so any u gives the same J t; a random one (not zeros)
        # lets a gradient that is not recorded in terms of u be told apart from a zero one.
        rng = np.random.default_rng(0)
        us = [
            Tensor._wrap(
                rng.standard_normal(batch + o._data.shape).astype(o._data.dtype)
            ).requires_grad_(True)
            if o._data.dtype.kind in "fV"
            else None
            for o in outs
        ]
        saved_prefix = graph.BATCH.prefix
        graph.BATCH.prefix = batch
        try:
            grads = node.apply(list(us), True)
        finally:
            graph.BATCH.prefix = saved_prefix
        total, used = None, []
        for inp, g, t in zip(inputs, grads, tans):
            if t is None or g is None:
                continue
            want = batch + inp._data.shape
            if g._data.shape != want:
                raise graph.BatchingError(
                    f"forward-mode AD: {node.name()} returned a gradient of shape "
                    f"{list(g._data.shape)} for an input of shape {list(want)}"
                )
            if not g._rg:
                if not g._data.any():  # a derivative that is zero everywhere (sign, floor)
                    continue
                raise _no_rule(node)
            used.append(g)
            term = (g * t).sum()
            total = term if total is None else total + term
        if total is None:
            return [None] * len(outs)
        live = [u for u in us if u is not None]
        graph.BATCH.prefix = ()
        try:
            got = engine.grad(total, live, create_graph=True, allow_unused=True)
        except RuntimeError as exc:
            raise _no_rule(node) from exc
        finally:
            graph.BATCH.prefix = saved_prefix
        if all(r is None for r in got) and any(g._data.any() for g in used):
            # A gradient that requires grad but is not recorded in terms of u (the outputs
            # of a @once_differentiable backward): its tangent can't be derived.
            raise _no_rule(node)
    it = iter(got)
    return [None if u is None else next(it) for u in us]


def _no_rule(node) -> NotImplementedError:
    return NotImplementedError(
        f"forward-mode AD: {node.name()} has no JVP rule and its backward is not written "
        "in differentiable tapegrad ops, so its tangent can't be derived; register a rule "
        "in tapegrad.autograd.forward_ad.JVP_RULES"
    )


def batched_tangents(batch: tuple):
    """Context manager for ``jacfwd``: tangents made inside carry ``batch`` in front."""
    return _Batch(batch)


class _Batch:
    def __init__(self, batch):
        self.batch = tuple(batch)

    def __enter__(self):
        self.saved = _STATE.batch
        _STATE.batch = self.batch

    def __exit__(self, *exc):
        _STATE.batch = self.saved
