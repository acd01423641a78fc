"""Every registered op on 0-d and empty inputs, with PyTorch as the oracle.

A row is ``E(op, fn, d0, empty)``: ``fn(m, *xs)`` is written once against the shared
API (``m`` is tapegrad or torch, as in tests/optable), ``d0`` is the input shapes
of the 0-d variant and ``empty`` a list of input-shape lists with zero-size
dimensions. A variant wrapped in :class:`X` is one that PyTorch rejects: tapegrad
must then raise a clear error (a ValueError/RuntimeError/IndexError/TypeError,
raised by tapegrad's own code, naming the op). Otherwise tapegrad must match
PyTorch's values, shapes, dtypes and gradients under a random upstream gradient
(for empty inputs, empty gradients of the input's shape).
"""

from __future__ import annotations

import dataclasses
import os
import re
import traceback
import warnings
from collections.abc import Callable

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.ops import OPS

from ._message_check import check_message
from .optable import FLOAT32_TOL


@dataclasses.dataclass(frozen=True)
class X:
    """A variant PyTorch rejects: tapegrad must raise a clear error too."""

    shapes: list


@dataclasses.dataclass
class E:
    """One row: op name, ``fn(m, *xs)``, the 0-d variant and the empty variants."""

    op: str
    fn: Callable
    d0: list | X | None
    empty: list = dataclasses.field(default_factory=list)
    name: str = ""
    domain: tuple = (-2.0, 2.0)
    gradgrad: bool = True
    nan0d: bool = False  # the 0-d value is NaN by definition (var of one element): no gradcheck
    names: tuple = ()  # words an error message may use for the op (default: the op's name)
    tol: dict = dataclasses.field(default_factory=dict)  # looser gradcheck, with tol_reason
    tol_reason: str = ""

    @property
    def id(self):
        return f"{self.op}-{self.name}" if self.name else self.op

    def variants(self):
        out = [] if self.d0 is None else [("0d", self.d0)]
        return out + [(f"empty{k}", v) for k, v in enumerate(self.empty)]


def _F(m):
    """Activations live in torch.nn.functional, and at top level in tapegrad."""
    return m.nn.functional if m.__name__ == "torch" else m


def _ix(m, *values):
    return m.tensor(list(values), dtype=m.int64)


def _noix(m, *shape):
    """An empty (or any-shape zero) int64 index tensor."""
    return m.zeros(shape or (0,), dtype=m.int64)


def _set(key_fn):
    def fn(m, x, v):
        y = x * 1.0
        y[key_fn(m, x)] = v
        return y

    return fn


U = [[(0,)], [(2, 0, 3)]]  # empty variants of a unary elementwise op
B = [[(0, 3), (3,)], [(2, 0, 1), (1, 4)], [(), (0,)]]  # ... of a broadcasting binary op
POS = (0.3, 2.0)
GB = [[(0, 3), (0, 3)], [(2, 0), (2, 0)], [(), (0,)]]  # empty variants torch's gelu_backward takes
DIV = [(-2.0, 2.0), (0.5, 2.0)]
SQ = [[(0, 0)], [(2, 0, 0)], [(0, 3, 3)]]  # empty square matrices (and an empty batch)

