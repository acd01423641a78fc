"""``tapegrad.nn.utils``, as ``torch.nn.utils``: gradient clipping, parametrizations, pruning,
RNN packing.

Each concept lives in its own submodule; its public names are re-exported here.
"""

from . import rnn
from . import parametrizations, parametrize
from . import fusion, init, prune, stateless
from .clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from .init import skip_init
from .legacy_norms import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm

__all__ = [name for name in dir() if not name.startswith("_")]
