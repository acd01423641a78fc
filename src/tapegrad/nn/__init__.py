"""``tapegrad.nn``: Module, Parameter, layers, losses, ``functional`` and ``init``."""

from . import functional, init
from .activation import GELU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Softplus, Tanh
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv2d
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout
from .embedding import Embedding
from .linear import Flatten, Identity, Linear
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .module import Module
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, LayerNorm
from .parameter import Parameter
from .pooling import AvgPool2d, MaxPool2d
from .losses_more import *  # noqa: F403
from . import utils
from . import modules, parallel
from .parallel import DataParallel
from .activation_ext import *  # noqa: F403
from .attention import MultiheadAttention
from .conv_more import Conv1d, Conv3d, ConvTranspose1d, ConvTranspose2d
from .layers_ext import *  # noqa: F403
from .normalization_ext import *  # noqa: F403
from .param_containers import ParameterDict, ParameterList
from .pooling_more import *  # noqa: F403
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .pooling_nd import *  # noqa: F403
from .conv_transpose3d import ConvTranspose3d
from .channel_shuffle import ChannelShuffle
from .padding import *  # noqa: F403
from .distance import CosineSimilarity, PairwiseDistance
from .pooling_lp import LPPool1d, LPPool2d, LPPool3d
from ._linear_cross_entropy import LinearCrossEntropyOptions
from .linear_cross_entropy_loss import LinearCrossEntropyLoss
from ._uninitialized import UninitializedBuffer, UninitializedParameter
from ._uninitialized import is_lazy as _is_lazy
from .buffer import Buffer
from .lazy import *  # noqa: F403
from .legacy_layers import CrossMapLRN2d, NLLLoss2d
from .sync_batchnorm import SyncBatchNorm
from .adaptive import AdaptiveLogSoftmaxWithLoss
from . import parameter as _parameter

# torch.nn.parameter also holds these; their files import parameter.py, so set them here
_parameter.UninitializedParameter = UninitializedParameter
_parameter.UninitializedBuffer = UninitializedBuffer
_parameter.Buffer = Buffer
_parameter.is_lazy = _is_lazy

# Modules add their names by importing them above (one line each); nothing else to edit.
__all__ = [name for name in dir() if not name.startswith("_")]
