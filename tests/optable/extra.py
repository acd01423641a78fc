"""Rows added by later work, one module per family (joined here)."""

from .nn_issue10f import CASES as _NN_ISSUE10F
from .nn_layers import CASES as _NN_LAYERS

CASES = [*_NN_LAYERS, *_NN_ISSUE10F]
