"""tapegrad: reverse-mode automatic differentiation over NumPy, with PyTorch's API.

>>> import tapegrad as tg
>>> a = tg.tensor(2.0, requires_grad=True)
>>> b = tg.tensor(3.0, requires_grad=True)
>>> (a * b + a).backward()
>>> a.grad, b.grad
(tensor(4.), tensor(2.))
"""

from . import ops as _ops  # noqa: F401 - binds every op to Tensor
from . import autograd
from ._dtypes import (
    bool_ as bool,  # noqa: A001 - PyTorch's name
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    set_default_dtype,
    uint8,
)
from .creation import (
    Generator,
    arange,
    as_tensor,
    default_generator,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    tensor,
    zeros,
    zeros_like,
)
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .ops.arithmetic import (
    add,
    clone,
    div,
    eq,
    ge,
    gt,
    le,
    lt,
    mul,
    ne,
    neg,
    pow,
    remainder,
    sub,
)
from .ops.elementwise import exp, log, relu, sigmoid, sqrt, tanh, where
from .ops.linalg import matmul
from .ops.reduction import mean, sum
from .ops.shape import (
    broadcast_to,
    expand,
    permute,
    reshape,
    squeeze,
    transpose,
    unsqueeze,
    view,
)
from .tensor import Tensor

# -- ops-shape: shape, joining, indexing (in-place ops are Tensor methods only) --------------
from .ops.indexing import (
    gather,
    index_select,
    masked_fill,
    scatter,
    scatter_add,
    take_along_dim,
)
from .ops.joining import cat, chunk, narrow, pad, split, stack
from .ops.shape import flatten, flip, movedim, roll, tile, unflatten

concat = concatenate = cat
moveaxis = movedim
# -- end ops-shape ---------------------------------------------------------------------------

# isort: split
# -- training: optimizers, data loading, save/load (issue 5) --------------------------------
from . import optim, utils
from .serialization import load, save

# -- autograd power features: transforms and graph pictures ------------------------------
from . import func, viz  # noqa: E402

# -- math ops (issue 3: elementwise, reductions, linear algebra) ---------------------------
from .ops.activation import erf, gelu, silu, softplus
from .ops.clamp import clamp, clip, maximum, minimum
from .ops.elementwise import (
    abs,  # noqa: A004 - PyTorch's name
    ceil,
    cos,
    expm1,
    floor,
    log1p,
    round,  # noqa: A004 - PyTorch's name
    rsqrt,
    sign,
    sin,
    tan,
)
from .ops.extrema import amax, amin, argmax, argmin, max, min  # noqa: A004
from .ops.einsum import einsum
from .ops.linalg import outer
from .ops.norm import norm
from .ops.solve import det, inv as inverse, slogdet
from .ops.scan import cumprod, cumsum, prod
from .ops.softmax import log_softmax, softmax
from .ops.statistics import logsumexp, std, var
from . import linalg  # noqa: E402 - tg.linalg namespace
# -- end math ops --------------------------------------------------------------------------

# -- graph cache (tapegrad.jit) --
from . import jit  # noqa: E402

# -- torch.special (issue 10) --
from . import special  # noqa: E402

# -- nn (layers, losses, init) --------------------------------------------------------
from . import nn  # noqa: E402
from . import distributed  # noqa: E402 - importable without mpi4py
from . import distributions  # noqa: E402

