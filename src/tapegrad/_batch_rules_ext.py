"""More batching rules (issue 15): copy variants, solves and other stacks of matrices,
the add-matmul family, RNN cells and a few shape ops, so that vmap runs them in one call
(Note [vmap levels] in _batched.py). Registered by _batch_rules_more.install.

* ``*_copy`` ops and the unsafe/with-sizes splits run their view op's rule, then copy;
* ops on stacks of matrices whose leading dims broadcast (solve, solve_triangular,
  cholesky_solve, triangular_solve, cdist): batched arguments get their logical ranks
  aligned (size-1 dims after the batch dim), unbatched ones broadcast from the right;
  ``solve`` with a vector right-hand side solves it as a one-column matrix (a batched
  vector would otherwise be read as a matrix);
* single matrices (the ``tg.linalg`` functions, logdet, matrix_exp, ...): the physical
  stack goes to the stack-aware kernel as is;
* addmm/addmv/addr/baddbmm/addbmm: ``beta·input + alpha·(product)`` from batched ops;
* lstm/gru/rnn cells: the cell's own composition (linear + pointwise) on batched values.
"""

from __future__ import annotations

from ._batch_rules import _any_at, _at, _call, _dim_rule, _pad, elementwise
from ._batched import op as _op
from ._batched import wrap, wrap_out
from .ops._registry import OPS
from .tensor import Tensor

__all__ = ["install"]


def _copies(rules):
    def copy_of(base):
        def rule(name, fn, level, args, kwargs):
            base_rule = rules.get(base)
            if base_rule is None:
                return NotImplemented
            out = base_rule(base, OPS[base].fn, level, args, kwargs)
            if out is NotImplemented:
                return out
            if isinstance(out, Tensor):
                return _op("clone", out)
            return type(out)(_op("clone", o) for o in out)

        return rule

    for name, base in {
        "diagonal_copy": "diagonal", "expand_copy": "expand", "permute_copy": "permute",
        "split_copy": "split", "split_with_sizes_copy": "split", "squeeze_copy": "squeeze",
        "t_copy": "t", "transpose_copy": "transpose", "unbind_copy": "unbind",
        "unfold_copy": "unfold", "unsqueeze_copy": "unsqueeze", "view_copy": "view",
        "narrow_copy": "narrow",
    }.items():  # fmt: skip
        rules[name] = copy_of(base)
    for name, base in {
        "split_with_sizes": "split", "unsafe_split": "split",
        "unsafe_split_with_sizes": "split", "unsafe_chunk": "chunk",
    }.items():  # fmt: skip
        rules[name] = _via(rules, base)


def _via(rules, base):
    """Run ``base``'s rule (same signature) in place of the op's own."""

    def rule(name, fn, level, args, kwargs):
        return rules[base](base, OPS[base].fn, level, args, kwargs)

    return rule


def _alias_copy(name, fn, level, args, kwargs):
    x = args[0]
    if len(args) != 1 or kwargs or not _at(x, level):
        return NotImplemented
    return wrap(_op("clone", x._bval), level)


def _flip_lr_ud(dim, min_rank):
    def rule(name, fn, level, args, kwargs):
        x = args[0]
        if len(args) != 1 or kwargs or not _at(x, level) or x.ndim < min_rank:
            return NotImplemented
        return wrap(_op("flip", x._bval, (dim + 1,)), level)

    return rule


def _expand_as(name, fn, level, args, kwargs):
    """Only the other tensor's logical shape matters, batched or not."""
    x, other = args[0], args[1] if len(args) > 1 else kwargs.get("other")
    if len(args) > 2 or not isinstance(other, Tensor):
        return NotImplemented
    return _op("expand", x, tuple(other.shape))


def _repeat_interleave(dim_rule):
    def rule(name, fn, level, args, kwargs):
        repeats = args[1] if len(args) > 1 else kwargs.get("repeats")
        if repeats is None:  # the input holds the counts: a data-dependent shape
            return NotImplemented
        return dim_rule(name, fn, level, args, kwargs)

    return rule


