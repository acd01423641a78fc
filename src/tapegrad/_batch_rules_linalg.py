"""Batching rules for products, linear algebra and convolution (see _batch_rules.py)."""

from __future__ import annotations

from . import _vmap_linear
from ._batch_rules import _at, _call, _dim_rule, _pad
from ._batched import VmapUnsupported, op, wrap
from .tensor import Tensor

__all__ = ["install"]


def _default_dims_only(rule, pos, kw):
    """``rule`` when the op's dims are left at their defaults (the last ones)."""

    def checked(name, fn, level, args, kwargs):
        if len(args) > pos or kw in kwargs:
            return NotImplemented
        return rule(name, fn, level, args, kwargs)

    return checked


def _norm(name, fn, level, args, kwargs):
    x = args[0]
    p = args[1] if len(args) > 1 else kwargs.get("p", "fro")
    d = args[2] if len(args) > 2 else kwargs.get("dim")
    if d is not None or p == "nuc" or not _at(x, level) or x.ndim == 0 or len(args) > 3:
        return _dim_rule(2, "dim", None)(name, fn, level, args, kwargs)
    if kwargs.get("keepdim"):
        return NotImplemented
    v = x._bval
    rest = {k: val for k, val in kwargs.items() if k not in ("p", "dim")}
    return wrap(_call(name, fn, [op("reshape", v, (tuple(v.shape)[0], -1)), p, 1], rest), level)


def _trace(name, fn, level, args, kwargs):
    x = args[0]
    if not _at(x, level) or x.ndim != 2 or kwargs:
        return NotImplemented
    return wrap(op("sum", op("diagonal", x._bval, 0, 1, 2), -1), level)


# -- products -----------------------------------------------------------------------------

_MATMUL_RANKS = {"mm": (2, 2), "bmm": (3, 3), "mv": (2, 1), "dot": (1, 1), "vdot": (1, 1)}


def _matmul(name, fn, level, args, kwargs):
    if kwargs or len(args) != 2:
        return NotImplemented
    a, b = args if name != "__rmatmul__" else args[::-1]
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        return NotImplemented
    ra, rb = a.ndim, b.ndim
    if ra == 0 or rb == 0 or _MATMUL_RANKS.get(name, (ra, rb)) != (ra, rb):
        return NotImplemented
    if a.dtype != b.dtype:
        return NotImplemented
    A = a._bval if _at(a, level) else a
    B = b._bval if _at(b, level) else b
    sa = sb = False
    if _at(a, level) and ra == 1:
        A, ra, sa = op("unsqueeze", A, -2), 2, True
    if _at(b, level) and rb == 1:
        B, rb, sb = op("unsqueeze", B, -1), 2, True
    nb = max(ra - 2, rb - 2, 0)
    if _at(a, level):
        A = _pad(A, nb - max(ra - 2, 0))
    if _at(b, level):
        B = _pad(B, nb - max(rb - 2, 0))
    out = op("matmul", A, B)
    if sb:
        out = op("squeeze", out, -1)
    if sa:
        out = op("squeeze", out, -1 if (sb or rb == 1) else -2)
    return wrap(out, level)


def _outer(name, fn, level, args, kwargs):
    a, b = args
    if kwargs or a.ndim != 1 or b.ndim != 1:
        return NotImplemented
    return op("mul", op("unsqueeze", a, -1), op("unsqueeze", b, -2))


def _linear(name, fn, level, args, kwargs):
    x, w, b = args
    out = _vmap_linear.rule(x, w, b, level)  # Note [Per-sample linear]; None: not its case
    if out is not None:
        return out
    if x.ndim == 0 or w.ndim != 2:
        return NotImplemented
    dtypes = {t.dtype for t in (x, w, b) if t is not None}
    if len(dtypes) > 1:  # as eager linear (matmul would promote): the error, not a loop
        names = ", ".join(sorted(str(d) for d in dtypes))
        raise VmapUnsupported(f"linear: expected all tensors to have the same dtype, got {names}")
    if _at(x, level) and not _at(w, level) and not _at(b, level):
        return wrap(_call(name, fn, (x._bval, w, b), {}), level)  # one GEMM
    out = op("matmul", x, op("transpose", w, 0, 1))
    return out if b is None else op("add", out, b)


