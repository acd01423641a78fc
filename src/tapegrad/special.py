"""``tapegrad.special``: the functions of ``torch.special``.

Most are the elementwise ops of the op tables (ops/unary_table.py, ops/binary_table.py:
each row's ``special=`` names it here); the rest are PyTorch's other names for ops that
exist at top level (``expit`` is ``sigmoid``, ``gammaln`` is ``lgamma``), and the
orthogonal polynomials (values only; PyTorch records no gradient for them either).

>>> import tapegrad as tg
>>> tg.special.expit(tg.tensor([0.0])), tg.special.xlogy(tg.tensor([0.0]), 0.0)
(tensor([0.5000]), tensor([0.]))
"""

from __future__ import annotations

from .ops import _table, misc_math
from .ops._registry import OPS, exported
from .ops.polynomials import POLYNOMIALS

__all__ = []


def _bind(name, fn):
    globals()[name] = fn
    __all__.append(name)


for _row in _table.ROWS.values():
    if _row.special:
        _bind(_row.special, exported(OPS[_row.name]))

for _name, _op in (
    ("expit", "sigmoid"),
    ("erf", "erf"),
    ("expm1", "expm1"),
    ("log1p", "log1p"),
    ("round", "round"),
    ("psi", "digamma"),
    ("logsumexp", "logsumexp"),
    ("softmax", "softmax"),
    ("log_softmax", "log_softmax"),
):
    _bind(_name, exported(OPS[_op]))

_bind("logit", misc_math.logit)
_bind("polygamma", misc_math.polygamma)
_bind("multigammaln", misc_math.mvlgamma)
for _name, _fn in POLYNOMIALS.items():
    _bind(_name, _fn)

del _row, _name, _op, _fn
