"""RNN, LSTM and GRU (multi-layer, bidirectional, packed sequences) and their cells, with
PyTorch's parameter names (``weight_ih_l0``, ``bias_hh_l1_reverse``, ``weight_hr_l0``...),
shapes and initialisation U(±1/√hidden_size).

A layer projects the inputs of every time step with one GEMM, then runs one cell step
per time step (``_rnn_ops``). Padded and packed inputs take the same path: a padded
batch is a packed one whose batch size never shrinks.
"""

from __future__ import annotations

import math

import numpy as np

from ..ops.joining import cat, split, stack
from ..tensor import Tensor
from . import functional as F
from . import init
from ._fused import linear
from ._rnn_ops import (
    gru_cell,
    gru_pointwise,
    lstm_cell,
    lstm_pointwise,
    rnn_relu_cell,
    rnn_tanh_cell,
)
from .linear import empty_parameter
from .module import Module
from .utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


class RNNBase(Module):
    """Shared by RNN, LSTM and GRU: parameters per layer and direction, and the loop."""

    def __init__(
        self,
        mode,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        proj_size=0,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if (
            not isinstance(dropout, (int, float))
            or not 0 <= dropout <= 1
            or isinstance(dropout, bool)
        ):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of "
                "an element being zeroed"
            )
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError(f"hidden_size must be a positive integer, got {hidden_size!r}")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError(f"num_layers must be a positive integer, got {num_layers!r}")
        if proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections"
            )
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [
                    ("weight_ih", (gate_size, layer_input)),
                    ("weight_hh", (gate_size, real_hidden)),
                ]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                names = []
                for kind, shape in shapes:
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(self, name, empty_parameter(shape, dtype, device))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self):
        """A no-op kept for compatibility (torch packs cuDNN weights here)."""

    @property
    def _flat_weights(self):
        """The parameters in ``torch.lstm``'s ``params`` order, as torch's attribute."""
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def _weights(self, layer, direction):
        """(w_ih, w_hh, b_ih, b_hh, w_hr) of one layer and direction (absent ones None)."""
        suffix = "_reverse" if direction == 1 else ""
        get = self._parameters.get
        return tuple(
            get(f"{kind}_l{layer}{suffix}")
            for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")
        )

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- forward ---------------------------------------------------------------------------

    def forward(self, input, hx=None):
        """Run the layers over ``input`` (L, N, H_in) ((N, L, H_in) with ``batch_first``,
        (L, H_in) unbatched, or a PackedSequence).

        Returns ``(output, h_n)`` (LSTM: ``(output, (h_n, c_n))``); output (L, N, D·H_out)
        (or packed), h_n (D·num_layers, N, H_out).
        """
        lstm = self.mode == "LSTM"
        packed = isinstance(input, PackedSequence)
        name = type(self).__name__
        if packed:
            data, batch_sizes = input.data, [int(b) for b in input.batch_sizes._data]
            if data.ndim != 2:  # torch's check of packed data (L·N, H_in)
                raise RuntimeError(f"input must have 2 dimensions, got {data.ndim}")
            n = batch_sizes[0]
            batched = True
            perm = input.sorted_indices
        else:
            batched = input.ndim == 3
            if input.ndim not in (2, 3):
                raise ValueError(
                    f"{name}: Expected input to be 2D or 3D, got {input.ndim}D tensor instead"
                )
            x = input if batched else input.unsqueeze(1)
            if self.batch_first and batched:
                x = x.transpose(0, 1)
            steps, n = x.shape[0], x.shape[1]
            data = x.reshape((steps * n, x.shape[2]))
            batch_sizes = [n] * steps
            perm = None
        w_dtype, x_dtype = self.weight_ih_l0._data.dtype, data._data.dtype
        if x_dtype != w_dtype:
            raise ValueError(
                f"RNN input dtype ({x_dtype}) does not match weight dtype ({w_dtype}). "
                f"Convert input: input.to({w_dtype}), or convert model: model.to({x_dtype})"
            )
        if data.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                f"got {data.shape[-1]}"
            )
        dirs = 2 if self.bidirectional else 1
        h_out = self.proj_size if self.proj_size > 0 else self.hidden_size
        h0, c0 = self._initial_state(hx, lstm, batched, n, dirs, h_out, data, perm)
        data, h_n, c_n = run_layers(
            self.mode, data, batch_sizes, h0, c0, self._weights, self.num_layers, dirs,
            self.dropout, self.training,
        )  # fmt: skip
        if perm is not None:
            unperm = input.unsorted_indices
            h_n = h_n.index_select(1, unperm)
            if lstm:
                c_n = c_n.index_select(1, unperm)
        if packed:
            output = input._replace(data=data)
        else:
            output = data.reshape((len(batch_sizes), n, data.shape[-1]))
            if self.batch_first and batched:
                output = output.transpose(0, 1)
            if not batched:
                output = output.squeeze(1)
                h_n = h_n.squeeze(1)
                if lstm:
                    c_n = c_n.squeeze(1)
        return output, ((h_n, c_n) if lstm else h_n)

    def _initial_state(self, hx, lstm, batched, n, dirs, h_out, data, perm):
        layers = self.num_layers * dirs
        dtype = data._data.dtype
        name = type(self).__name__
        if hx is None:
            h0 = Tensor._wrap(np.zeros((layers, n, h_out), dtype))
            c0 = Tensor._wrap(np.zeros((layers, n, self.hidden_size), dtype)) if lstm else None
            return h0, c0
        if lstm:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise RuntimeError(f"{name}: hx must be a tuple (h_0, c_0)")
            h0, c0 = hx
        else:
            if isinstance(hx, (tuple, list)):
                raise RuntimeError(f"{name}: hx must be a Tensor, not a tuple")
            h0, c0 = hx, None
        states = [("h_0" if lstm else "hx", h0, h_out)]
        if lstm:
            states.append(("c_0", c0, self.hidden_size))
        want_dims = 3 if batched else 2
        if any(t.ndim != want_dims for _, t, _ in states):  # torch's words
            kind = f"For {'batched' if batched else 'unbatched'} {want_dims}-D input"
            if lstm:
                got = f"({h0.ndim}-D, {c0.ndim}-D) tensors"
                raise RuntimeError(f"{kind}, hx and cx should also be {want_dims}-D but got {got}")
            got = f"{h0.ndim}-D tensor"
            raise RuntimeError(f"{kind}, hx should also be {want_dims}-D but got {got}")
        out = []
        for what, t, size in states:
            if not batched:
                t = t.unsqueeze(1)
            expected = (layers, n, size)
            if tuple(t.shape) != expected:
                raise RuntimeError(
                    f"Expected hidden size {expected}, got {list(t.shape)}"
                    if what != "c_0"
                    else f"Expected hidden[1] size {expected}, got {list(t.shape)}"
                )
            if t._data.dtype != dtype:
                raise RuntimeError(
                    f"{name}: input and {what} must have the same dtype, got {dtype} and "
                    f"{t._data.dtype}"
                )
            if perm is not None:
                t = t.index_select(1, perm)
            out.append(t)
        return out[0], (out[1] if lstm else None)


