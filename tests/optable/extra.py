"""Rows added by later work, one module per family (joined here)."""

from .nn_layers import CASES as _NN_LAYERS
from .views_v import CASES as _VIEWS_V

CASES = [*_NN_LAYERS, *_VIEWS_V]
