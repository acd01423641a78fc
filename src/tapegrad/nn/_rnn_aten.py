"""torch's ATen recurrent functions ``torch.lstm``, ``torch.gru``, ``torch.rnn_tanh`` and
``torch.rnn_relu``: what ``nn.LSTM``/``GRU``/``RNN`` call, with a flat parameter list.

Note [ATen recurrent overloads]
Each name has two overloads, told apart by their arguments as torch's binding does:
``(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)``
for a padded (L, N, H_in) batch and ``(data, batch_sizes, hx, params, has_biases,
num_layers, dropout, train, bidirectional)`` for a packed one (the PackedSequence's data and
batch sizes, ``hx`` already in its sorted order). ``params`` holds, per layer and direction,
``w_ih, w_hh[, b_ih, b_hh][, w_hr]``; an LSTM projects (``w_hr``) when h_0's last size
differs from c_0's, as ATen decides. The recurrence itself is ``rnn.run_layers``, the
modules' own loop. Returns a plain tuple: (output, h_n[, c_n]).
"""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .rnn import run_layers

__all__ = ["lstm", "gru", "rnn_tanh", "rnn_relu"]

_INPUT = ("input", "hx", "params", "has_biases", "num_layers", "dropout", "train",
          "bidirectional", "batch_first")  # fmt: skip
_DATA = ("data", "batch_sizes", "hx", "params", "has_biases", "num_layers", "dropout",
         "train", "bidirectional")  # fmt: skip


def _bind(op, args, kwargs, packed):
    names = _DATA if packed else _INPUT
    if len(args) > len(names):
        raise TypeError(f"{op}() takes {len(names)} arguments but {len(args)} were given")
    bound = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names or k in bound:
            raise TypeError(f"{op}() got an unexpected or repeated argument '{k}'")
        bound[k] = v
    missing = [n for n in names if n not in bound]
    if missing:
        raise TypeError(f"{op}() missing required arguments: {', '.join(missing)}")
    return bound


def _call(mode, op, args, kwargs):
    lstm = mode == "LSTM"
    # the packed overload's second argument is the batch_sizes tensor; the padded one's is
    # hx, a tensor too for GRU/RNN: then the third (params list vs hx tensor) decides; by
    # keyword, batch_sizes names the packed one
    second = args[1] if len(args) > 1 else None
    third = args[2] if len(args) > 2 else kwargs.get("hx", kwargs.get("params"))
    packed = "batch_sizes" in kwargs or (
        isinstance(second, Tensor) and (lstm or isinstance(third, Tensor))
    )
    b = _bind(op, args, kwargs, packed)
    hx = b["hx"]
    if lstm:
        if not isinstance(hx, (list, tuple)) or len(hx) != 2:
            raise RuntimeError("lstm expects two hidden states")
        h0, c0 = hx
        proj = h0.shape[-1] != c0.shape[-1]
    else:
        if not isinstance(hx, Tensor):
            raise TypeError(f"{op}(): argument 'hx' must be Tensor, not {type(hx).__name__}")
        h0, c0, proj = hx, None, False
    params = list(b["params"])
    num_layers, dirs = int(b["num_layers"]), 2 if b["bidirectional"] else 1
    per = 2 + 2 * bool(b["has_biases"]) + proj
    if len(params) != per * num_layers * dirs:
        raise RuntimeError("got an incorrect number of RNN parameters")

    def weights(layer, d):
        group = params[(layer * dirs + d) * per :][:per]
        w_ih, w_hh = group[:2]
        b_ih, b_hh = group[2:4] if b["has_biases"] else (None, None)
        return w_ih, w_hh, b_ih, b_hh, (group[-1] if proj else None)

    if packed:
        data = b["data"]
        sizes = b["batch_sizes"]
        batch_sizes = [int(s) for s in np.asarray(getattr(sizes, "_data", sizes)).ravel()]
    else:
        x = b["input"]
        if x.ndim != 3:  # torch's error type: its kernel indexes dim 2
            raise IndexError(
                f"{op}: expected a 3-D input (L, N, H_in), got {x.ndim}-D (Dimension out of "
                f"range (expected to be in range of [-{x.ndim}, {x.ndim - 1}], but got 2))"
            )
        if b["batch_first"]:
            x = x.transpose(0, 1)
        steps, n = x.shape[0], x.shape[1]
        data = x.reshape((steps * n, x.shape[2]))
        batch_sizes = [n] * steps
    _check(op, data, h0, c0, params, num_layers * dirs, batch_sizes[0] if batch_sizes else 0)
    out, h_n, c_n = run_layers(
        mode, data, batch_sizes, h0, c0, weights, num_layers, dirs,
        float(b["dropout"]), bool(b["train"]),
    )  # fmt: skip
    if not packed:
        out = out.reshape((len(batch_sizes), n, out.shape[-1]))
        if b["batch_first"]:
            out = out.transpose(0, 1)
    return (out, h_n, c_n) if lstm else (out, h_n)


def _check(op, data, h0, c0, params, layers, n):
    w = params[0]
    if data._data.dtype != w._data.dtype:
        raise RuntimeError(
            f"{op}: input and weights must have the same dtype, but got "
            f"{data._data.dtype} and {w._data.dtype}"
        )
    if data.shape[-1] != w.shape[-1]:
        raise RuntimeError(
            f"{op}: input size {data.shape[-1]} does not match weight_ih_l0's "
            f"{tuple(w.shape)} (expected {w.shape[-1]})"
        )
    for what, t in (("hx", h0), ("cx", c0)):
        if t is not None and (t.ndim != 3 or t.shape[0] != layers or t.shape[1] != n):
            raise RuntimeError(
                f"{op}: expected {what} of shape ({layers}, {n}, H), got {list(t.shape)}"
            )


def lstm(*args, **kwargs):
    """``torch.lstm``: see Note [ATen recurrent overloads]; returns (output, h_n, c_n)."""
    return _call("LSTM", "lstm", args, kwargs)


def gru(*args, **kwargs):
    """``torch.gru``: see Note [ATen recurrent overloads]; returns (output, h_n)."""
    return _call("GRU", "gru", args, kwargs)


def rnn_tanh(*args, **kwargs):
    """``torch.rnn_tanh``: see Note [ATen recurrent overloads]; returns (output, h_n)."""
    return _call("RNN_TANH", "rnn_tanh", args, kwargs)


def rnn_relu(*args, **kwargs):
    """``torch.rnn_relu``: see Note [ATen recurrent overloads]; returns (output, h_n)."""
    return _call("RNN_RELU", "rnn_relu", args, kwargs)