def run_layers(mode, data, batch_sizes, h0, c0, weights, num_layers, dirs, dropout, train):
    """Every layer and direction over packed ``data`` (rows of each time step contiguous,
    ``batch_sizes`` non-increasing); ``h0``/``c0`` (num_layers·dirs, N, H) in that sorted
    batch order, ``weights(layer, direction)`` -> (w_ih, w_hh, b_ih, b_hh, w_hr).

    Returns (output data, h_n, c_n); c_n is None unless ``mode == "LSTM"``. Shared by the
    modules and the ATen functions ``torch.lstm``/``gru``/``rnn_tanh``/``rnn_relu``.
    """
    hs, cs = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            c = None if c0 is None else c0[k]
            out, h, c = _run(mode, data, batch_sizes, h0[k], c, weights(layer, d), d)
            outs.append(out)
            hs.append(h)
            cs.append(c)
        data = outs[0] if dirs == 1 else cat(outs, -1)
        if dropout and train and layer < num_layers - 1:
            data = F.dropout(data, dropout, True)
    return data, stack(hs, 0), (stack(cs, 0) if mode == "LSTM" else None)


def _run(mode, data, batch_sizes, h, c, weights, direction):
    """One layer in one direction over packed ``data``; returns (outputs, h_n, c_n).
    ``weights`` is (w_ih, w_hh, b_ih, b_hh, w_hr), absent ones None."""
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    gx_all = linear(data, w_ih, b_ih)  # every time step's input projection: one GEMM
    w_hh_t = w_hh.mT
    if b_hh is not None and mode != "GRU":  # GRU's b_hn sits inside r·(W_hn h + b_hn)
        gx_all = gx_all + b_hh
        b_hh = None
    # one split Node (its backward is one cat), not a slice per step
    gxs = split(gx_all, batch_sizes, 0) if len(batch_sizes) > 1 else (gx_all,)
    steps = range(len(batch_sizes))
    if direction == 1:
        steps = reversed(steps)
    outs = []
    finished_h, finished_c = [], []
    full_h, full_c = h, c
    cur = batch_sizes[0] if direction == 0 else batch_sizes[-1]
    h = h[:cur] if cur != h.shape[0] else h
    if c is not None and cur != c.shape[0]:
        c = c[:cur]
    for t in steps:
        bs = batch_sizes[t]
        if bs != cur:
            if direction == 0:  # rows bs..cur ended at the previous step
                finished_h.append(h[bs:cur])
                h = h[:bs]
                if c is not None:
                    finished_c.append(c[bs:cur])
                    c = c[:bs]
            else:  # rows cur..bs start here, from the initial state
                h = cat([h, full_h[cur:bs]], 0)
                if c is not None:
                    c = cat([c, full_c[cur:bs]], 0)
            cur = bs
        gx = gxs[t]
        if mode == "LSTM":
            h, c = lstm_pointwise(gx, h @ w_hh_t, c)
            if w_hr is not None:
                h = linear(h, w_hr)
        elif mode == "GRU":
            gh = h @ w_hh_t
            h = gru_pointwise(gx, gh if b_hh is None else gh + b_hh, h)
        elif mode == "RNN_TANH":
            h = (gx + h @ w_hh_t).tanh()
        else:
            h = (gx + h @ w_hh_t).relu()
        outs.append(h)
    if direction == 1:
        outs.reverse()
    out = outs[0] if len(outs) == 1 else cat(outs, 0)
    if finished_h:
        h = cat([h] + finished_h[::-1], 0)
        if c is not None:
            c = cat([c] + finished_c[::-1], 0)
    return out, h, c


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ihᵀ + b_ih + h_(t−1) W_hhᵀ + b_hh) (or relu).

    >>> import tapegrad as tg
    >>> out, h = tg.nn.RNN(4, 8, num_layers=2)(tg.randn(5, 3, 4))
    >>> out.shape, h.shape
    (tapegrad.Size([5, 3, 8]), tapegrad.Size([2, 3, 8]))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", *args, **kw):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        self.nonlinearity = nonlinearity
        mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(mode, input_size, hidden_size, num_layers, *args, **kw)


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o), with an optional projection
    ``proj_size`` of the hidden state (``weight_hr_l{k}``).

    >>> import tapegrad as tg
    >>> out, (h, c) = tg.nn.LSTM(4, 8, batch_first=True, bidirectional=True)(tg.randn(3, 5, 4))
    >>> out.shape, h.shape, c.shape
    (tapegrad.Size([3, 5, 16]), tapegrad.Size([2, 3, 8]), tapegrad.Size([2, 3, 8]))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, *args, **kw):
        super().__init__("LSTM", input_size, hidden_size, num_layers, *args, **kw)