# -- torch namespace (issue 12): devices, dtypes, random, settings, compatibility modules ----
from . import random  # noqa: E402 - torch.random
from . import accelerator, amp, backends, cuda, onnx, profiler, testing  # noqa: E402
from .amp import autocast  # noqa: E402
from . import _dtypes  # noqa: E402
from ._device import Size, device  # noqa: E402
from ._settings import (  # noqa: E402
    are_deterministic_algorithms_enabled,
    compile,  # noqa: A004 - PyTorch's name
    get_deterministic_debug_mode,
    get_float32_matmul_precision,
    get_num_interop_threads,
    get_num_threads,
    is_deterministic_algorithms_warn_only_enabled,
    is_tensor,
    set_deterministic_debug_mode,
    set_float32_matmul_precision,
    set_num_interop_threads,
    set_num_threads,
    set_printoptions,
    use_deterministic_algorithms,
)
from .creation import randint_like, randperm  # noqa: E402
from .random import get_rng_state, initial_seed, seed, set_rng_state  # noqa: E402
from .sampling import bernoulli, multinomial, normal, poisson  # noqa: E402
from ._tensor_compat import is_floating_point, numel  # noqa: E402 - binds Tensor.stride ...

half = float16
short = int16
int = int32  # noqa: A001 - PyTorch's alias
# -- end torch namespace -------------------------------------------------------------------

# -- legacy tensor types and Tensor.type/new/is_cuda/is_cpu/is_sparse (issue 17) ----------
from .legacy import (  # noqa: E402
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
)

# -- sparse COO tensors (issue 17): tg.sparse namespace; tg.spmm is a registered op -------
from . import sparse  # noqa: E402
from .sparse import sparse_coo, sparse_coo_tensor, strided  # noqa: E402

float = float32  # noqa: A001 - PyTorch's alias
double = float64
long = int64
divide = true_divide = div
multiply = mul
subtract = sub
negative = neg

# -- issue 10 (second half): functions that are not tensor ops --
from .creation import logspace, scalar_tensor  # noqa: E402
from . import conversions as _conversions  # noqa: E402, F401 - Tensor.half, .short, .byte, .char
from .ops.tri import tril_indices, triu_indices  # noqa: E402
from .ops.decomp import pinverse  # noqa: E402
from .ops.decomp import _qr_method as qr  # noqa: E402  (torch.qr, deprecated there)
from .ops.decomp import _svd_method as svd  # noqa: E402  (torch.svd: U, S, V)
from . import fft  # noqa: E402 - tg.fft namespace

# -- issue 10 (part M): masked reductions, signal windows, numeric utilities --
from . import masked  # noqa: E402 - tg.masked namespace
from . import signal  # noqa: E402 - tg.signal.windows
from .signal.windows import (  # noqa: E402
    bartlett_window,
    blackman_window,
    hamming_window,
    hann_window,
    kaiser_window,
)

# -- issue 10 part V: layouts, resizing, native norms (ops register themselves) --
from .strided_creation import (  # noqa: E402
    channels_last,
    channels_last_3d,
    contiguous_format,
    empty_permuted,
    empty_strided,
    memory_format,
    preserve_format,
    resize_as_,
)
from .nn import _native_norm as _native_norm  # noqa: E402, F401 - native_layer_norm ...
from .ops.broadcasting import broadcast_shapes  # noqa: E402
from . import _tensor_info  # noqa: E402, F401 - Tensor.is_signed/nbytes/adjoint/... (issue 10)
from . import _batch_rules_view_twins  # noqa: E402, F401 - vmap of t_/transpose_/...

# -- issue 10 (complex tensors): dtypes and promotion; the ops register themselves --
from ._dtypes import complex64, complex128  # noqa: E402
from ._promotion import can_cast, promote_types, result_type  # noqa: E402
from ._tensor_info import is_nonzero, is_same_size  # noqa: E402
from . import _inplace_exports  # noqa: E402 - torch.abs_(x) & co.

globals().update({_n: getattr(_inplace_exports, _n) for _n in _inplace_exports.NAMES})
from . import _stft as _stft  # noqa: E402, F401 - tg.stft, Tensor.stft

cfloat = complex64
cdouble = complex128