ROWS = [
    # -- elementwise -----------------------------------------------------------------------
    *[
        E(op, (lambda f: lambda m, x: getattr(m, f)(x))(op), [()], U)
        for op in (
            "exp",
            "tanh",
            "sigmoid",
            "relu",
            "abs",
            "sign",
            "expm1",
            "sin",
            "cos",
            "tan",
            "floor",
            "ceil",
            "round",
            "erf",
        )
    ],
    *[
        E(op, (lambda f: lambda m, x: getattr(m, f)(x))(op), [()], U, domain=POS)
        for op in ("log", "sqrt", "rsqrt", "log1p")
    ],
    *[
        E(op, (lambda f: lambda m, x: getattr(_F(m), f)(x))(op), [()], U)
        for op in ("gelu", "silu", "softplus")
    ],
    E("where", lambda m, x, y: m.where(x > 0, x, y), [(), ()], B),
    E("clamp", lambda m, x: x.clamp(-0.5, 0.5), [()], U),
    E("clamp", lambda m, x, lo: m.clamp(x, min=lo), [(), ()], B, name="tensor"),
    E("maximum", lambda m, x, y: m.maximum(x, y), [(), ()], B),
    E("minimum", lambda m, x, y: m.minimum(x, y), [(), ()], B),
    # -- arithmetic ------------------------------------------------------------------------
    E("add", lambda m, x, y: m.add(x, y, alpha=2.0), [(), ()], B),
    E("sub", lambda m, x, y: x - y, [(), ()], B),
    E("mul", lambda m, x, y: x * y, [(), ()], B),
    E("div", lambda m, x, y: x / y, [(), ()], B, domain=DIV),
    E("neg", lambda m, x: -x, [()], U),
    E("pow", lambda m, x, y: x**y, [(), ()], B, domain=[POS, (-2, 2)]),
    E("pow", lambda m, x: x**2, [()], U, name="scalar"),
    E("floor_divide", lambda m, x, y: m.floor_divide(x, y), [(), ()], B, domain=DIV),
    E("remainder", lambda m, x, y: m.remainder(x, y), [(), ()], B, domain=DIV),
    *[
        E(op, (lambda f: lambda m, x, y: getattr(m, f)(x, y))(op), [(), ()], B)
        for op in ("eq", "ne", "lt", "le", "gt", "ge")
    ],
    E(
        "_cast",
        lambda m, x: x.float(),
        [()],
        U,
        tol=FLOAT32_TOL,
        tol_reason="float32 output: a step of 1e-6 is below its resolution",
    ),
    E("clone", lambda m, x: x.clone(), [()], U),
    E("contiguous", lambda m, x: x.contiguous(), [()], U),
    # -- shape -----------------------------------------------------------------------------
    E("reshape", lambda m, x: x.reshape(-1), [()], U),
    E("reshape", lambda m, x: x.reshape(1, 1), [()], name="ones"),
    E("reshape", lambda m, x: x.reshape(3, 0), None, [[(0, 3)], [(2, 0)]], name="zeros"),
    E("reshape", lambda m, x: x.reshape(0, -1), None, [X([(0, 3)])], name="ambiguous"),
    E("view", lambda m, x: x.view(-1), [()], [[(0, 2)]]),
    E("transpose", lambda m, x: x.transpose(0, -1), [()], [[(0, 3)], [(2, 0, 3)]]),
    # torch's mT of a 0-d tensor is a deprecated identity; tapegrad raises (see below).
    E("transpose", lambda m, x: x.mT, None, [[(0, 3)]], name="mT"),
    E("permute", lambda m, x: x.permute(tuple(reversed(range(x.ndim)))), [()], U),
    E("expand", lambda m, x: x.expand(2, *x.shape), [()], U),
    E("expand", lambda m, x: x.expand(0, 3), [()], [[(0, 1)], [(1,)]], name="to-empty"),
    E("broadcast_to", lambda m, x: m.broadcast_to(x, (2, *x.shape)), [()], U),
    E("squeeze", lambda m, x: x.squeeze(), [()], [[(0, 1, 3)]]),
    E("squeeze", lambda m, x: x.squeeze(0), [()], [[(1, 0)], [(0, 3)]], name="dim"),
    E("unsqueeze", lambda m, x: x.unsqueeze(-1), [()], U),
    E("flatten", lambda m, x: x.flatten(), [()], U),
    E("unflatten", lambda m, x: x.unflatten(0, (2, -1)), X([()]), [[(0, 3)], [(0,)]]),
    E("movedim", lambda m, x: m.movedim(x, 0, -1), [()], [[(0, 3)], [(2, 0, 3)]]),
    E("repeat", lambda m, x: x.repeat(2, 3), [()], [[(0, 3)], [(2,)]]),
    E("repeat", lambda m, x: x.repeat(0, 2), [()], [[(3,)]], name="zero-times"),
    E("tile", lambda m, x: m.tile(x, (2,)), [()], U),
    E("flip", lambda m, x: x.flip(0), [()], U),
    E("roll", lambda m, x: x.roll(1, 0), X([()]), U),
    E("roll", lambda m, x: x.roll(2), [()], U, name="flat"),
    # -- joining ---------------------------------------------------------------------------
    E("cat", lambda m, x, y: m.cat([x, y], -1), X([(), ()]), [[(2, 0), (2, 3)], [(0, 3), (0, 2)]]),
    E("cat", lambda m, x, y: m.cat([x, y]), None, [[(0,), (2, 3)], [(0,), (0,)]], name="legacy"),
    E("stack", lambda m, x, y: m.stack([x, y], -1), [(), ()], [[(0, 3), (0, 3)], [(0,), (0,)]]),
    E("narrow", lambda m, x: x.narrow(0, 0, 0), X([()]), [[(0, 3)], [(3,)]]),
    E("split", lambda m, x: x.split(2), X([()]), [[(0, 3)]]),
    E("split", lambda m, x: x.split([0, 2, 0], -1), None, [[(0, 2)]], name="zero-sizes"),
    E("chunk", lambda m, x: x.chunk(2, -1), X([()]), [[(3, 0)], [(0,)]]),
    E("pad", lambda m, x: m.nn.functional.pad(x, (1, 2), value=0.5), X([()]), [[(0, 3)], [(2, 0)]]),
    E(
        "pad",
        lambda m, x: m.nn.functional.pad(x, (1, 1), mode="reflect"),
        None,
        [X([(1, 0)])],
        name="reflect",
    ),
    E(
        "pad",
        lambda m, x: m.nn.functional.pad(x, (1, 1), mode="circular"),
        None,
        [X([(1, 1, 0)])],
        name="circular",
    ),
    E(
        "pad",
        lambda m, x: m.nn.functional.pad(x, (1, 1), mode="replicate"),
        None,
        [[(0, 1, 2)]],
        name="replicate",
    ),
    # -- indexing --------------------------------------------------------------------------
    E("getitem", lambda m, x: x[()], [()], U, name="empty-tuple"),
    E("getitem", lambda m, x: x[...], [()], U, name="ellipsis"),
    E("getitem", lambda m, x: x[None], [()], U, name="none"),
    E("getitem", lambda m, x: x[None, ..., None], [()], U, name="none-ellipsis"),
    E("getitem", lambda m, x: x[x > 0], [()], U, name="mask"),
    E("getitem", lambda m, x: x[m.tensor(True)], [()], U, name="true"),
    E("getitem", lambda m, x: x[m.tensor(False)], [()], U, name="false"),
    E(
        "getitem",
        lambda m, x: x[0],
        X([()]),
        [X([(0, 3)]), [(2, 0)]],
        name="int",
        names=("index", "getitem"),
    ),
    E("getitem", lambda m, x: x[..., 1:1], None, [[(3,)], [(0, 2)]], name="empty-slice"),
    E(
        "getitem",
        lambda m, x: x[_noix(m)],
        X([()]),
        [[(3, 2)], [(0, 3)]],
        name="empty-index",
        names=("index", "getitem"),
    ),
    E(
        "getitem",
        lambda m, x: x[:, _noix(m, 2, 0)],
        None,
        [[(3, 2)], [(0, 3)]],
        name="empty-index-2d",
    ),
    E(
        "getitem",
        lambda m, x: x[_ix(m, 0)],
        None,
        [X([(0, 3)])],
        name="out-of-range",
        names=("index", "getitem"),
    ),
    E("index_select", lambda m, x: x.index_select(0, _noix(m)), X([()]), [[(3, 2)], [(0, 3)]]),
    E("index_select", lambda m, x: x.index_select(-1, _ix(m, 0)), [()], name="0d"),
    E(
        "index_select",
        lambda m, x: x.index_select(0, _ix(m, 0, 0)),
        X([()]),
        [X([(0, 3)])],
        name="repeat",
        names=("index_select", "index"),
    ),
    E("gather", lambda m, x: x.gather(0, _noix(m, *x.shape[:-1], 0)), None, [[(2, 3)], [(0, 3)]]),
    E("gather", lambda m, x: x.gather(0, _ix(m, 0)[0]), [()], name="0d"),
    E("take_along_dim", lambda m, x: m.take_along_dim(x, _noix(m)), [()], [[(2, 3)], [(0, 3)]]),
    E(
        "take_along_dim",
        lambda m, x: m.take_along_dim(x, _noix(m, 2, 0), 1),
        None,
        [[(2, 3)], [(2, 0)]],
        name="dim",
    ),
    E(
        "scatter",
        lambda m, x, s: x.scatter(0, _noix(m, 0, 3), s),
        None,
        [[(2, 3), (0, 3)], [(0, 3), (0, 3)]],
    ),
    E("scatter", lambda m, x, s: x.scatter(0, _ix(m, 0)[0], s), [(), ()], name="0d"),
    E(
        "scatter_add",
        lambda m, x, s: x.scatter_add(-1, _noix(m, 2, 0), s),
        None,
        [[(2, 3), (2, 0)], [(2, 0), (2, 0)]],
    ),
    E("scatter_add", lambda m, x, s: x.scatter_add(0, _ix(m, 0)[0], s), [(), ()], name="0d"),
    E("masked_fill", lambda m, x: x.masked_fill(x > 0, -1.0), [()], U),
    E(
        "masked_fill",
        lambda m, x, v: x.masked_fill(x > 0, v),
        [(), ()],
        [[(0, 3), ()]],
        name="tensor-value",
    ),
    # -- in-place (on non-leaves) ----------------------------------------------------------
    E("add_", lambda m, x, y: (x * 1.0).add_(y, alpha=2.0), [(), ()], B[:1] + [X(B[1])]),
    E("add_", lambda m, x, y: (x * 1.0).add_(y), X([(), (0,)]), [X([(3,), (0,)])], name="grows"),
    E("sub_", lambda m, x, y: (x * 1.0).sub_(y), [(), ()], B[:1] + [X(B[1])]),
    E("mul_", lambda m, x, y: (x * 1.0).mul_(y), [(), ()], B[:1] + [X(B[1])]),
    E("div_", lambda m, x, y: (x * 1.0).div_(y), [(), ()], B[:1] + [X(B[1])], domain=DIV),
    E("fill_", lambda m, x, v: (x * 1.0).fill_(v), [(), ()], [[(0, 3), ()]]),
    E("zero_", lambda m, x: (x * 1.0).zero_(), [()], U),
    E("copy_", lambda m, x, y: (x * 1.0).copy_(y), [(), ()], B[:1] + [X(B[1])]),
    E("clamp_", lambda m, x: (x * 1.0).clamp_(-0.5, 0.5), [()], U),
    E("setitem", _set(lambda m, x: ...), [(), ()], [[(0, 3), (3,)], [(0,), ()]]),
    E("setitem", _set(lambda m, x: ()), [(), ()], [[(0, 3), ()]], name="empty-tuple"),
    E("setitem", _set(lambda m, x: x > 5), [(), ()], [[(0, 3), ()], [(2, 3), (0,)]], name="mask"),
    E(
        "setitem",
        _set(lambda m, x: _noix(m)),
        None,
        [[(3, 2), (0, 2)], [(0,), (0,)]],
        name="empty-index",
    ),
    E(
        "setitem",
        _set(lambda m, x: (slice(None), 1)),
        X([(), ()]),
        [[(0, 3), (0,)]],
        name="column",
        names=("index", "setitem"),
    ),
    # -- linear algebra --------------------------------------------------------------------
    E(
        "matmul",
        lambda m, a, b: a @ b,
        X([(), ()]),
        [[(0, 3), (3, 2)], [(2, 0), (0, 3)], [(0,), (0,)], [(2, 0, 3), (3,)], [(0,), (0, 2)]],
    ),
    E("outer", lambda m, a, b: m.outer(a, b), X([(), ()]), [[(0,), (3,)], [(2,), (0,)]]),
    E(
        "einsum",
        lambda m, a, b: m.einsum("ij,jk->ik", a, b),
        None,
        [[(2, 0), (0, 3)], [(0, 3), (3, 2)]],
    ),
    E("einsum", lambda m, a, b: m.einsum(",->", a, b), [(), ()], name="0d"),
    E("einsum", lambda m, a, b: m.einsum("i,->i", a, b), None, [[(0,), ()]], name="0d-empty"),
    E("einsum", lambda m, a: m.einsum("...->", a), [()], U, name="ellipsis-sum"),
    E("einsum", lambda m, a: m.einsum("ii->i", a), X([()]), [[(0, 0)]], name="diagonal"),
    E("inverse", lambda m, a: m.linalg.inv(a), X([()]), SQ, names=("inv", "inverse")),
    E("det", lambda m, a: m.linalg.det(a), X([()]), SQ),
    E("slogdet", lambda m, a: m.linalg.slogdet(a), X([()]), SQ),
    E(
        "solve",
        lambda m, a, b: m.linalg.solve(a, b),
        X([(), ()]),
        [[(0, 0), (0,)], [(0, 0), (0, 2)], [(2, 2), (2, 0)], [(0, 2, 2), (2,)]],
    ),
    E(
        "solve_triangular",
        lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True),
        X([(), ()]),
        [[(0, 0), (0, 2)], [(2, 2), (2, 0)], [(0, 2, 2), (2, 1)]],
    ),
    E("cholesky", lambda m, a: m.linalg.cholesky(a), X([()]), SQ),
    E("vector_norm", lambda m, x: m.linalg.vector_norm(x), [()], U),
    E(
        "vector_norm",
        lambda m, x: m.linalg.vector_norm(x, 1, dim=-1),
        [()],
        [[(0, 3)], [(3, 0)]],
        name="p1-dim",
    ),
    E(
        "vector_norm",
        lambda m, x: m.linalg.vector_norm(x, float("inf")),
        [()],
        [X([(0, 3)])],
        name="inf",
    ),
    E(
        "vector_norm",
        lambda m, x: m.linalg.vector_norm(x, float("inf"), -1),
        [()],
        [[(0, 3)], X([(3, 0)])],
        name="inf-dim",
    ),
    E("matrix_norm", lambda m, x: m.linalg.matrix_norm(x), X([()]), [[(0, 3)], [(2, 0, 0)]]),
    E(
        "matrix_norm",
        lambda m, x: m.linalg.matrix_norm(x, 1),
        X([()]),
        [[(0, 3)], [(2, 0)]],
        name="1",
    ),
    E(
        "matrix_norm",
        lambda m, x: m.linalg.matrix_norm(x, -1),
        X([()]),
        [[(0, 3)], X([(2, 0)])],
        name="-1",
    ),
    E(
        "vector_norm",
        lambda m, x: m.linalg.vector_norm(x, -1, dim=0),
        [()],
        [[(3, 0)], X([(0, 3)])],
        name="-1",
    ),
    E("norm", lambda m, x: x.norm(), [()], U),
    E("norm", lambda m, x: x.norm(p=1, dim=0), [()], [[(0, 3)], [(3, 0)]], name="p1"),
    E("linalg_norm", lambda m, x: m.linalg.norm(x), [()], U),
    E("linalg_norm", lambda m, x: m.linalg.norm(x, 2, dim=-1), [()], [[(3, 0)]], name="dim"),
    # -- reductions ------------------------------------------------------------------------
    E("sum", lambda m, x: x.sum(), [()], U),
    E("sum", lambda m, x: x.sum(0, keepdim=True), [()], [[(0, 3)], [(3, 0)]], name="dim"),
    E("sum", lambda m, x: x.sum(-1), [()], [[(2, 0, 3)]], name="dim-1"),
    E("mean", lambda m, x: x.mean(), [()], U),
    E("mean", lambda m, x: x.mean((0, -1)), X([()]), [[(0, 3)], [(2, 0, 3)]], name="dims"),
    E("prod", lambda m, x: x.prod(), [()], U),
    E("prod", lambda m, x: x.prod(0), [()], [[(0, 3)], [(3, 0)]], name="dim"),
    E("max", lambda m, x: x.max(), [()], [X([(0,)]), X([(0, 3)])]),
    E("max", lambda m, x: x.max(0), [()], [X([(0, 3)]), [(3, 0)]], name="dim"),
    E("min", lambda m, x: x.min(), [()], [X([(2, 0)])]),
    E("min", lambda m, x: m.min(x, -1, keepdim=True), [()], [[(0, 3)], X([(3, 0)])], name="dim"),
    E("amax", lambda m, x: x.amax(), [()], [X([(0, 3)])]),
    E("amax", lambda m, x: x.amax(-1), [()], [[(0, 3)], X([(3, 0)])], name="dim"),
    E("amin", lambda m, x: m.amin(x, (0, 1)), X([()]), [X([(0, 3)])], name="dims"),
    E("amin", lambda m, x: x.amin(0, keepdim=True), [()], [[(3, 0)], X([(0, 3)])], name="dim"),
    E("argmax", lambda m, x: x.argmax(), [()], [X([(0,)])]),
    E("argmax", lambda m, x: x.argmax(0, keepdim=True), [()], [[(3, 0)], X([(0, 3)])], name="dim"),
    E("argmin", lambda m, x: x.argmin(-1), [()], [[(0, 3)], X([(3, 0)])]),
    E("var", lambda m, x: x.var(), [()], U, nan0d=True),
    E("var", lambda m, x: x.var(0, correction=0), [()], [[(0, 3)], [(3, 0)]], name="dim"),
    E("std", lambda m, x: x.std(), [()], U, nan0d=True),
    E(
        "std",
        lambda m, x: x.std(-1, keepdim=True),
        [()],
        [[(0, 3)], [(3, 0)]],
        name="dim",
        nan0d=True,
    ),
    E("std", lambda m, x: x.std(0, correction=0), [()], name="correction0"),
    E("logsumexp", lambda m, x: x.logsumexp(0), [()], [[(0, 3)], [(3, 0)]]),
    E("logsumexp", lambda m, x: m.logsumexp(x, (0, 1)), X([()]), [[(0, 3)]], name="dims"),
    E("softmax", lambda m, x: x.softmax(0), [()], [[(0, 3)], [(3, 0)]]),
    E("log_softmax", lambda m, x: m.log_softmax(x, -1), [()], [[(0, 3)], [(3, 0)]]),
    E("cumsum", lambda m, x: x.cumsum(0), [()], [[(0, 3)], [(3, 0)]]),
    E("cumprod", lambda m, x: x.cumprod(-1), [()], [[(0, 3)], [(3, 0)]]),
    # -- a dim that a 0-d tensor does not have (only 0 and -1 exist) -------------------------
    *[
        E(op, fn, X([()]), name="bad-dim")
        for op, fn in [
            ("sum", lambda m, x: x.sum(1)),
            ("mean", lambda m, x: x.mean(-2)),
            ("softmax", lambda m, x: x.softmax(1)),
            ("cumsum", lambda m, x: x.cumsum(1)),
            ("unsqueeze", lambda m, x: x.unsqueeze(2)),
            ("squeeze", lambda m, x: x.squeeze(1)),
            ("transpose", lambda m, x: x.transpose(0, 1)),
            ("flip", lambda m, x: x.flip(1)),
            ("max", lambda m, x: x.max(1)),
            ("argmax", lambda m, x: x.argmax(1)),
            ("logsumexp", lambda m, x: x.logsumexp(1)),
            ("index_select", lambda m, x: x.index_select(1, _ix(m, 0))),
            ("gather", lambda m, x: x.gather(1, _ix(m, 0)[0])),
        ]
    ],
    E(
        "getitem",
        lambda m, x: x[_ix(m, 0)[0]],
        X([()]),
        name="int-tensor",
        names=("index", "getitem"),
    ),
    E("getitem", lambda m, x: x[:], X([()]), name="slice", names=("index", "getitem")),
    E("tile", lambda m, x: m.tile(x, (0, 2)), [()], [[(0, 3)], [(3,)]], name="zero-times"),
    E("flip", lambda m, x: x.flip((0, -1)), None, [[(0, 3)], [(2, 0, 3)]], name="dims"),
    E("spmm", lambda m, v, d: _sparse(m, v) @ d, X([(2,), ()]), [[(0,), (3, 2)], [(2,), (3, 0)]]),
    # -- issue 11 (layers) --------------------------------------------------------------------
    E(
        "_scaled_dot_product_attention",
        lambda m, q, k, v: m.nn.functional.scaled_dot_product_attention(q, k, v),
        X([(), (), ()]),
        [[(2, 0, 4), (2, 5, 4), (2, 5, 3)], [(2, 3, 4), (2, 0, 4), (2, 0, 5)]],
        names=("scaled_dot_product_attention",),
    ),
    E(
        "lstm_cell",
        lambda m, x, h, c, wi, wh: m.lstm_cell(x, (h, c), wi, wh),
        X([(), (), (), (), ()]),
        [[(0, 3), (0, 2), (0, 2), (8, 3), (8, 2)]],
    ),
    *[
        E(
            op,
            lambda m, x, h, wi, wh, op=op: getattr(m, op)(x, h, wi, wh),
            X([()] * 4),
            [[(0, 3), (0, 2), (g * 2, 3), (g * 2, 2)]],
        )
        for op, g in (("gru_cell", 3), ("rnn_tanh_cell", 1), ("rnn_relu_cell", 1))
    ],
    *[
        E(op, lambda m, x, op=op, a=args: getattr(m.nn.functional, op)(x, *a), [()], [[(0, 3)]])
        for op, args in [
            ("elu", (0.7,)),
            ("selu", ()),
            ("celu", (1.5,)),
            ("leaky_relu", (0.2,)),
            ("hardtanh", (-2.0, 1.5)),
            ("relu6", ()),
            ("hardsigmoid", ()),
            ("hardswish", ()),
            ("mish", ()),
            ("softsign", ()),
            ("softshrink", (0.7,)),
            ("hardshrink", (0.7,)),
            ("tanhshrink", ()),
            ("threshold", (0.3, -2.0)),
            ("logsigmoid", ()),
        ]
    ],  # fmt: skip
]