# -- stacks of matrices ---------------------------------------------------------------------


def _stacks(*tensor_pos):
    """Ops whose tensor arguments (at ``tensor_pos``) are stacks of matrices with leading
    dims that broadcast: batched ones are aligned to the highest logical rank."""

    def rule(name, fn, level, args, kwargs):
        if _any_at(kwargs.values(), level) or len(args) <= max(tensor_pos):
            return NotImplemented
        ts = [args[p] for p in tensor_pos]
        if any(not isinstance(t, Tensor) or t.ndim < 2 for t in ts):
            return NotImplemented
        if _any_at([a for p, a in enumerate(args) if p not in tensor_pos], level):
            return NotImplemented
        rank = max(t.ndim for t in ts)
        call = list(args)
        for p, t in zip(tensor_pos, ts):
            call[p] = _pad(t._bval, rank - t.ndim) if _at(t, level) else t
        return wrap_out(_call(name, fn, call, kwargs), level)

    return rule


_MATRICES = _stacks(0, 1)


def _solve(name, fn, level, args, kwargs):
    if len(args) != 2 or set(kwargs) - {"left"}:
        return NotImplemented
    A, Bm = args
    if not isinstance(Bm, Tensor) or not isinstance(A, Tensor) or A.ndim < 2:
        return NotImplemented
    vector = Bm.ndim == 1 or (Bm.ndim == A.ndim - 1 and tuple(Bm.shape) == tuple(A.shape)[:-1])
    if vector:
        if not kwargs.get("left", True):
            return NotImplemented
        return _op("squeeze", _op("solve", A, _op("unsqueeze", Bm, -1)), -1)
    return _MATRICES(name, fn, level, args, kwargs)


def _matrix(name, fn, level, args, kwargs):
    """One (stack of) matrices in, results with the same leading dims out."""
    x = args[0] if args else None
    if not _at(x, level) or x.ndim < 2 or _any_at(args[1:], level):
        return NotImplemented
    if _any_at(kwargs.values(), level):
        return NotImplemented
    return wrap_out(_call(name, fn, (x._bval, *args[1:]), kwargs), level)


def _linalg_norm(name, fn, level, args, kwargs):
    """linalg.norm as its own body does it, with the vector/matrix norm ops (which batch)."""
    names = ("A", "ord", "dim", "keepdim")
    a = dict(zip(names, args)) | kwargs
    A, ord_, dim, keepdim = a["A"], a.get("ord"), a.get("dim"), a.get("keepdim", False)
    if set(a) - {*names, "dtype"} or _any_at([ord_, dim], level):
        return NotImplemented
    kw = {"dtype": a["dtype"]} if a.get("dtype") is not None else {}
    if dim is not None and not isinstance(dim, (tuple, list)):
        dim = (dim,)
    if dim is None:
        if ord_ is None or A.ndim == 1:
            return _op("vector_norm", A, 2 if ord_ is None else ord_, None, keepdim, **kw)
        if A.ndim == 2:
            return _op("matrix_norm", A, ord_, keepdim=keepdim, **kw)
        return NotImplemented
    if len(dim) == 1:
        return _op("vector_norm", A, 2 if ord_ is None else ord_, tuple(dim), keepdim, **kw)
    if len(dim) == 2:
        ord_ = "fro" if ord_ is None else ord_
        if A.ndim >= 2 and [d % A.ndim for d in dim] == [A.ndim - 2, A.ndim - 1]:
            # the last two dims: left at matrix_norm's default, the form its rule takes
            return _op("matrix_norm", A, ord_, keepdim=keepdim, **kw)
        return _op("matrix_norm", A, ord_, tuple(dim), keepdim, **kw)
    return NotImplemented


def _linalg_cross(name, fn, level, args, kwargs):
    """Inputs broadcast, so ``dim`` counted from the right holds on the physical values."""
    if len(args) != 2 or set(kwargs) - {"dim"}:
        return NotImplemented
    a, b = args
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        return NotImplemented
    rank = max(a.ndim, b.ndim)
    d = kwargs.get("dim", -1)
    if not isinstance(d, int) or rank == 0 or not -rank <= d < rank:
        return NotImplemented
    phys = [_pad(t._bval, rank - t.ndim) if _at(t, level) else t for t in (a, b)]
    return wrap(_call(name, fn, phys, {"dim": d - rank if d >= 0 else d}), level)