def _conv2d(name, fn, level, args, kwargs):
    """conv2d: the batch folded into the images, or (a batched weight: per-sample
    gradients) into the channels with ``groups`` multiplied by the batch size."""
    x, w, b, stride, padding, dilation, groups = args
    if kwargs or x.ndim not in (3, 4) or w.ndim != 4 or (isinstance(padding, str)):
        return NotImplemented
    single = x.ndim == 3
    if single:
        x = op("unsqueeze", x, 0)
    n = next(a._bval.shape[0] for a in (x, w, b) if _at(a, level))
    rest = (stride, padding, dilation)
    if not _at(w, level) and not _at(b, level):
        v = x._bval  # (N, B, C, H, W)
        flat = op("reshape", v, (-1, *tuple(v.shape)[2:]))
        out = _call(name, fn, (flat, w, b, *rest, groups), {})
        out = op("reshape", out, (n, -1, *tuple(out.shape)[1:]))
    else:
        v = x._bval if _at(x, level) else op("expand", op("unsqueeze", x, 0), (n, *x.shape))
        B, C, H, W = tuple(v.shape)[1:]
        v = op("reshape", op("movedim", v, 0, 1), (B, n * C, H, W))
        wv = w._bval if _at(w, level) else op("expand", op("unsqueeze", w, 0), (n, *w.shape))
        O = tuple(wv.shape)[1]
        wv = op("reshape", wv, (n * O, *tuple(wv.shape)[2:]))
        bv = None
        if b is not None:
            bv = b._bval if _at(b, level) else op("expand", op("unsqueeze", b, 0), (n, O))
            bv = op("reshape", bv, (n * O,))
        out = _call(name, fn, (v, wv, bv, *rest, groups * n), {})
        out = op("reshape", out, (B, n, O, *tuple(out.shape)[2:]))
        out = op("movedim", out, 1, 0)
    out = wrap(out, level)
    return op("squeeze", out, 0) if single else out


def _einsum(name, fn, level, args, kwargs):
    """A fresh subscript letter for the batch dim, in front of every batched operand's
    subscripts and of the output (explicit ``->`` equations only)."""
    eq, ops = args[0], args[1:]
    if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
        ops = tuple(ops[0])
    if kwargs or not isinstance(eq, str) or "->" not in eq:
        return NotImplemented
    lhs, out = eq.replace(" ", "").split("->")
    terms = lhs.split(",")
    if len(terms) != len(ops):
        return NotImplemented
    free = [c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba" if c not in eq]
    b = free[0]
    terms = [b + t if _at(o, level) else t for t, o in zip(terms, ops)]
    vals = [o._bval if _at(o, level) else o for o in ops]
    return wrap(_call(name, fn, [f"{','.join(terms)}->{b}{out}", *vals], {}), level)


def install(RULES, last_dims) -> None:
    """Register this file's rules (called by _batch_rules._install)."""
    for name in ("matmul", "mm", "bmm", "mv", "dot", "__rmatmul__"):
        RULES[name] = _matmul
    RULES["outer"] = _outer
    RULES["linear"] = _linear
    RULES["conv2d"] = _conv2d
    # Linear algebra on the last two dims: NumPy/SciPy kernels take stacks of matrices.
    for name in ("det", "inverse", "slogdet", "cholesky", "linalg_qr", "linalg_eigh",
                 "linalg_svd", "matrix_power"):  # fmt: skip
        RULES[name] = last_dims(2)
    RULES["diag_embed"] = last_dims(1)
    RULES["matrix_norm"] = _default_dims_only(last_dims(2), 2, "dim")
    RULES["trace"] = _trace
    RULES["norm"] = _norm
    RULES["einsum"] = _einsum
