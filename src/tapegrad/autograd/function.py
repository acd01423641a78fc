"""User-defined differentiable operations: ``tg.autograd.Function``.

A Function lowers onto the same funnel as every built-in op
(:func:`graph.make_results`): ``apply`` runs ``forward`` with grad mode off, wraps
its outputs, and records one Node named ``<Class>Backward`` whose closure calls the
user's ``backward``. The engine sees an ordinary Node, so hooks, anomaly mode,
``create_graph`` and batched backward work unchanged. The Node owns the ctx, so
the tensors saved on it are freed when the graph is released.
"""

from __future__ import annotations

import functools
import weakref

from ..grad_mode import STATE, no_grad
from ..tensor import Tensor
from . import anomaly, forward_ad, graph

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    """The ``ctx`` handed to ``forward``/``backward``: what backward needs from forward.

    Attributes:
        needs_input_grad: one bool per argument of ``apply``: whether it needs a gradient.
    """

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad
        self.materialize_grads = True
        self._to_save = ()
        self._saved = None  # ((kind, value), ...) once apply has seen the outputs
        self._non_differentiable = ()
        self._node = None  # weakref to the FunctionNode, for saved outputs
        self._name = ""

    def save_for_backward(self, *tensors) -> None:
        """Keep ``tensors`` (inputs, outputs or None) for backward; they are version-checked."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"save_for_backward can only save Tensors or None, got {type(t).__name__}"
                )
        self._to_save = tensors

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward``; a saved output comes back attached
        to this Function's Node under ``create_graph`` (so backward stays differentiable)."""
        if self._saved is None:
            return tuple(self._to_save)
        if self._saved is _FREED:
            raise RuntimeError(
                f"Trying to backward through the graph a second time ({self._name} has "
                "already freed its saved tensors). Pass retain_graph=True to the first "
                "backward() or autograd.grad() call if you need to backward through "
                "the graph again."
            )
        node = self._node() if self._node is not None else None
        out = []
        for kind, value, nr in self._saved:
            if kind == "output" and STATE.enabled and node is not None:
                t = Tensor._wrap(value._data)
                t._vc = value._vc
                t.grad_fn = node
                t._output_nr = nr
                t._rg = True
                value = t
            out.append(value)
        return tuple(out)

    def mark_non_differentiable(self, *tensors) -> None:
        """Outputs that get no gradient (e.g. indices); they do not require grad."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """If False, backward receives None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors) -> None:
        """Accepted for compatibility: tapegrad bumps version counters in its in-place ops."""


# ctx._saved once the Node released its saved tensors (Note [Backward twice] in graph.py).
_FREED = ("freed",)


class FunctionNode(graph.Node):
    """The Node of a Function: tells the closure which gradients were absent."""

    __slots__ = ("_absent", "_ctx")

    def __init__(self, backward, next_functions, name, out_meta):
        super().__init__(backward, next_functions, name, out_meta)
        self._absent = None
        self._ctx = None  # set by Function.apply; ctx holds this Node only weakly

    def release(self) -> None:
        """As PyTorch: free the saved tensors but keep ``backward``, so a second pass works
        unless it reads ``ctx.saved_tensors`` (Note [Backward twice] in graph.py)."""
        self._saved_versions = None
        self._released = True
        ctx = self._ctx
        if ctx is not None:
            ctx._saved = _FREED

    def apply(self, grads: list, create_graph: bool):
        self._absent = tuple(g is None for g in grads)
        try:
            return super().apply(grads, create_graph)
        finally:
            self._absent = None


class _FunctionMeta(type):
    def __init__(cls, name, bases, ns):
        super().__init__(name, bases, ns)
        cls._backward_name = f"{name}Backward"


