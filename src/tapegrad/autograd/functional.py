"""Higher-level derivatives of functions: jacobian, hessian, vjp, jvp, hvp, vhp.

Signatures, argument checks and the nesting of results follow
``torch.autograd.functional``: ``inputs`` is a Tensor or a tuple of Tensors, and each
result mirrors it (a tuple exactly where the inputs or outputs were a tuple).

All of these are reverse mode. ``jvp`` and ``hvp`` use the double-vjp trick: for a
dummy ``u``, ``g(u) = Jᵀu`` is linear in ``u``, so the vjp of ``g`` with ``v`` is ``Jv``.
``jacobian(vectorize=True)`` computes all rows of each output's Jacobian in one
batched backward (see :mod:`tapegrad.autograd.batched`).
"""

from __future__ import annotations

import numpy as np

from ..grad_mode import enable_grad
from ..tensor import Tensor
from . import engine
from .batched import vjp_rows

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# -- argument handling shared by every function ---------------------------------------


def _as_tuple(x, what: str, fn_name: str):
    is_tuple = isinstance(x, tuple)
    items = x if is_tuple else (x,)
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"The {what} given to {fn_name} must be either a Tensor or a tuple of Tensors "
                f"but the value at index {i} has type {type(t).__name__}."
            )
    return is_tuple, items


def _prepare_inputs(inputs, create_graph):
    """Fresh leaves to differentiate against; under create_graph, stay linked to the caller's."""
    out = []
    for t in inputs:
        if create_graph and t.requires_grad:
            out.append(t.reshape(t.shape))  # an identity op keeps the outer graph attached
        else:
            out.append(t.detach().requires_grad_(True))
    return tuple(out)


def _finish(tensors, create_graph):
    if create_graph:
        return tensors
    return tuple(None if t is None else t.detach() for t in tensors)


def _nest(res, is_tuple):
    return res if is_tuple else res[0]


def _nest2(res, outer_tuple, inner_tuple):
    if inner_tuple:
        res = tuple(tuple(r) for r in res)
    else:
        res = tuple(r[0] for r in res)
    return res if outer_tuple else res[0]


def _validate_v(v, other, is_other_tuple, fn_name):
    if len(v) != len(other):
        raise RuntimeError(
            f"{fn_name}: v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
        )
    for i, (a, b) in enumerate(zip(v, other)):
        if a.shape != b.shape:
            where = f"Entry {i} in " if is_other_tuple else ""
            raise RuntimeError(
                f"{fn_name}: {where}v has invalid size: should be {list(b.shape)} but got "
                f"{list(a.shape)}."
            )


def _zeros(t: Tensor, shape=None) -> Tensor:
    return Tensor._wrap(np.zeros(t.shape if shape is None else shape, t.dtype))


def _check_outputs_require_grad(outputs, strict, fn_name):
    if not strict:
        return
    for i, o in enumerate(outputs):
        if not o.requires_grad:
            raise RuntimeError(
                f"{fn_name}: output {i} of the user-provided function does not require "
                "gradients. The outputs must be computed in a differentiable manner from the "
                "input when running in strict mode."
            )


def _fill_unused(grads, like, strict, fn_name, what="input"):
    out = []
    for i, (g, t) in enumerate(zip(grads, like)):
        if g is None:
            if strict:
                raise RuntimeError(
                    f"{fn_name}: the output of the user-provided function is independent of "
                    f"{what} {i}. This is not allowed in strict mode."
                )
            g = _zeros(t)
        out.append(g)
    return tuple(out)


def _grad(outputs, inputs, grad_outputs, create_graph):
    """autograd.grad over the outputs that require grad; None for unused inputs."""
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    outs, gos = zip(*pairs)
    return engine.grad(
        outs, inputs, gos, retain_graph=True, create_graph=create_graph, allow_unused=True
    )


def _single_element(out, fn_name):
    if not isinstance(out, Tensor):
        raise TypeError(
            f"The function given to {fn_name} should return a single Tensor, got "
            f"{type(out).__name__}"
        )
    if out.numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn_name} should contain a single "
            f"element, got shape {list(out.shape)}"
        )
    return out


