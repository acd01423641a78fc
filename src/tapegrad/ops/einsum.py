"""einsum: Einstein summation with PyTorch's signature, differentiated by einsum.

The equation is first rewritten with explicit letters for every dimension
(``...`` becomes fresh letters, right-aligned across operands, as NumPy and
PyTorch broadcast it). The gradient of operand k is then another einsum: the
incoming gradient contracted with the other operands onto k's letters. Two
cases need care after that contraction:

* a letter that only operand k has (summed away in the forward) gets the
  gradient broadcast along it; a letter where k has size 1 but others don't
  (broadcasting) gets the gradient summed back to size 1;
* a letter repeated within operand k (``'ii->'``, a trace) gets the gradient
  on the diagonal only.

In a batched backward (Note [Batched gradients]) the incoming gradient's leading batch
dims get fresh letters, carried through the contraction onto the operand's gradient.
"""

from __future__ import annotations

import string

import numpy as np

from .. import _dtypes
from ..autograd.graph import BATCH, make_result
from ..tensor import Tensor
from . import _dtype_errors
from ._mathutil import const
from ._registry import register
from ._util import as_tensor

__all__ = ["einsum"]


class _Spec:
    """An einsum equation with explicit letters: ``inputs`` (one string per operand),
    ``output``, ``sizes`` (letter -> broadcast size) and whether any size-1 dim broadcasts."""

    __slots__ = ("inputs", "output", "sizes", "broadcasts")

    def __init__(self, inputs, output, sizes, broadcasts):
        self.inputs = inputs
        self.output = output
        self.sizes = sizes
        self.broadcasts = broadcasts

    def equation(self) -> str:
        return ",".join(self.inputs) + "->" + self.output


def _parse(equation: str, shapes: list) -> _Spec:
    def fail(why):
        listed = ", ".join(str(list(s)) for s in shapes)
        return RuntimeError(  # torch's type
            f"einsum(): equation {equation!r} does not fit operands of shapes {listed}: {why}"
        )

    if not isinstance(equation, str):
        raise TypeError(f"einsum(): the equation must be a string, got {type(equation).__name__}")
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise fail("more than one '->'")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if not shapes:
        raise ValueError(  # torch's text and type
            "einsum(): must specify the equation string and at least one operand, or at "
            "least one operand and its subscripts list"
        )
    if len(terms) != len(shapes):
        raise fail(f"it has subscripts for {len(terms)} operand(s) but {len(shapes)} were given")
    for ch in eq:
        if ch not in string.ascii_letters and ch not in ".,->":
            raise fail(f"invalid subscript {ch!r} (only letters a-z, A-Z and '...' are allowed)")
    free = [c for c in string.ascii_letters if c not in eq]

    ellipsis_dims, parts = [], []
    for k, (term, shape) in enumerate(zip(terms, shapes, strict=True)):
        pre, dots, post = term.partition("...")
        if "." in pre + post or (dots and term.count("...") > 1):
            raise fail(f"operand {k} has a malformed ellipsis in {term!r}")
        named = len(pre) + len(post)
        if (not dots and named != len(shape)) or named > len(shape):
            raise fail(f"operand {k} has {named} subscript(s) {term!r} for {len(shape)} dim(s)")
        parts.append((pre, post))
        ellipsis_dims.append(len(shape) - named if dots else 0)
    n_ell = max(ellipsis_dims, default=0)
    ell = "".join(free[:n_ell])
    inputs = [
        pre + ell[n_ell - n :] + post for (pre, post), n in zip(parts, ellipsis_dims, strict=True)
    ]

    if arrow:
        if "..." in rhs:
            pre, _, post = rhs.partition("...")
            output = pre + ell + post
        else:
            output = rhs
        if "." in output:
            raise fail("malformed ellipsis in the output")
    else:  # implicit output: the broadcast dims, then letters used exactly once, sorted
        counts = {}
        for term in inputs:
            for c in term:
                counts[c] = counts.get(c, 0) + 1
        output = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    known = set("".join(inputs))
    for c in output:
        if c not in known:
            raise fail(f"output subscript {c!r} does not appear in any operand")
        if output.count(c) > 1:
            raise fail(f"output subscript {c!r} appears more than once")

    for k, (term, shape) in enumerate(zip(inputs, shapes, strict=True)):
        for c in set(term):
            dims = [shape[i] for i, x in enumerate(term) if x == c]
            if len(set(dims)) > 1:
                raise fail(f"repeated subscript {c!r} of operand {k} has different sizes {dims}")
    sizes, broadcasts = {}, False
    for k, (term, shape) in enumerate(zip(inputs, shapes, strict=True)):
        for c, n in zip(term, shape, strict=True):
            have = sizes.get(c)
            if have is None or have == 1:
                broadcasts = broadcasts or (have == 1 and n != 1)
                sizes[c] = n
            elif n != have:
                if n != 1:
                    raise fail(f"subscript {c!r} has size {n} in operand {k} but {have} elsewhere")
                broadcasts = True
    return _Spec(inputs, output, sizes, broadcasts)


