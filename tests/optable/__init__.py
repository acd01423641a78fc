"""The op test table: every differentiable op, with sample inputs, listed once per case.

A row is an :class:`OpCase`. Its ``fn(m, *xs)`` is written once against the
shared API and called with ``m = tapegrad`` and ``m = torch``, so the same line
feeds gradcheck, gradgradcheck and the PyTorch comparison. Families live in
sibling modules, each exporting ``CASES``; ``ALL_CASES`` joins them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np


#: PyTorch's gradcheck defaults for float64, the op table's defaults (issue 18).
GRADCHECK_TOL = {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-3}

#: For rows whose output passes through float32: a step of 1e-6 is below its resolution.
FLOAT32_TOL = {"eps": 1e-3, "atol": 1e-4, "rtol": 1e-3}


@dataclasses.dataclass
class OpCase:
    """One row: the op's registry name, the function, its input shapes and domain.

    Attributes:
        op: registry name of the op under test (``tapegrad.ops.OPS``).
        fn: ``fn(m, *inputs)`` using module ``m`` (tapegrad or torch).
        shapes: one shape per differentiable input.
        domain: ``(low, high)`` for uniform samples, or one pair per input.
        name: a suffix that tells cases of one op apart.
        gradgrad: run gradgradcheck (False for ops whose second derivative is undefined).
        torch: compare with PyTorch (False where semantics differ on purpose).
        eps, atol, rtol: gradcheck step and tolerances; PyTorch's float64 defaults unless
            ``tol_reason`` says why a row needs looser ones (test_op_table checks it).
        tol_reason: why this row's ``eps``/``atol``/``rtol`` are looser than PyTorch's.
        inputs: optional ``inputs(rng) -> list[np.ndarray]`` overriding shapes/domain.
    """

    op: str
    fn: Callable
    shapes: tuple
    domain: tuple = (-2.0, 2.0)
    name: str = ""
    gradgrad: bool = True
    torch: bool = True
    eps: float = GRADCHECK_TOL["eps"]
    atol: float = GRADCHECK_TOL["atol"]
    rtol: float = GRADCHECK_TOL["rtol"]
    inputs: Callable | None = None
    tol_reason: str = ""

    @property
    def tol(self) -> dict:
        """Keyword arguments of gradcheck/gradgradcheck for this row."""
        return {"eps": self.eps, "atol": self.atol, "rtol": self.rtol}

    @property
    def looser(self) -> bool:
        """True when any tolerance is looser than PyTorch's defaults."""
        t = GRADCHECK_TOL
        return self.eps > t["eps"] or self.atol > t["atol"] or self.rtol > t["rtol"]

    @property
    def id(self) -> str:
        return f"{self.op}-{self.name}" if self.name else self.op

    def make_inputs(self, seed: int = 0) -> list:
        rng = np.random.default_rng(seed)
        if self.inputs is not None:
            return [np.asarray(a, dtype=np.float64) for a in self.inputs(rng)]
        domains = self.domain
        if not isinstance(domains[0], (tuple, list)):
            domains = [domains] * len(self.shapes)
        return [rng.uniform(lo, hi, size=shape) for shape, (lo, hi) in zip(self.shapes, domains)]


def away_from(points, lo, hi, gap=0.15):
    """An input generator of values in [lo, hi] at least ``gap`` from each kink in ``points``."""

    def gen(shape):
        def make(rng):
            x = rng.uniform(lo, hi, size=shape)
            for p in points:
                close = np.abs(x - p) < gap
                x = np.where(close, p + np.sign(x - p + 1e-12) * gap * 1.5, x)
            return x

        return make

    return gen


def _collect():
    from . import arithmetic, elementwise, indexing, linalg, reduction, shape  # noqa: PLC0415

    from . import unary_table  # noqa: PLC0415 - issue 10: rows generated from the op tables

    cases = []
    for module in (arithmetic, elementwise, reduction, shape, linalg, indexing, unary_table):
        cases.extend(module.CASES)
    try:  # families added by later work register themselves here
        from . import extra  # noqa: PLC0415
    except ImportError:
        pass
    else:
        cases.extend(extra.CASES)
    from . import issue10b  # noqa: PLC0415 - issue 10 (reductions, sorting, shape, indexing)

    cases.extend(issue10b.CASES)
    from . import issue10m  # noqa: PLC0415 - issue 10 part M (masked, numeric utilities)

    cases.extend(issue10m.CASES)
    from . import linalg_l  # noqa: PLC0415 - issue 10 (linear algebra)

    cases.extend(linalg_l.CASES)
    from . import complex as complex_rows  # noqa: PLC0415 - issue 10 (complex tensors)

    cases.extend(complex_rows.CASES)
    from . import inplace_twins  # noqa: PLC0415 - issue 10: the _ twins of hand-written ops

    cases.extend(inplace_twins.CASES)
    return cases


ALL_CASES = _collect()