# -- the functions --------------------------------------------------------------------


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``vᵀ J`` of ``func`` at ``inputs``.

    Args:
        func: takes Tensors, returns a Tensor or a tuple of Tensors.
        inputs: a Tensor or a tuple of Tensors.
        v: same structure as ``func``'s output; may be None for a one-element output.
        create_graph: make the result differentiable.
        strict: raise if an output does not depend on an input.

    Returns:
        ``(func_output, vjp)``; ``vjp`` has the structure of ``inputs``.
    """
    with enable_grad():
        is_in_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare_inputs(inputs, create_graph)
        is_out_tuple, outputs = _as_tuple(
            func(*inputs), "outputs of the user-provided function", "vjp"
        )
        _check_outputs_require_grad(outputs, strict, "vjp")
        if v is None:
            if len(outputs) != 1 or outputs[0].numel() != 1:
                raise RuntimeError(
                    "vjp: the vector v can only be None if the user-provided function returns "
                    "a single Tensor with a single element."
                )
            v = (Tensor._wrap(np.ones(outputs[0].shape, outputs[0].dtype)),)
        else:
            _, v = _as_tuple(v, "v", "vjp")
            _validate_v(v, outputs, is_out_tuple, "vjp")
        grads = _fill_unused(_grad(outputs, inputs, v, create_graph), inputs, strict, "vjp")
    return _nest(_finish(outputs, create_graph), is_out_tuple), _nest(
        _finish(grads, create_graph), is_in_tuple
    )


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``J v`` of ``func`` at ``inputs`` (double-vjp trick).

    Args:
        func, inputs, create_graph, strict: as in :func:`vjp`.
        v: same structure as ``inputs``; may be None for a one-element input.

    Returns:
        ``(func_output, jvp)``; ``jvp`` has the structure of ``func``'s output.
    """
    with enable_grad():
        is_in_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare_inputs(inputs, create_graph)
        if v is None:
            if len(inputs) != 1 or inputs[0].numel() != 1:
                raise RuntimeError(
                    "jvp: the vector v can only be None if the input to the user-provided "
                    "function is a single Tensor with a single element."
                )
            v = (Tensor._wrap(np.ones(inputs[0].shape, inputs[0].dtype)),)
        else:
            _, v = _as_tuple(v, "v", "jvp")
            _validate_v(v, inputs, is_in_tuple, "jvp")
        is_out_tuple, outputs = _as_tuple(
            func(*inputs), "outputs of the user-provided function", "jvp"
        )
        _check_outputs_require_grad(outputs, strict, "jvp")
        # g(u) = Jᵀu is linear in the dummy u, so d<g(u), v>/du = J v.
        dummies = tuple(_zeros(o).requires_grad_(True) for o in outputs)
        g = _grad(outputs, inputs, dummies, create_graph=True)
        g = _fill_unused(g, inputs, strict, "jvp")
        live = [(gi, vi) for gi, vi in zip(g, v) if gi.requires_grad]
        if live:
            gs, vs = zip(*live)
            res = engine.grad(gs, dummies, vs, create_graph=create_graph, allow_unused=True)
        else:
            res = (None,) * len(outputs)
        res = _fill_unused(res, outputs, strict, "jvp", what="output (jvp)")
    return _nest(_finish(outputs, create_graph), is_out_tuple), _nest(
        _finish(res, create_graph), is_out_tuple
    )


_STRATEGIES = ("reverse-mode", "forward-mode")


def jacobian(
    func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"
):
    """The Jacobian of ``func`` at ``inputs``.

    Args:
        func: takes Tensors, returns a Tensor or a tuple of Tensors.
        inputs: a Tensor or a tuple of Tensors.
        create_graph: make the result differentiable (for higher derivatives).
        strict: raise if an output does not depend on an input (zeros otherwise).
        vectorize: compute all rows of each output's Jacobian in one batched backward
            pass instead of one backward per row (falls back to the loop, with the
            same result, when an op in the graph cannot run batched).
        strategy: ``"reverse-mode"``, or ``"forward-mode"`` (needs ``vectorize=True``,
            as in PyTorch; tapegrad computes it in reverse mode too, same result).

    Returns:
        Entry ``[i][j]`` has shape ``output_i.shape + input_j.shape``; the levels are
        tuples only where the outputs / inputs were tuples (a single Tensor otherwise).
    """
    if strategy not in _STRATEGIES:
        raise ValueError(
            f"jacobian: expected strategy to be 'forward-mode' or 'reverse-mode', got {strategy!r}"
        )
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError("jacobian: strategy='forward-mode' requires vectorize=True")
    if strict and vectorize:
        raise RuntimeError(
            "jacobian: strict=True and vectorize=True are not supported together. "
            "Please either set strict=False or vectorize=False."
        )
    with enable_grad():
        is_in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare_inputs(inputs, create_graph)
        is_out_tuple, outputs = _as_tuple(
            func(*inputs), "outputs of the user-provided function", "jacobian"
        )
        _check_outputs_require_grad(outputs, strict, "jacobian")
        res = jacobian_of(outputs, inputs, create_graph, strict, vectorize)
    return _nest2(res, is_out_tuple, is_in_tuple)