def _sparse(m, v):
    """A (2, 3) sparse COO tensor holding ``v`` (at most 2 entries) at (0, 0) and (1, 2)."""
    n = v.shape[0]
    idx = m.tensor([[0, 1][:n], [0, 2][:n]], dtype=m.int64)
    return m.sparse_coo_tensor(idx, v, (2, 3), check_invariants=True)


# -- issue 10: rows generated from the elementwise op tables (tests/edge_tables.py) --
from .edge_tables import rows as _table_rows  # noqa: E402

ROWS += _table_rows(E, U, B)
from .edge_issue10b import rows as _issue10b_rows  # noqa: E402

ROWS += _issue10b_rows(E, X, B, U, DIV)
from .edge_issue10m import rows as _issue10m_rows  # noqa: E402

ROWS += _issue10m_rows(E, X, B, U)
from .edge_issue10v import rows as _issue10v_rows  # noqa: E402

ROWS += _issue10v_rows(E, X, B, U)
from .edge_linalg_l import rows as _linalg_l_rows  # noqa: E402

ROWS += _linalg_l_rows(E, X, SQ)

# -- issue 16: fused gradient rules (PyTorch's aten.tanh_backward / aten.sigmoid_backward) --
ROWS += [
    E("_tanh_backward", lambda m, g, y: _aten(m, "tanh_backward")(g, y), [(), ()], B),
    E("_sigmoid_backward", lambda m, g, y: _aten(m, "sigmoid_backward")(g, y), [(), ()], B),
    # issue 11; torch 2.13's float32 gelu_backward fails (oneDNN) on broadcast empty shapes
    E("_gelu_backward", lambda m, g, x: _aten(m, "gelu_backward")(g, x), [(), ()], GB),
]

