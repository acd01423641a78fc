"""Table rows for issue 10's second half: division family, reductions and scans, sorting,
shape and view ops, indexing ops, tg.linalg additions."""

import numpy as np

from . import OpCase

CASES = []


def _away_from_multiples(shape, b):
    """a/b kept away from integers, where remainder and fmod jump."""

    def make(rng):
        q = rng.integers(-3, 3, size=shape) + rng.uniform(0.2, 0.8, size=shape)
        return [q * b, np.full(shape, b)]

    return make


CASES += [
    OpCase(
        "fmod",
        lambda m, a, b: m.fmod(a, b),
        [(3, 4), (3, 4)],
        inputs=_away_from_multiples((3, 4), 1.3),
    ),
    OpCase(
        "fmod",
        lambda m, a: m.fmod(a, -1.3),
        [(3, 4)],
        name="scalar",
        inputs=lambda rng: _away_from_multiples((3, 4), 1.3)(rng)[:1],
    ),
]