def jacobian_of(outputs, inputs, create_graph, strict, vectorize, fn_name="jacobian"):
    """Jacobian blocks ``[[d out_i / d in_j]]`` of already computed outputs (nested lists)."""
    res = []
    for i, out in enumerate(outputs):
        m = out.numel()
        if not out.requires_grad or m == 0:
            rows = [None] * len(inputs)
        else:
            eye = np.eye(m, dtype=out.dtype).reshape((m,) + out.shape)
            rows = vjp_rows(
                (out,), inputs, [Tensor._wrap(eye)], create_graph=create_graph, vectorize=vectorize
            )
        blocks = []
        for j, (inp, r) in enumerate(zip(inputs, rows)):
            shape = out.shape + inp.shape
            if r is None:
                if strict:
                    raise RuntimeError(
                        f"{fn_name}: output {i} of the user-provided function is independent "
                        f"of input {j}. This is not allowed in strict mode."
                    )
                blocks.append(_zeros(inp, shape))
            elif create_graph:
                blocks.append(r.reshape(shape))
            else:
                blocks.append(Tensor._wrap(r._data.reshape(shape)))
        res.append(blocks)
    return res


def hessian(
    func,
    inputs,
    create_graph=False,
    strict=False,
    vectorize=False,
    outer_jacobian_strategy="reverse-mode",
):
    """The Hessian of a scalar function: the Jacobian of its gradient.

    Args:
        func: takes Tensors, returns a Tensor with a single element.
        inputs, create_graph, strict, vectorize: as in :func:`jacobian`.
        outer_jacobian_strategy: the ``strategy`` of the outer Jacobian.

    Returns:
        Entry ``[i][j]`` has shape ``input_i.shape + input_j.shape`` (a Tensor when
        ``inputs`` is a Tensor, nested tuples when it is a tuple).
    """
    if outer_jacobian_strategy not in _STRATEGIES:
        raise ValueError(
            f"hessian: expected outer_jacobian_strategy to be 'forward-mode' or "
            f"'reverse-mode', got {outer_jacobian_strategy!r}"
        )
    if outer_jacobian_strategy == "forward-mode" and not vectorize:
        raise NotImplementedError(
            "hessian: outer_jacobian_strategy='forward-mode' requires vectorize=True"
        )
    if strict and vectorize:
        raise RuntimeError(
            "hessian: strict=True and vectorize=True are not supported together. "
            "Please either set strict=False or vectorize=False."
        )
    with enable_grad():
        is_in_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
        inputs = _prepare_inputs(inputs, create_graph)
        out = _single_element(func(*inputs), "hessian")
        _check_outputs_require_grad((out,), strict, "hessian")
        ones = (Tensor._wrap(np.ones(out.shape, out.dtype)),)
        grads = _grad((out,), inputs, ones, create_graph=True)
        grads = [_zeros(t) if g is None else g for g, t in zip(grads, inputs)]
        res = jacobian_of(grads, inputs, create_graph, strict, vectorize, "hessian")
    return _nest2(res, is_in_tuple, is_in_tuple)


def _hv_setup(func, inputs, v, create_graph, strict, fn_name):
    is_in_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _prepare_inputs(inputs, create_graph)
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError(
                f"{fn_name}: the vector v can only be None if the input to the user-provided "
                "function is a single Tensor with a single element."
            )
        v = (Tensor._wrap(np.ones(inputs[0].shape, inputs[0].dtype)),)
    else:
        _, v = _as_tuple(v, "v", fn_name)
        _validate_v(v, inputs, is_in_tuple, fn_name)
    out = _single_element(func(*inputs), fn_name)
    _check_outputs_require_grad((out,), strict, fn_name)
    ones = (Tensor._wrap(np.ones(out.shape, out.dtype)),)
    jac = _grad((out,), inputs, ones, create_graph=True)
    jac = _fill_unused(jac, inputs, strict, fn_name)
    return is_in_tuple, inputs, v, out, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``vᵀ H`` of a scalar function at ``inputs``.

    Returns:
        ``(func_output, vhp)``; ``vhp`` has the structure of ``inputs``.
    """
    with enable_grad():
        is_in_tuple, inputs, v, out, jac = _hv_setup(func, inputs, v, create_graph, strict, "vhp")
        res = _grad(jac, inputs, v, create_graph)
        res = _fill_unused(res, inputs, strict, "vhp")
    return _finish((out,), create_graph)[0], _nest(_finish(res, create_graph), is_in_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``H v`` of a scalar function at ``inputs`` (double-backward trick, as PyTorch).

    Returns:
        ``(func_output, hvp)``; ``hvp`` has the structure of ``inputs``.
    """
    with enable_grad():
        is_in_tuple, inputs, v, out, jac = _hv_setup(func, inputs, v, create_graph, strict, "hvp")
        dummies = tuple(_zeros(t).requires_grad_(True) for t in inputs)
        back = _grad(jac, inputs, dummies, create_graph=True)
        back = _fill_unused(back, inputs, strict, "hvp")
        live = [(b, vi) for b, vi in zip(back, v) if b.requires_grad]
        if live:
            bs, vs = zip(*live)
            got = engine.grad(bs, dummies, vs, create_graph=create_graph, allow_unused=True)
        else:
            got = (None,) * len(inputs)
        res = _fill_unused(got, inputs, strict, "hvp")
    return _finish((out,), create_graph)[0], _nest(_finish(res, create_graph), is_in_tuple)
