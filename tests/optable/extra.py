"""Rows added by later work, one module per family (joined here)."""

from .nn_issue10f import CASES as _NN_ISSUE10F
from .nn_layers import CASES as _NN_LAYERS
from .views_v import CASES as _VIEWS_V

CASES = [*_NN_LAYERS, *_NN_ISSUE10F, *_VIEWS_V]