# -- issue 10 (nn.functional of op_db): channel_shuffle and aten's grid samplers --
ROWS += [
    E("channel_shuffle", lambda m, x: m.channel_shuffle(x, 2), X([()]), [[(0, 4, 3)], [(2, 4, 0)]]),
    E(
        "grid_sampler_2d",
        lambda m, x, g: m.grid_sampler_2d(x, g, 0, 0, False),
        X([(), ()]),
        [[(0, 2, 3, 4), (0, 2, 2, 2)], [(1, 2, 3, 4), (1, 0, 2, 2)]],
    ),
    E(
        "grid_sampler_3d",
        lambda m, x, g: m.grid_sampler_3d(x, g, 0, 1, True),
        X([(), ()]),
        [[(0, 2, 3, 4, 2), (0, 2, 2, 2, 3)], [(1, 2, 3, 4, 2), (1, 2, 0, 2, 3)]],
    ),
    E(
        "grid_sampler",
        lambda m, x, g: m.grid_sampler(x, g, 1, 2, False),
        X([(), ()]),
        [[(0, 2, 3, 4), (0, 2, 2, 2)]],
    ),
]


# -- issue 10 (complex tensors): the complex ops on real inputs, read back as real ---------
def _re_im(m, z):
    return m.real(z) * 3.0 + m.imag(z)