# -- torch's top level, the rest (brief ns19): dtype and limits, constants, conversions,
# settings, Tensor methods as functions, and the functional ops torch exports a second time
from ._dtypes import uint16, uint32, uint64  # noqa: E402
from ._finfo import dtype, finfo, iinfo  # noqa: E402
from ._asarray import asarray, from_dlpack, frombuffer, range, to_dlpack  # noqa: E402, A004
from .sampling import binomial  # noqa: E402
from ._tensor_extras import TypedStorage, UntypedStorage, is_storage  # noqa: E402 - Tensor.data_ptr ...
from . import _torch_functions  # noqa: E402
from . import _torch_aliases  # noqa: E402 - Note [Top-level functional aliases]
from ._torch_flags import has_lapack, has_mkl, has_openmp, has_spectral  # noqa: E402
from ._torch_flags import layout, set_default_tensor_type  # noqa: E402
from ._torch_flags import AcceleratorError, OutOfMemoryError  # noqa: E402
from ._torch_flags import compiled_with_cxx11_abi, is_vulkan_available  # noqa: E402

globals().update({_n: getattr(_torch_functions, _n) for _n in _torch_functions.__all__})
globals().update(_torch_aliases.FUNCTIONS)

# -- torch's top level, round two (brief n20): device modules, compiler, autocast state ------
from . import compiler, cpu  # noqa: E402
from ._device_stubs import mps, mtia, xpu  # noqa: E402 - Note [Device modules without the device]
from . import _torch_autocast  # noqa: E402

globals().update({_n: getattr(_torch_autocast, _n) for _n in _torch_autocast.__all__})
from . import overrides  # noqa: E402 - Note [__torch_function__ without a dispatcher]
from ._torch_sym import sym_float, sym_int, sym_ite, sym_max, sym_min, sym_not  # noqa: E402
from ._torch_sym import sym_sqrt, sym_sum  # noqa: E402
from ._torch_sym import SymBool, SymFloat, SymInt  # noqa: E402
from .amp import GradScaler  # noqa: E402 - torch.GradScaler is torch.amp.GradScaler
from . import types  # noqa: E402 - torch.types: annotation aliases
from ._control_flow import cond, while_loop  # noqa: E402

cuda.OutOfMemoryError = OutOfMemoryError  # torch.cuda.OutOfMemoryError is torch's

# Note [Exported ops]
# Every registered op with ``function=True`` is ``tapegrad.<name>`` as in torch, so a new op
# needs no line here. Names bound above (hand-picked aliases, namespaces) take precedence.
from .ops._registry import OPS as _OPS  # noqa: E402
from .ops._registry import exported as _exported  # noqa: E402

_alias = None
for _name, _info in _OPS.items():
    if _info.function and globals().get(_name, _info.fn) is _info.fn:
        globals()[_name] = _exported(_info)
    for _alias in _info.aliases if _info.function else ():
        globals().setdefault(_alias, globals()[_name] if _info.function else _info.fn)
del _name, _info, _alias

from . import functional, return_types  # noqa: E402 - after the exported ops they name

# ATen recurrent functions (torch.lstm/gru/rnn_tanh/rnn_relu), torch.quasirandom (brief r20)
from .nn._rnn_aten import gru, lstm, rnn_relu, rnn_tanh  # noqa: E402
from . import quasirandom  # noqa: E402 - SciPy loads on the first SobolEngine

from ._malloc import tune as _tune_malloc  # noqa: E402

_tune_malloc()  # Note [Array memory and page faults]

from . import version  # noqa: E402 - torch.version
from .version import __version__  # noqa: E402

__all__ = [name for name in dir() if not name.startswith("_")] + ["bfloat16", "multiprocessing"]
__all__ += sorted(_dtypes._LAZY_FLOAT8)


def __getattr__(name):
    if name == "bfloat16":  # Note [Lazy bfloat16] in _dtypes.py
        return _dtypes.bfloat16
    if name in _dtypes._LAZY_FLOAT8:  # Note [float8 as torch] in _float8.py
        return getattr(_dtypes, name)
    if name == "multiprocessing":  # imported on first use: import tapegrad stays as fast
        import importlib

        return importlib.import_module(".multiprocessing", __name__)
    raise AttributeError(f"module 'tapegrad' has no attribute {name!r}")