def _kron(name, fn, level, args, kwargs):
    """kron from batched ops: interleaved size-1 dims, a product, one reshape."""
    if len(args) != 2 or kwargs or not all(isinstance(t, Tensor) for t in args):
        return NotImplemented
    a, b = args
    r = max(a.ndim, b.ndim)
    sa = (1,) * (r - a.ndim) + tuple(a.shape)
    sb = (1,) * (r - b.ndim) + tuple(b.shape)
    A = _op("reshape", a, tuple(x for s in sa for x in (s, 1)))
    Bm = _op("reshape", b, tuple(x for s in sb for x in (1, s)))
    return _op("reshape", _op("mul", A, Bm), tuple(x * y for x, y in zip(sa, sb)))


def _inner(name, fn, level, args, kwargs):
    if len(args) != 2 or kwargs or not all(isinstance(t, Tensor) for t in args):
        return NotImplemented
    a, b = args
    if a.ndim == 0 or b.ndim == 0:
        return _op("mul", a, b)
    k = tuple(a.shape)[-1]
    if tuple(b.shape)[-1] != k:
        return NotImplemented
    rows = _op("reshape", a, (-1, k))
    cols = _op("transpose", _op("reshape", b, (-1, k)), 0, 1)
    return _op("reshape", _op("matmul", rows, cols), tuple(a.shape)[:-1] + tuple(b.shape)[:-1])


# -- add-matmul family ----------------------------------------------------------------------


def _addmm(product):
    def rule(name, fn, level, args, kwargs):
        if len(args) != 3 or set(kwargs) - {"beta", "alpha"}:
            return NotImplemented
        beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
        if isinstance(beta, Tensor) or isinstance(alpha, Tensor) or beta == 0:
            return NotImplemented  # beta=0 ignores input's NaNs: the loop keeps that
        inp, a, b = args
        prod = product(a, b)
        if alpha != 1:
            prod = _op("mul", prod, alpha)
        return _op("add", inp if beta == 1 else _op("mul", inp, beta), prod)

    return rule


def _bmm_sum(a, b):
    return _op("sum", _op("bmm", a, b), 0)


def _outer(a, b):
    return _op("mul", _op("unsqueeze", a, -1), _op("unsqueeze", b, -2))


def _vdot(name, fn, level, args, kwargs):
    a, b = args if len(args) == 2 else (None, None)
    if kwargs or not isinstance(a, Tensor) or not isinstance(b, Tensor):
        return NotImplemented
    if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape:
        return NotImplemented
    return _op("sum", _op("mul", a, b), -1)


# -- 0-d inputs of dim ops -------------------------------------------------------------------


def _lift_0d(base_rule):
    """A 0-d logical input: the op on its 1-element 1-D view, whose outputs are squeezed
    back to 0-d (what these ops return for a 0-d input); other inputs: ``base_rule``."""

    def rule(name, fn, level, args, kwargs):
        x = args[0] if args else None
        if not (_at(x, level) and x.ndim == 0):
            return base_rule(name, fn, level, args, kwargs)
        if _any_at(args[1:], level) or _any_at(kwargs.values(), level):
            return NotImplemented
        out = _call(name, fn, (_op("unsqueeze", x, 0), *args[1:]), kwargs)

        def squeeze(o):
            if isinstance(o, Tensor) and o.ndim == 1:
                return _op("squeeze", o, 0)
            if isinstance(o, tuple):
                parts = [squeeze(p) for p in o]
                return type(o)(*parts) if hasattr(o, "_fields") else type(o)(parts)
            return o

        return squeeze(out)

    return rule


_ZERO_D = (
    "sum mean nansum nanmean amax amin logsumexp var std prod softmax log_softmax cumsum "
    "cumprod logcumsumexp flip sort"
).split()