class GRU(RNNBase):
    """Gated recurrent unit (gates r, z, n).

    >>> import tapegrad as tg
    >>> out, h = tg.nn.GRU(4, 8)(tg.randn(5, 4))
    >>> out.shape, h.shape
    (tapegrad.Size([5, 8]), tapegrad.Size([1, 8]))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, *args, **kw):
        super().__init__("GRU", input_size, hidden_size, num_layers, *args, **kw)


# -- cells ---------------------------------------------------------------------------------


class RNNCellBase(Module):
    """Shared by the cells: ``weight_ih`` (G·H, in), ``weight_hh`` (G·H, H), biases."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = empty_parameter((num_chunks * hidden_size, input_size), dtype, device)
        self.weight_hh = empty_parameter((num_chunks * hidden_size, hidden_size), dtype, device)
        if bias:
            self.bias_ih = empty_parameter((num_chunks * hidden_size,), dtype, device)
            self.bias_hh = empty_parameter((num_chunks * hidden_size,), dtype, device)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prepare(self, input, hx, n_states):
        name = type(self).__name__
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if hx is not None:
            for t in hx if isinstance(hx, tuple) else (hx,):
                if t.ndim != input.ndim:
                    raise RuntimeError(
                        f"{name}: Expected hidden to be {input.ndim}D, got {t.ndim}D instead"
                    )
        batched = input.ndim == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            z = np.zeros((input.shape[0], self.hidden_size), input.dtype)  # vmap: no ._data
            hx = tuple(Tensor._wrap(z) for _ in range(n_states))
        elif not batched:
            hx = tuple(t.unsqueeze(0) for t in (hx if isinstance(hx, tuple) else (hx,)))
        elif not isinstance(hx, tuple):
            hx = (hx,)
        return input, hx, batched


class RNNCell(RNNCellBase):
    """One Elman RNN step: h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh) (or relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):  # fmt: skip
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        cell = rnn_tanh_cell if self.nonlinearity == "tanh" else rnn_relu_cell
        out = cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; ``forward(input, (h, c))`` returns ``(h', c')``."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        x, (h, c), batched = self._prepare(input, hx, 2)
        h, c = lstm_cell(x, (h, c), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step; returns h'."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        out = gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)
