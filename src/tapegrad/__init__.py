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
    floor_divide,
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

# -- utils (checkpointing) --
from . import utils

float = float32  # noqa: A001 - PyTorch's alias
double = float64
long = int64
divide = true_divide = div
multiply = mul
subtract = sub
negative = neg

__version__ = "0.1.0"

__all__ = [name for name in dir() if not name.startswith("_")]