# -- RNN cells ------------------------------------------------------------------------------


def _cell(kind):
    def rule(name, fn, level, args, kwargs):
        from .nn.functional import linear  # noqa: PLC0415

        names = ("input", "hx", "w_ih", "w_hh", "b_ih", "b_hh")
        a = dict(zip(names, args)) | kwargs
        x, hx = a["input"], a["hx"]
        w_ih, w_hh = a["w_ih"], a["w_hh"]
        b_ih, b_hh = a.get("b_ih"), a.get("b_hh")
        h = hx[0] if kind == "lstm" else hx
        if not isinstance(h, Tensor) or x.ndim not in (1, 2) or h.ndim != x.ndim:
            return NotImplemented
        if w_ih.ndim != 2 or w_hh.ndim != 2:
            return NotImplemented
        gi, gh = linear(x, w_ih, b_ih), linear(h, w_hh, b_hh)
        if kind == "lstm":  # gates i, f, g, o as torch.lstm_cell
            i, f, g, o = _op("chunk", _op("add", gi, gh), 4, -1)
            c = _op(
                "add",
                _op("mul", _op("sigmoid", f), hx[1]),
                _op("mul", _op("sigmoid", i), _op("tanh", g)),
            )
            return _op("mul", _op("sigmoid", o), _op("tanh", c)), c
        if kind == "gru":  # gates r, z, n as torch.gru_cell
            ir, iz, in_ = _op("chunk", gi, 3, -1)
            hr, hz, hn = _op("chunk", gh, 3, -1)
            r = _op("sigmoid", _op("add", ir, hr))
            z = _op("sigmoid", _op("add", iz, hz))
            n = _op("tanh", _op("add", in_, _op("mul", r, hn)))
            return _op("add", n, _op("mul", z, _op("sub", h, n)))
        s = _op("add", gi, gh)
        return _op("tanh" if kind == "tanh" else "relu", s)

    return rule


def install(rules) -> None:
    """Register this file's rules (called by _batch_rules_more.install)."""
    _copies(rules)
    for name in _ZERO_D:
        rules[name] = _lift_0d(rules[name])
    rules["alias_copy"] = _alias_copy
    rules["fliplr"] = _flip_lr_ud(1, 2)
    rules["flipud"] = _flip_lr_ud(0, 1)
    rules["fill"] = rules["fill_"] = elementwise
    rules["expand_as"] = _expand_as
    rules["unfold"] = _dim_rule(1, "dimension", None)
    rules["diff"] = _dim_rule(2, "dim", -1)
    rules["repeat_interleave"] = _repeat_interleave(_dim_rule(2, "dim", None, "flat"))
    rules["aminmax"] = _dim_rule(1, "dim", None, "flat")
    rules["solve"] = _solve
    for name in ("solve_triangular", "cholesky_solve", "triangular_solve", "cdist"):
        rules[name] = _MATRICES
    for name in (
        "logdet", "matrix_exp", "cholesky_inverse", "eigh", "eigvalsh", "svd", "svdvals",
        "pinv", "cond", "lu_factor", "lu_factor_ex", "cholesky_ex", "inv_ex", "matrix_rank",
    ):  # fmt: skip
        rules[name] = _matrix
    rules["addmm"] = _addmm(lambda a, b: _op("mm", a, b))
    rules["addmv"] = _addmm(lambda a, b: _op("mv", a, b))
    rules["addr"] = _addmm(_outer)
    rules["baddbmm"] = _addmm(lambda a, b: _op("bmm", a, b))
    rules["addbmm"] = _addmm(_bmm_sum)
    rules["vdot"] = _vdot
    rules["linalg_norm"] = _linalg_norm
    rules["linalg_cross"] = _linalg_cross
    rules["kron"] = _kron
    rules["inner"] = _inner
    rules["lstm_cell"] = _cell("lstm")
    rules["gru_cell"] = _cell("gru")
    rules["rnn_tanh_cell"] = _cell("tanh")
    rules["rnn_relu_cell"] = _cell("relu")
