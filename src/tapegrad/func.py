"""JAX-style function transforms (torch.func): grad, value_and_grad, jacrev, jacfwd,
hessian, jvp, vjp, linearize, vmap, functional_call, stack_module_state.

Each transform takes a function of Tensors and returns a new function. They
compose (``grad(grad(f))``, ``jacfwd(jacrev(f))``): a transform records its own
backward pass whenever grad mode is on, so an enclosing transform can
differentiate through it, and its results are detached when nothing outside
it requires grad. The reverse-mode transforms live here; ``jvp``/``jacfwd``/
``linearize``/``vjp`` in _func_fwd.py (forward mode), ``vmap`` in _vmap.py, and
``functional_call``/``stack_module_state`` in _func_module.py.
"""

from __future__ import annotations

import numpy as np

from . import _batched, _vmap_grad, _vmap_linear
from .autograd import engine, graph
from .autograd.functional import jacobian_of
from .grad_mode import STATE, enable_grad
from .tensor import Tensor

__all__ = [
    "grad",
    "value_and_grad",
    "grad_and_value",
    "jacrev",
    "jacfwd",
    "hessian",
    "jvp",
    "vjp",
    "linearize",
    "vmap",
    "functional_call",
    "stack_module_state",
    "functionalize",
    "replace_all_batch_norm_modules_",
]


def _argnums(argnums, nargs, name):
    if type(argnums) is int and -nargs <= argnums < nargs:  # the common case
        return True, (argnums % nargs,)
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    if not nums:
        raise ValueError(f"{name}: argnums must be non-empty")
    for a in nums:
        if not isinstance(a, int) or not -nargs <= a < nargs:
            raise ValueError(f"{name}: got argnums={argnums!r} but only {nargs} positional inputs")
    return single, tuple(a % nargs for a in nums)


def _lift(args, nums, name):
    """Replace ``args[i]`` (i in nums) by tensors to differentiate against.

    An argument may be a Tensor or a nest of tuples/lists/dicts of Tensors (a dict of
    parameters, as ``functional_call`` takes); every Tensor in it is lifted. An
    argument that already requires grad (an enclosing transform's variable) gets an
    identity op on top, so this level's gradient is taken with respect to its own
    variable while the enclosing graph stays attached.
    """
    args = list(args)
    diff = []
    # inside vmap: leaves batched at every open level (Note [grad under vmap])
    lift = _vmap_grad.lifter(STATE.enabled) if _batched.LEVELS.active else _lift_plain
    for i in nums:
        args[i] = _lift_tree(args[i], diff, name, i, lift)
    return args, tuple(diff)


def _lift_plain(t):
    if t.requires_grad and STATE.enabled:
        return t.reshape(t.shape)
    return t.detach().requires_grad_(True)


def _lift_tree(t, diff: list, name: str, i: int, lift):
    if isinstance(t, Tensor):
        if t.dtype.kind != "f":
            raise TypeError(f"{name}: argument {i} must be floating point, got dtype {t.dtype}")
        t = lift(t)
        diff.append(t)
        return t
    if isinstance(t, dict):
        return {k: _lift_tree(x, diff, name, i, lift) for k, x in t.items()}
    if isinstance(t, (tuple, list)):
        return type(t)(_lift_tree(x, diff, name, i, lift) for x in t)
    raise TypeError(f"{name}: argument {i} must be a Tensor, got {type(t).__name__}")


def _rebuild(t, flat):
    """``t``'s nest with its Tensors replaced, in order, by the items of iterator ``flat``."""
    if isinstance(t, dict):  # a dict of parameters: its tensors without a call each
        return {k: next(flat) if isinstance(x, Tensor) else _rebuild(x, flat) for k, x in t.items()}
    if isinstance(t, (tuple, list)):
        return type(t)(_rebuild(x, flat) for x in t)
    return next(flat)


def _release(x, keep: bool, own):
    """Detach results that only depend on this level's variables ``own``."""
    if not isinstance(x, Tensor):
        return x
    if keep and x.requires_grad and _reaches_other_leaf(x, own):
        return x
    return x.detach()