def _eig_phase_free(m, x):
    L, V = m.linalg.eig(x)
    return _re_im(m, L), V.abs()


ROWS += [
    E("complex", lambda m, a, b: _re_im(m, m.complex(a, b)), [(), ()], B),
    E("polar", lambda m, a, b: _re_im(m, m.polar(a, b)), [(), ()], B, domain=POS),
    E("imag", lambda m, a, b: m.imag(m.complex(a, b)) * 2.0, [(), ()], B),
    E("view_as_real", lambda m, x: m.view_as_real(m.complex(x, x * 2.0)) * 2.0, [()], U),
    E(
        "view_as_complex",
        lambda m, x: _re_im(m, m.view_as_complex(m.stack([x, x * 2.0], -1)) * (1 + 1j)),
        [()],
        U,
    ),
    E("is_complex", lambda m, x: m.tensor(m.is_complex(x)), [()], U),
    E("linalg_eig", lambda m, x: _eig_phase_free(m, x), X([()]), SQ, names=("linalg.eig",)),
    E(
        "stft",
        lambda m, x: m.view_as_real(m.stft(x, 4, return_complex=True)),
        X([()]),
        [X([(0,)]), X([(0, 20)])],
    ),
    E(
        "istft",
        lambda m, x: m.istft(m.complex(x, x * 2.0), 4, window=m.ones(4, dtype=x.dtype)),
        X([()]),
        [X([(0,)]), X([(3, 0)])],
    ),
    E("view_as_real_copy", lambda m, x: m.view_as_real_copy(m.complex(x, x * 2.0)) * 2.0, [()], U),
]


