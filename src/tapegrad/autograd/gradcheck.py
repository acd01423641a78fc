"""gradcheck and gradgradcheck: analytic gradients against central differences.

The function's outputs are reduced to one number L = Σ w ⊙ f(inputs) with fixed
pseudo-random weights w in [-1, 1) (NumPy's PCG64 generator, the same numbers on
every platform). Each element x of each checked tensor is perturbed by ±eps:

    numeric = (L(x + eps) − L(x − eps)) / (2·eps)

and passes when ``|analytic − numeric| <= atol + rtol·|numeric|``.
The defaults are PyTorch's (eps=1e-6, atol=1e-5, rtol=1e-3), meant for float64:
inputs are checked in their own dtype, and a lower-precision input gets a warning
(as in PyTorch), since a step of 1e-6 is below float32's resolution.

gradgradcheck checks the double backward with respect to the inputs *and* to
the upstream gradient: as in PyTorch, the weights of the first-order gradient are
random tensors that require grad and are checked like inputs.
"""

from __future__ import annotations

import numpy as np

from .. import _warn
from ..grad_mode import enable_grad, is_grad_enabled, no_grad
from ..tensor import Tensor
from . import engine

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """A gradient disagreed with central differences; the message names where."""


def _weights(shape, dtype, seed):
    rng = np.random.Generator(np.random.PCG64(seed))
    if np.dtype(dtype).kind == "c":
        return (
            rng.uniform(-1.0, 1.0, size=tuple(shape) + (2,))
            .view(np.complex128)[..., 0]
            .astype(dtype)
        )
    return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)


def _outputs(result):
    if isinstance(result, Tensor):
        return (result,)
    return tuple(r for r in result if isinstance(r, Tensor))


def _reduce(outputs, weights):
    total = None
    for out, w in zip(outputs, weights):
        kind = out._data.dtype.kind
        if kind not in "fc":
            continue
        # a complex output f counts as Re(Σ conj(w) f): its gradient (PyTorch's convention) is w
        term = (out * w).sum() if kind == "f" else (out * w.conj()).real.sum()
        total = term if total is None else total + term
    return total


def _checked(inputs, wrt):
    """The tensors to check, with printable names."""
    named = []
    for i, t in enumerate(inputs):
        if isinstance(t, Tensor) and t.requires_grad:
            named.append((f"input {i}", t))
    for j, t in enumerate(wrt or ()):
        if not t.requires_grad:
            continue
        label = getattr(t, "_name", None) or f"wrt[{j}]"
        named.append((label, t))
    return named


def gradcheck(
    fn,
    inputs,
    *,
    wrt=None,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    raise_exception=True,
    seed=0,
    localize=False,
):
    """Check ``fn``'s gradients with respect to ``inputs`` (and captured tensors ``wrt``).

    Args:
        fn: callable taking ``*inputs`` and returning a Tensor or a tuple of Tensors.
        inputs: a Tensor or a tuple of arguments; tensors with ``requires_grad`` are checked.
        wrt: tensors that ``fn`` reads without taking them as arguments (e.g.
            ``model.parameters()``); each is perturbed in place and restored.
        eps, atol, rtol: finite-difference step and tolerances.
        raise_exception: raise GradcheckError on failure (else return False).
        seed: seed of the weights w in L = Σ w ⊙ f.
        localize: on failure, also check each Node of the graph on its own
            (``tapegrad.autograd.check_graph``) and name the first faulty one.

    Returns:
        True when every element passes.

    Raises:
        GradcheckError: naming the input, the element index and both values.
    """
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    inputs = tuple(inputs)
    wrt = list(wrt) if wrt is not None else None
    named = _checked(inputs, wrt)
    if not named:
        raise ValueError("gradcheck: no input or wrt tensor requires grad; nothing to check")
    for label, t in named:
        if t._data.dtype not in (np.float64, np.complex128):
            _warn.warn(
                f"gradcheck: {label} requires grad and is {t.dtype}, not float64; with "
                f"eps={eps} the check will likely fail (use float64 inputs)",
            )

    with enable_grad():
        outputs = _outputs(fn(*inputs))
    weights = [
        Tensor._wrap(_weights(o._data.shape, o._data.dtype, seed + k))
        for k, o in enumerate(outputs)
    ]

    with enable_grad():
        loss = _reduce(outputs, weights)
    tensors = [t for _, t in named]
    if loss is None or not loss.requires_grad:
        analytic = [None] * len(tensors)
    else:
        analytic = engine.grad(loss, tensors, allow_unused=True)

    def value():
        with no_grad():
            total = _reduce(_outputs(fn(*inputs)), weights)
        return 0.0 if total is None else float(total._data)

    for (label, t), a in zip(named, analytic):
        cx = t._data.dtype.kind == "c"
        a = np.zeros(t._data.shape, np.complex128 if cx else np.float64) if a is None else a._data
        # A complex element is checked along its real and its imaginary direction: its
        # gradient is dL/dx + i dL/dy (PyTorch's convention).
        for idx, step, part in _directions(t._data.shape, eps, cx):
            orig = t._data[idx].copy()
            t._data[idx] = orig + step
            plus = value()
            t._data[idx] = orig - step
            minus = value()
            t._data[idx] = orig
            numeric = (plus - minus) / (2 * eps)
            got = float(a[idx].imag if part == "imag" else a[idx].real)
            if not abs(got - numeric) <= atol + rtol * abs(numeric) or np.isnan(got):
                where = f" ({part} part)" if cx else ""
                msg = (
                    f"gradcheck failed for {label} (shape {list(t.shape)}, dtype {t.dtype}) "
                    f"at element {tuple(int(i) for i in idx)}{where}: analytic {got:.6g}, "
                    f"numeric {numeric:.6g} (atol={atol}, rtol={rtol}, eps={eps})"
                )
                if localize:
                    msg += _localize(fn, inputs)
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def _directions(shape, eps, cx):
    for idx in np.ndindex(*shape):
        yield idx, eps, "real"
        if cx:
            yield idx, eps * 1j, "imag"