def _reaches_other_leaf(t, own) -> bool:
    """Whether a leaf other than this level's variables ``own`` feeds ``t``."""
    return _other_leaf_feeds(_vmap_grad.physical(t).grad_fn, [_vmap_grad.physical(o) for o in own])


def _other_leaf_feeds(root, leaves) -> bool:
    """Whether a leaf other than the (physical) tensors ``leaves`` feeds Node ``root``."""
    if root is None:
        return False
    own_ids = {id(o) for o in leaves}
    seen = {root}
    stack = [root]
    while stack:
        for edge in stack.pop().next_functions:
            if edge is not None:
                node = edge[0]
                if node not in seen:
                    seen.add(node)
                    if type(node) is not _AccumulateGrad:
                        stack.append(node)
                    elif id(node.variable) not in own_ids:
                        return True
    return False


_AccumulateGrad = graph.AccumulateGrad


def _split_aux(out, has_aux, name):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{name}(f, has_aux=True): f must return a (output, aux) tuple")
    return out


def value_and_grad(f, argnums=0, has_aux=False):
    """``f`` and its gradient with respect to ``args[argnums]`` in one call.

    Args:
        f: returns a one-element Tensor (or ``(tensor, aux)`` with ``has_aux``).
        argnums: an int or a tuple of ints.
        has_aux: ``f`` returns ``(output, aux)``; aux is passed through.

    Returns:
        A function returning ``(value, grad)`` (``((value, aux), grad)`` with
        has_aux); ``grad`` is a Tensor for an int argnums, a tuple otherwise.
    """

    def wrapper(*args, **kwargs):
        value, aux, result = _value_and_grad(f, argnums, has_aux, args, kwargs, True)
        return ((value, aux) if has_aux else value), result

    return wrapper


def _value_and_grad(f, argnums, has_aux, args, kwargs, want_value):
    """``(value, aux, grad)`` of value_and_grad; value None unless ``want_value``."""
    single, nums = _argnums(argnums, len(args), "grad")
    # Under grad mode, record our backward: an enclosing transform (or a tensor f
    # closes over) may need it. _release detaches what turns out not to.
    keep = STATE.enabled
    final = False  # grads hold the results already
    saved = STATE.enabled, STATE.inference
    STATE.enabled, STATE.inference = True, False  # enable_grad()
    try:
        lifted, diff = _lift(args, nums, "grad")
        out, aux = _split_aux(f(*lifted, **kwargs), has_aux, "grad")
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError(
                "grad: f must return a Tensor with a single element, got "
                f"{getattr(out, 'shape', type(out).__name__)}"
            )
        if not out.requires_grad:
            grads = (None,) * len(diff)
        elif _batched.LEVELS.active:  # Note [grad under vmap]
            phys = _vmap_grad.physical(out)
            leaves = [_vmap_grad.physical(d) for d in diff]
            nodes = None
            if keep and not has_aux:
                other, nodes, targets = _vmap_grad.plan_backward(phys.grad_fn, leaves)
                if not other:
                    # Nothing outside this level's variables feeds ``out``: _release would
                    # detach every gradient, so skip recording the backward graph at all.
                    keep = False
            root = np.empty(phys._data.shape, phys._data.dtype)
            root.fill(1)  # before wrapping: a recording compares the wrapped array's values
            root = Tensor._wrap(root)
            # Note [Deferred outer products]: written once the gradients are wrapped.
            deferring = nodes is not None and not keep and _vmap_linear.may_defer()
            if deferring:
                _vmap_linear.open_deferral(nodes, targets)
            try:
                grads = engine.grad(phys, leaves, root, create_graph=keep, allow_unused=True)
                if keep:
                    grads = [
                        g if g is None else _vmap_grad.rewrap_like(g, d)
                        for g, d in zip(grads, diff)
                    ]
                else:  # fresh gradients (below), read on the physical tensors
                    grads = [
                        _zeros_like(d)
                        if g is None
                        else _vmap_grad.rewrap_like(g.detach() if g._rg else g, d)
                        for g, d in zip(grads, diff)
                    ]
                    final = True
            except BaseException:
                if deferring:
                    _vmap_linear.close_deferral(False)
                raise
            if deferring:
                _vmap_linear.close_deferral(True)
        else:
            if keep and not has_aux and not _reaches_other_leaf(out, diff):
                keep = False
            grads = engine.grad(out, diff, create_graph=keep, allow_unused=True)
    finally:
        STATE.enabled, STATE.inference = saved
    # Without keep the engine recorded nothing: its gradients are fresh tensors that
    # need no detaching (unless a custom backward handed out one that requires grad).
    if not final:
        grads = tuple(
            _zeros_like(d)
            if g is None
            else (_release(g, keep, diff) if keep or g.requires_grad else g)
            for g, d in zip(grads, diff)
        )
    value = _release(out, keep, diff) if want_value else None
    flat = iter(grads)
    if single:
        return value, aux, _rebuild(args[nums[0]], flat)
    return value, aux, tuple(_rebuild(args[i], flat) for i in nums)