def _aten(m, name):
    return getattr(m.ops.aten, name) if m.__name__ == "torch" else m.ops.OPS["_" + name].fn


# Every op has both variants, so nothing is excluded; where PyTorch rejects 0-d or empty
# input (matrix ops on 0-d, a reduction with no identity over an empty dim) the row is an
# X variant that checks tapegrad's error instead.
EXCLUDED: dict[str, str] = {
    "detach_copy": "no gradient, and torch 2.13's backward raises (tests/test_view_ops.py)",
    "view_as_complex_copy": "torch 2.13 refuses autograd for its complex output; the values "
    "are compared in tests/test_view_ops.py",
}
from .edge_inplace_twins import EXCLUDED as _twins_excluded  # noqa: E402 - issue 10 (i10m)
from .edge_inplace_twins import rows as _twin_rows  # noqa: E402

ROWS += _twin_rows(E, X, U)
EXCLUDED.update(_twins_excluded)

VARIANTS = [(row, kind, v) for row in ROWS for kind, v in row.variants()]
VARIANT_IDS = [f"{row.id}-{kind}" for row, kind, _ in VARIANTS]
_TAPEGRAD_DIR = os.path.dirname(tg.__file__)
# Ops that overwrite their whole input: tapegrad sends it no gradient (None) where
# PyTorch sends zeros. An empty input must still get an empty gradient.
OVERWRITES = {"fill_", "zero_", "copy_", "setitem"}
_ERRORS = (ValueError, RuntimeError, IndexError, TypeError)


