"""Max pooling's input gradient as a function of the input too.

Note [Max-pool gradient takes the input]
PyTorch's max-pool backward (``max_pool2d_with_indices_backward(grad, self, ...)``)
takes the pooled input ``self`` as an argument, with derivative zero
(derivatives.yaml: ``self: zeros_like(self)``). So under ``create_graph=True`` the
input gradient requires grad even when the upstream gradient does not, and its
gradient with respect to the input is zeros, not None. The scatter Nodes of the
2-D kernels list ``x`` as a second parent and return :func:`zero_input_grad`; the
N-d pools (gather by flat index) route through :func:`link_input`, an identity on
the forward whose backward makes the incoming gradient depend on ``x``. Both cost
nothing at first order: with grad mode off in backward no Node is recorded.
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import batched_shape, make_result
from ..grad_mode import STATE
from ..tensor import Tensor


def zero_input_grad(x):
    """The zero gradient of a max-pool backward with respect to its input (None: no input)."""
    if x is None or not x._rg:
        return None
    return Tensor._wrap(np.zeros(batched_shape(x._data.shape), x._data.dtype))


def _depends_on(gx, x):
    """``gx`` as a Node with parents (gx, x): d/dgx = identity, d/dx = 0."""

    def backward(v):
        return v, zero_input_grad(x)

    return make_result(gx._data, (gx, x), backward, "MaxPoolBackwardBackward")


def link_input(x):
    """``x`` itself (a new Node when ``x`` requires grad) whose backward returns the incoming
    gradient as a function of ``x`` too under create_graph (the Note above)."""
    if not (STATE.enabled and x._rg):
        return x

    def backward(g):
        return (_depends_on(g, x) if STATE.enabled else g,)

    return make_result(x._data, (x,), backward, "MaxPoolInputBackward")