def _zeros_like(d):
    """The gradient of a variable that the output does not depend on (unbatched zeros)."""
    return Tensor._wrap(np.zeros(d.shape, d.dtype))


def grad(f, argnums=0, has_aux=False):
    """The gradient of a scalar function with respect to ``args[argnums]``.

    >>> import tapegrad as tg
    >>> df = tg.func.grad(lambda x: (x * x * x).sum())
    >>> tg.func.grad(lambda x: df(x).sum())(tg.tensor([1.0, 2.0]))
    tensor([ 6., 12.])
    """

    def wrapper(*args, **kwargs):
        _, aux, g = _value_and_grad(f, argnums, has_aux, args, kwargs, False)
        return (g, aux) if has_aux else g

    return wrapper


def grad_and_value(f, argnums=0, has_aux=False):
    """PyTorch's order: a function returning ``(grad, value)`` (``(grad, (value, aux))``)."""
    vg = value_and_grad(f, argnums, has_aux)

    def wrapper(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return g, value

    return wrapper


def jacrev(f, argnums=0, has_aux=False):
    """The Jacobian of ``f`` with respect to ``args[argnums]`` (batched reverse mode).

    Returns:
        A function whose result has shape ``out.shape + arg.shape`` for one output and
        an int argnums; tuples where ``f`` returns a tuple or argnums is a tuple
        (outer level: outputs, inner level: arguments). With has_aux, ``(jac, aux)``.
    """

    def wrapper(*args, **kwargs):
        single, nums = _argnums(argnums, len(args), "jacrev")
        keep = STATE.enabled
        with enable_grad():
            lifted, diff = _lift(args, nums, "jacrev")
            out, aux = _split_aux(f(*lifted, **kwargs), has_aux, "jacrev")
            is_tuple = isinstance(out, tuple)
            outs = out if is_tuple else (out,)
            if _batched.LEVELS.active:  # Note [grad under vmap]
                res = _vmap_grad.jacobian(outs, diff, keep)
            else:
                res = jacobian_of(outs, diff, keep, False, True, "jacrev")
        res = [[_release(b, keep, diff) for b in row] for row in res]
        # Per output, the blocks of each argument in that argument's nest (a dict of
        # parameters gives a dict of Jacobians, as torch.func).
        res = [tuple(_rebuild(args[i], iter_) for i in nums) for iter_ in map(iter, res)]
        res = tuple(r[0] if single else r for r in res)
        jac = res if is_tuple else res[0]
        return (jac, aux) if has_aux else jac

    return wrapper


def hessian(f, argnums=0):
    """``jacfwd(jacrev(f, argnums), argnums)``: shape ``arg.shape + arg.shape`` for a scalar f."""
    return jacfwd(jacrev(f, argnums), argnums)


# The forward-mode, batching and module transforms (they read the helpers above).
from ._func_fwd import jacfwd, jvp, linearize, vjp  # noqa: E402
from ._func_module import functional_call, stack_module_state  # noqa: E402
from ._func_rewrites import functionalize, replace_all_batch_norm_modules_  # noqa: E402
from ._vmap import vmap  # noqa: E402
