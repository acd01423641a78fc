"""``torch.quasirandom``: :class:`SobolEngine`, (scrambled) Sobol low-discrepancy sequences.

Note [Sobol through SciPy]
torch's engine uses the Joe-Kuo direction numbers (search criterion D(6), 21201
dimensions) with 30 bits, as ``scipy.stats.qmc.Sobol(d, bits=30)`` does: unscrambled,
SciPy's points equal torch's bit for bit (each is an exact multiple of 2**-30, rounded
once to the output dtype), so the engine wraps SciPy's rather than re-deriving the
direction numbers. Scrambling is the same construction in both (Owen's random
lower-triangular matrices, then a random digital shift) but drawn from a different RNG,
so scrambled points differ from torch's while keeping their properties (in [0, 1),
balanced in every 2**m block). ``seed`` makes them reproducible; without it they come
from the default generator, so ``tapegrad.manual_seed`` fixes them, as in torch.
SciPy is imported when an engine is built, not with tapegrad (tests/test_import_cost.py).
"""

from __future__ import annotations

import warnings

import numpy as np

from .tensor import Tensor

__all__ = ["SobolEngine"]


class SobolEngine:
    """An engine for (scrambled) Sobol sequences of ``dimension`` in [1, 21201].

    >>> import tapegrad as tg
    >>> tg.quasirandom.SobolEngine(dimension=2).draw(3)
    tensor([[0.0000, 0.0000],
            [0.5000, 0.5000],
            [0.7500, 0.2500]])
    """

    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension, scramble=False, seed=None):
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError(
                f"Supported range of dimensionality for SobolEngine is [1, {self.MAXDIM}]"
            )
        from scipy.stats import qmc

        from .random import Generator, default_generator

        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        if scramble:
            gen = default_generator if seed is None else Generator().manual_seed(seed)
            rng = gen.numpy
        else:
            rng = None
        self._engine = qmc.Sobol(dimension, scramble=bool(scramble), bits=self.MAXBIT, rng=rng)
        self.num_generated = 0

    def draw(self, n=1, out=None, dtype=None):
        """The next ``n`` points, shape (n, dimension), in ``dtype`` (default: the default
        dtype); written into ``out`` (resized) when given."""
        from ._dtypes import get_default_dtype, to_dtype

        dtype = get_default_dtype() if dtype is None else to_dtype(dtype)
        with warnings.catch_warnings():  # torch does not warn about the balance in draw
            warnings.simplefilter("ignore", UserWarning)
            points = self._engine.random(n)
        self.num_generated += n
        result = Tensor._wrap(np.ascontiguousarray(points.astype(dtype)))
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m, out=None, dtype=None):
        """The next ``2**m`` points; the total drawn must stay a power of 2 (balance)."""
        n = 2**m
        total_n = self.num_generated + n
        if not (total_n & (total_n - 1) == 0):
            raise ValueError(
                "The balance properties of Sobol' points require "
                f"n to be a power of 2. {self.num_generated} points have been "
                f"previously generated, then: n={self.num_generated}+2**{m}={total_n}. "
                "If you still want to do this, please use "
                "'SobolEngine.draw()' instead."
            )
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self):
        """Back to the first point (same scrambling)."""
        self._engine.reset()
        self.num_generated = 0
        return self

    def fast_forward(self, n):
        """Skip ``n`` points, as drawing them would."""
        self._engine.fast_forward(n)
        self.num_generated += n
        return self

    def __repr__(self):
        fmt_string = [f"dimension={self.dimension}"]
        if self.scramble:
            fmt_string += ["scramble=True"]
        if self.seed is not None:
            fmt_string += [f"seed={self.seed}"]
        return self.__class__.__name__ + "(" + ", ".join(fmt_string) + ")"
