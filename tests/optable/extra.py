"""Rows added by later work, one module per family (joined here)."""

from .nn_layers import CASES as _NN_LAYERS

CASES = [*_NN_LAYERS]