class Function(metaclass=_FunctionMeta):
    """Base class for an op with a hand-written gradient.

    Subclass it with static ``forward(ctx, *args)`` (runs with grad mode off; may take
    non-Tensor arguments; returns a Tensor or a tuple) and ``backward(ctx, *grads)``
    (one gradient per output in, one gradient or None per ``forward`` argument out),
    then call ``MyFn.apply(*args)``. A backward written in tapegrad ops is itself
    differentiable (``create_graph=True``).

    >>> import tapegrad as tg
    >>> class Cube(tg.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x * x
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return g * 3.0 * x * x
    >>> x = tg.tensor(2.0, requires_grad=True)
    >>> Cube.apply(x).backward()
    >>> x.grad
    tensor(12.)
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            f"{type(self).__name__}: Functions are not instantiated; call "
            f"{type(self).__name__}.apply(...) with static forward and backward methods"
        )

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("subclasses of Function must implement a static forward")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Optional (PyTorch 2 style): fill ``ctx`` when ``forward`` takes no ctx."""
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("subclasses of Function must implement a static backward")

    @classmethod
    def vjp(cls, ctx, *grads):
        """Alias of ``backward`` (define either)."""
        return cls.backward(ctx, *grads)

    @classmethod
    def apply(cls, *args):
        """Run ``forward`` and record a Node named ``<Class>Backward``."""
        needs = tuple(isinstance(a, Tensor) and a._rg for a in args)
        ctx = FunctionCtx(needs if STATE.enabled else (False,) * len(args))
        ctx._name = cls._backward_name
        separate_setup = "setup_context" in _overridden(cls)
        with forward_ad.untracked(), no_grad():
            if separate_setup:
                result = cls.forward(*args)
                cls.setup_context(ctx, args, result)
            else:
                result = cls.forward(ctx, *args)
        is_tuple = isinstance(result, tuple)
        results = result if is_tuple else (result,)
        positions = [k for k, r in enumerate(results) if isinstance(r, Tensor)]
        if not positions:
            raise TypeError(f"{cls.__name__}.forward must return a Tensor or a tuple of Tensors")
        raw = [results[k] for k in positions]
        tensor_args = tuple(a if isinstance(a, Tensor) else None for a in args)
        saved_inputs = tuple(
            t if not t.is_sparse else t._values()  # a sparse tensor: check its values
            for t in ctx._to_save
            if t is not None and not any(t is r for r in raw)
        )
        saved_outputs = tuple(r for r in raw if any(t is r for t in ctx._to_save))
        backward = _make_backward(cls, ctx, args, positions, len(results))
        outs = graph.make_results(
            [r._data for r in raw],
            tensor_args,
            backward,
            cls._backward_name,
            saved=saved_inputs + saved_outputs,
            node_type=FunctionNode,
        )
        node = next((o.grad_fn for o in outs if o.grad_fn is not None), None)
        non_diff = ctx._non_differentiable
        for o, r in zip(outs, raw):
            o._vc = r._vc  # in-place changes to the returned tensor reach saved copies
            if any(r is t for t in non_diff) and o.grad_fn is not None:
                o.grad_fn = None
                o._rg = False
        _freeze_saved(ctx, raw, node)
        if node is not None and anomaly._RECORDERS:  # inside checkgraph.checkable()
            _record_replay(node, cls, args, raw)
        wrapped = list(results)
        for k, o in zip(positions, outs):
            wrapped[k] = o
        return tuple(wrapped) if is_tuple else wrapped[0]


def _overridden(cls) -> set:
    names = set()
    for klass in cls.__mro__:
        if klass is Function:
            break
        names.update(vars(klass))
    return names


def _freeze_saved(ctx, raw, node):
    saved = []
    for t in ctx._to_save:
        nr = next((i for i, r in enumerate(raw) if r is t), None)
        if nr is None:
            saved.append(("input", t, 0))
        else:
            # The raw forward result, not the returned Tensor: that one points at the
            # Node, and the Node owns ctx (a cycle). It shares data and version counter.
            saved.append(("output", raw[nr], nr))
    ctx._saved = tuple(saved)
    ctx._to_save = ()
    if node is not None:
        ctx._node = weakref.ref(node)
        node._ctx = ctx