def _arrays(row, shapes, seed=0):
    rng = np.random.default_rng(seed)
    domains = row.domain
    if not isinstance(domains[0], (tuple, list)):
        domains = [domains] * len(shapes)
    return [rng.uniform(lo, hi, size=s) for s, (lo, hi) in zip(shapes, domains)]


def _flat(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


# Note [Checked messages] (tests/_message_check.py) for every rejected row; the checks a
# row's message cannot meet, with the reason. Where torch's text is one of its internal
# checks (a dim range, ``size(1)``) it states no rank, and ours states the one the op needs.
_INTERNAL = "torch's text is an internal dim check; ours states the ranks the op takes"
MESSAGE_WAIVERS = {
    "narrow": {"ranks": "ours states the rank narrow needs (1); torch's only the 0-dim input"},
    "pad-reflect": {
        "ranks": "ours gives the reason (the padding exceeds an empty dim); torch's text is "
        "its generic rank check"
    },
    "setitem-column": {"numbers": "NumPy's reason, kept in parentheses, counts the indices"},
    "spmm": {"ranks": "torch's text is matmul's; ours states the 2-D operands spmm takes"},
    **{
        cell: {"ranks": _INTERNAL, "numbers": _INTERNAL}
        for cell in ("lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell")
    },
    **{
        op: {"ranks": _INTERNAL, "numbers": _INTERNAL}
        for op in ("diagonal", "diagonal_copy", "diagonal_scatter", "diag_embed")
    },
    "chain_matmul": {"ranks": "ours also states that the ends may be 1D"},
    "cross": {"shapes": "[-1, 0] is the range of dims, not a shape"},
    "histogramdd": {"ranks": _INTERNAL},
    "native_batch_norm": {"ranks": _INTERNAL, "numbers": _INTERNAL},
    **{
        op: {"ranks": _INTERNAL, "numbers": _INTERNAL}
        for op in ("grid_sampler_2d", "grid_sampler_3d", "grid_sampler")
    },
    "stft": {
        "ranks": "ours gives the reason (an empty signal); torch's text is its pad's rank check"
    },
    "istft": {"ranks": _INTERNAL, "numbers": _INTERNAL},
}


def _check_clear_error(row, arrays, theirs=None):
    xs = [tg.tensor(a, requires_grad=True) for a in arrays]
    with pytest.raises(_ERRORS) as info:
        row.fn(tg, *xs)
    frame = traceback.extract_tb(info.value.__traceback__)[-1]
    assert frame.filename.startswith(_TAPEGRAD_DIR), (
        f"{row.id}: raised from outside tapegrad ({frame.filename}:{frame.lineno}): {info.value!r}"
    )
    names = row.names or (row.op,)
    msg = str(info.value)
    assert any(re.search(rf"(?<![A-Za-z_]){re.escape(n)}(?![A-Za-z_])", msg) for n in names), (
        f"{row.id}: the error does not name the op ({names}): {msg!r}"
    )
    if theirs is not None:
        check_message(
            row.id, info.value, theirs, names=names, waive=MESSAGE_WAIVERS.get(row.id, ())
        )


@pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0")  # torch's var of 1 element
@pytest.mark.parametrize(("row", "kind", "variant"), VARIANTS, ids=VARIANT_IDS)
def test_matches_torch(row, kind, variant, torch_mod):
    shapes = variant.shapes if isinstance(variant, X) else variant
    arrays = _arrays(row, shapes)
    theirs = [torch_mod.tensor(a, requires_grad=True) for a in arrays]
    try:
        ref = _flat(row.fn(torch_mod, *theirs))
    except Exception as exc:  # noqa: BLE001 - any torch error means "rejected"
        assert isinstance(variant, X), f"torch rejects {row.id} on {shapes}: {exc}; mark it X"
        _check_clear_error(row, arrays, exc)
        return
    assert not isinstance(variant, X), f"torch accepts {row.id} on {shapes}; unmark X"
    ours = [tg.tensor(a, requires_grad=True) for a in arrays]
    with warnings.catch_warnings():  # NumPy's "Mean of empty slice" must not leak out of an op
        warnings.simplefilter("error", RuntimeWarning)
        out = _flat(row.fn(tg, *ours))
    assert len(out) == len(ref)
    loss_ours, loss_ref = _compare_values(out, ref, torch_mod)
    if loss_ref is None or not OPS[row.op].differentiable:
        return
    got = tg.autograd.grad(loss_ours, ours, allow_unused=True)
    want = torch_mod.autograd.grad(loss_ref, theirs, allow_unused=True)
    for i, (g, w) in enumerate(zip(got, want)):
        if w is None or (g is None and row.op in OVERWRITES and w.numel() and not w.any()):
            assert g is None or not g._data.any(), f"input {i}: torch gives no gradient"
            continue
        assert g is not None, f"input {i}: no gradient; torch gives one of shape {tuple(w.shape)}"
        assert g.shape == arrays[i].shape and g._data.dtype == np.float64
        np.testing.assert_allclose(g._data, w.detach().numpy(), rtol=1e-6, atol=1e-12)


ACCEPTED = [(row, kind, v) for row, kind, v in VARIANTS if not isinstance(v, X)]


@pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0")
@pytest.mark.parametrize(
    ("row", "kind", "variant"), ACCEPTED, ids=[f"{r.id}-{k}" for r, k, _ in ACCEPTED]
)
def test_float32_stays_float32(row, kind, variant, torch_mod):
    """Edge cases take no float64 detour: float32 in, torch's dtypes out."""
    arrays = [a.astype(np.float32) for a in _arrays(row, variant)]
    out = _flat(row.fn(tg, *[tg.tensor(a) for a in arrays]))
    ref = _flat(row.fn(torch_mod, *[torch_mod.tensor(a) for a in arrays]))
    for o, r in zip(out, ref, strict=True):
        assert o._data.dtype == r.numpy().dtype
        np.testing.assert_allclose(o._data, r.numpy(), rtol=1e-5, atol=1e-6)


@np.errstate(invalid="ignore")  # the loss of ±inf outputs (logsumexp of nothing) is NaN
def _compare_values(out, ref, torch_mod):
    """Check values, shapes and dtypes; return both losses Σ w ⊙ out (None if no grad)."""
    rng = np.random.default_rng(1)
    loss_ours, loss_ref = None, None
    for o, r in zip(out, ref):
        want = r.detach().numpy()
        assert o.shape == want.shape, f"shape {o.shape} != torch's {want.shape}"
        assert o._data.dtype == want.dtype, f"dtype {o._data.dtype} != torch's {want.dtype}"
        np.testing.assert_allclose(o._data, want, rtol=1e-6, atol=1e-12)
        if r.requires_grad:
            w = rng.uniform(-1, 1, size=want.shape)
            lo, lr = (o * tg.tensor(w, dtype=o.dtype)).sum(), (r * torch_mod.tensor(w)).sum()
            loss_ours = lo if loss_ours is None else loss_ours + lo
            loss_ref = lr if loss_ref is None else loss_ref + lr
    return loss_ours, loss_ref


CHECKED = [
    (row, kind, v)
    for row, kind, v in VARIANTS
    if OPS[row.op].differentiable and not isinstance(v, X) and not (row.nan0d and kind == "0d")
]


@pytest.mark.filterwarnings("ignore:invalid value encountered")  # Σ w·(−inf) of logsumexp
@pytest.mark.parametrize(
    ("row", "kind", "variant"), CHECKED, ids=[f"{r.id}-{k}" for r, k, _ in CHECKED]
)
def test_gradcheck(row, kind, variant):
    assert not row.tol or row.tol_reason, "a looser gradcheck needs a tol_reason"
    xs = [tg.tensor(a, requires_grad=True) for a in _arrays(row, variant, seed=2)]
    assert tg.autograd.gradcheck(lambda *a: row.fn(tg, *a), xs, **row.tol)
    # A NaN output (std of nothing) has a NaN double backward with respect to the upstream
    # gradient in PyTorch too (0·NaN); test_matches_torch compares those NaNs.
    nan = any(np.isnan(o._data).any() for o in _flat(row.fn(tg, *xs)))
    if row.gradgrad and not nan:
        assert tg.autograd.gradgradcheck(lambda *a: row.fn(tg, *a), xs, **row.tol)


def test_mT_of_0d_raises():
    """PyTorch's mT of a 0-d tensor is a deprecated identity; tapegrad raises clearly."""
    _check_clear_error(E("transpose", lambda m, x: x.mT, None, names=("mT",)), [np.array(1.0)])


def test_every_op_has_0d_and_empty_rows():
    has_0d = {row.op for row in ROWS if row.d0 is not None}
    has_empty = {row.op for row in ROWS if row.empty}
    missing = sorted(
        f"{op} ({'0-d' if op not in has_0d else 'empty'})"
        for op in OPS
        if op not in EXCLUDED and not (op in has_0d and op in has_empty)
    )
    assert not missing, f"ops without 0-d/empty rows in test_edge_shapes: {missing}"
    assert not set(EXCLUDED) - set(OPS)
    assert not {row.op for row in ROWS} - set(OPS)


def test_message_waivers_name_rejected_rows():
    """A waiver outlives no row: each names a row with a variant torch rejects."""
    rejected = {row.id for row, _, v in VARIANTS if isinstance(v, X)}
    assert set(MESSAGE_WAIVERS) <= rejected, set(MESSAGE_WAIVERS) - rejected