def _localize(fn, inputs) -> str:
    from .checkgraph import check_graph, checkable  # noqa: PLC0415 - checkgraph imports us

    with enable_grad(), checkable():
        outputs = _outputs(fn(*inputs))
    report = check_graph(outputs[0], raise_exception=False)
    return "" if report is None else "\n" + str(report)


def gradgradcheck(
    fn, inputs, *, wrt=None, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, seed=0
):
    """Check second derivatives: gradcheck of the ``create_graph`` gradient of ``fn``.

    The checked function is ``(inputs, v) -> d(Σ v ⊙ f)/d(inputs)``, where the
    upstream gradients v (one per floating output, fixed pseudo-random values) require
    grad and are checked as extra inputs, as PyTorch's ``gradgradcheck`` does with its
    random ``grad_outputs``: so both the derivative of every backward with respect to
    the inputs and its derivative with respect to the upstream gradient are tested.

    Args and Raises: as :func:`gradcheck`; a failing upstream gradient is named
    ``input k`` with k counted after the inputs.
    """
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    inputs = tuple(inputs)
    wrt_list = list(wrt) if wrt is not None else []
    tensors = [t for _, t in _checked(inputs, wrt_list)]
    n = len(inputs)

    with enable_grad():
        outputs = _outputs(fn(*inputs))
    upstream = tuple(
        Tensor._wrap(_weights(o._data.shape, o._data.dtype, seed + 100 + k)).requires_grad_(
            o._data.dtype.kind in "fc"
        )
        for k, o in enumerate(outputs)
    )

    def first_grad(*args):
        # Note [gradgradcheck's numeric side]: gradcheck calls this once with grad enabled
        # (the analytic side: its result is differentiated again, so the backward is
        # recorded) and twice per checked element under no_grad (the numeric side: only
        # values are read). Recording a backward nobody differentiates was half of a
        # gradgradcheck's time, so the numeric side runs a plain backward: the array rules
        # where a Node has one (Note [Array backward]: bit-identical values), the recorded
        # rules' values otherwise. It checks more, not less: a recorded rule whose values
        # drift from the plain backward's now fails here too (its own differences agreed
        # with its own derivative before).
        create_graph = is_grad_enabled()
        args, vs = args[:n], args[n:]
        with enable_grad():
            loss = _reduce(_outputs(fn(*args)), vs)
            arg_tensors = [a for a in args if isinstance(a, Tensor) and a.requires_grad]
            targets = arg_tensors + [t for t in wrt_list if t.requires_grad]
            if loss is None or not loss.requires_grad:
                return tuple(Tensor._wrap(np.zeros(t.shape, t.dtype)) for t in tensors)
            grads = engine.grad(loss, targets, create_graph=create_graph, allow_unused=True)
        return tuple(
            Tensor._wrap(np.zeros(t.shape, t.dtype)) if g is None else g
            for g, t in zip(grads, targets)
        )

    return gradcheck(
        first_grad,
        inputs + upstream,
        wrt=wrt,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        seed=seed + 1,
    )