def _make_backward(cls, ctx, args, positions=None, n_outputs=None):
    nargs = len(args)
    is_tensor = tuple(isinstance(a, Tensor) for a in args)
    # What the checks below need of each argument, rather than the arguments themselves:
    # the Node outlives backward (Note [Backward twice]) and must not keep inputs alive.
    metas = tuple(
        (a._data.shape, a._data.dtype) if isinstance(a, Tensor) else type(a).__name__ for a in args
    )
    user_backward = cls.vjp if "backward" not in _overridden(cls) else cls.backward
    name = cls._backward_name

    def backward(*grads):
        if not ctx.materialize_grads:
            node = ctx._node() if ctx._node is not None else None
            absent = node._absent if node is not None else None
            if absent:
                grads = tuple(None if a else g for g, a in zip(grads, absent))
        if positions is not None and len(positions) != n_outputs:
            # one gradient per output of forward, None for those not Tensors (as torch)
            full = [None] * n_outputs
            for k, g in zip(positions, grads):
                full[k] = g
            grads = tuple(full)
        result = user_backward(ctx, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        if len(result) > nargs and all(r is None for r in result[nargs:]):
            result = result[:nargs]
        if len(result) != nargs:
            raise RuntimeError(
                f"function {name} returned an incorrect number of gradients "
                f"(expected {nargs}, got {len(result)}): {cls.__name__}.backward must return "
                "one gradient (or None) per argument of forward"
            )
        out = []
        for i, g in enumerate(result):
            if g is not None and not is_tensor[i]:
                raise RuntimeError(
                    f"function {name} returned a gradient different than None at position "
                    f"{i}, but the corresponding forward input was not a Tensor "
                    f"({metas[i]})"
                )
            if g is not None and not isinstance(g, Tensor):
                raise RuntimeError(
                    f"function {name} returned a {type(g).__name__} as gradient {i}; "
                    "expected a Tensor or None"
                )
            if g is not None and not ctx.needs_input_grad[i]:
                g = None
            if g is not None:
                want = graph.batched_shape(metas[i][0])
                if g._data.shape != want:
                    cls_err = graph.BatchingError if graph.BATCH.prefix else RuntimeError
                    raise cls_err(
                        f"function {name} returned an invalid gradient at index {i} - got "
                        f"shape {list(g._data.shape)} but expected shape compatible with "
                        f"{list(want)} ({cls.__name__}.backward)"
                    )
                if g._data.dtype != metas[i][1]:
                    g = g._cast(metas[i][1])
            out.append(g)
        return tuple(out)

    return backward


def _record_replay(node, cls, args, raw):
    """For check_graph: re-running this Function on new inputs means calling apply again."""
    from .checkgraph import attach_replay  # noqa: PLC0415 - debug tooling, loaded on demand

    attach_replay(node, cls.apply, args, {}, tuple(r._data for r in raw))


class _DelayedError(Function):
    """The outputs of a ``once_differentiable`` backward, when they could be differentiated
    again: their gradient raises (torch's ``DelayedError``)."""

    @staticmethod
    def forward(ctx, *outputs):
        return tuple(o.clone() for o in outputs) if len(outputs) > 1 else outputs[0].clone()

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(
            "trying to differentiate twice a function that was marked with @once_differentiable"
        )


def once_differentiable(fn):
    """Decorate a Function's ``backward`` that is not itself differentiable, as torch's.

    ``fn`` runs with grad mode off. When the backward pass records a graph
    (``create_graph=True``) and an input of ``fn`` requires grad, its outputs come back
    requiring grad through a Node whose backward raises, so differentiating them again is
    an error rather than a silent zero."""

    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        with no_grad():
            outputs = fn(ctx, *args, **kwargs)
        if not STATE.enabled:
            return outputs
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        many = isinstance(outputs, tuple)
        items = outputs if many else (outputs,)
        keep = [o.detach().requires_grad_(True) if isinstance(o, Tensor) else o for o in items]
        tensors = [o for o in keep if isinstance(o, Tensor)]
        if not tensors:
            return outputs
        errs = _DelayedError.apply(*tensors)
        errs = list(errs) if isinstance(errs, tuple) else [errs]
        out = tuple(errs.pop(0) if isinstance(o, Tensor) else o for o in keep)
        return out if many else out[0]

    return wrapper