@register("einsum", method=False)
def einsum(equation, *operands):
    """Sum of products of the operands' elements over the repeated subscripts.

    Args:
        equation: subscripts like ``'ij,jk->ik'``; ``'...'`` stands for broadcast dims,
            a letter repeated within one operand takes its diagonal (``'ii->'`` is the
            trace), and without ``'->'`` the output is the letters used once, sorted.
        *operands: tensors (or one list of them), one per comma-separated term.

    Returns:
        The result of shape given by the output subscripts.

    Raises:
        RuntimeError: when the subscripts do not fit the operands' shapes (names the
            equation and the shapes), as PyTorch.
        ValueError: without operands (as PyTorch).

    >>> import tapegrad as tg
    >>> tg.einsum("ii->", tg.eye(3))
    tensor(3.)
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    ts = tuple(as_tensor(t, "einsum") for t in operands)
    spec = _parse(equation, [t._data.shape for t in ts])
    datas = [t._data for t in ts]
    if len(datas) > 1 and any(d.dtype != datas[0].dtype for d in datas):
        _check_mixed(spec, datas)
    optimize = len(ts) > 2 and not spec.broadcasts
    half = datas and datas[0].dtype.kind == "V"  # bfloat16: Note [bfloat16 opmath]
    if half:  # in float32, the result rounded once (np.einsum has no bfloat16 loop)
        datas = [d.astype(_dtypes.float32) for d in datas]
    out = np.asanyarray(np.einsum(spec.equation(), *datas, optimize=optimize))
    if half:
        out = _dtypes.from_opmath(out)
    if out.dtype.kind == "f":
        out = _dtypes.fix_float_result(out, *(d.dtype for d in datas))

    needs = tuple(t._rg for t in ts)
    # One operand: its rule needs only the shape, so the Node keeps a zero-byte stand-in
    # and saves nothing (Note [Backward twice]): a trace or a diagonal can run twice.
    kept = ts if len(ts) > 1 else (_shape_only(ts[0]),)

    def backward(g):
        return tuple(
            _operand_grad(g, spec, kept, k) if need else None for k, need in enumerate(needs)
        )

    return make_result(out, ts, backward, "EinsumBackward", saved=ts if len(ts) > 1 else None)


def _check_mixed(spec, datas):
    """torch multiplies operands of different dtypes (promoting) but contracts them with
    bmm, which refuses them: raise its error when some letter is summed away."""
    if set("".join(spec.inputs)) - set(spec.output):
        other = next(d.dtype for d in datas if d.dtype != datas[0].dtype)
        raise _dtype_errors.scalar_type_error(datas[0].dtype, other)


def _shape_only(t: Tensor) -> Tensor:
    """A Tensor with ``t``'s shape and dtype backed by one element (a broadcast view)."""
    return Tensor._wrap(np.broadcast_to(np.zeros((), t._data.dtype), t._data.shape))


def _operand_grad(g: Tensor, spec: _Spec, ts, k: int) -> Tensor:
    term = spec.inputs[k]
    shape = ts[k]._data.shape
    letters = "".join(dict.fromkeys(term))  # unique, in order of first appearance
    others = [spec.inputs[j] for j in range(len(ts)) if j != k]
    reachable = set(spec.output).union(*others)
    target = "".join(c for c in letters if c in reachable)
    # In a batched backward g has extra leading dims (Note [Batched gradients]): give them
    # fresh letters, kept in front of both g's subscripts and the gradient's.
    prefix = BATCH.prefix
    lead = _fresh_letters(spec, len(prefix)) if prefix else ""
    p = len(prefix)
    dt = g._data.dtype  # the operands in g's (the result's) dtype: mixed dtypes were
    grad = einsum(  # allowed only without a contraction, which this einsum may have
        ",".join([lead + spec.output] + others) + "->" + lead + target,
        g,
        *(t if t._data.dtype == dt else t._cast(dt) for j, t in enumerate(ts) if j != k),
    )
    own = {c: n for c, n in zip(term, shape, strict=True)}
    # Letters only this operand has: the gradient is constant along them (size 1 for now).
    gshape = grad._data.shape
    grad = grad.reshape(
        prefix + tuple(gshape[p + target.index(c)] if c in target else 1 for c in letters)
    )
    # Size-1 dims of this operand that broadcast against others: sum the gradient back.
    gshape = grad._data.shape
    summed = tuple(p + i for i, c in enumerate(letters) if own[c] == 1 and gshape[p + i] != 1)
    if summed:
        grad = grad.sum(dim=summed, keepdim=True)
    grad = grad.expand(prefix + tuple(own[c] for c in letters))
    if len(letters) < len(term):  # repeated letters: put the gradient on the diagonal
        first = {c: term.index(c) for c in letters}
        grad = grad.reshape(
            prefix
            + tuple(
                n if first[c] == i else 1 for i, (c, n) in enumerate(zip(term, shape, strict=True))
            )
        )
        index = np.indices(shape, sparse=True)
        mask = np.ones(shape, dtype=bool)
        for i, c in enumerate(term):
            if first[c] != i:
                mask &= index[i] == index[first[c]]
        grad = grad.expand(prefix + shape) * const(mask)
    if grad._data.dtype != ts[k]._data.dtype:
        grad = grad._cast(ts[k]._data.dtype)
    return grad


def _fresh_letters(spec: _Spec, n: int) -> str:
    """``n`` letters that the explicit equation of ``spec`` does not use."""
    used = set(spec.equation())
    free = [c for c in string.ascii_letters if c not in used]
    if len(free) < n:
        raise RuntimeError("einsum(): no subscript letters left for the batch dims")
    return "".join(free[:n])
