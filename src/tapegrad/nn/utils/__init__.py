"""``tapegrad.nn.utils``, as ``torch.nn.utils``: gradient clipping, parametrizations, RNN packing.

Each concept lives in its own submodule; its public names are re-exported here.
"""

from . import rnn

__all__ = [name for name in dir() if not name.startswith("_")]
