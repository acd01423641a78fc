"""Differences from torch found while testing list n (twelfth session), each fixed here and
checked against torch: value, dtype, device, error type.

Bugs fixed:
- ``*_like`` factories of a meta tensor gave a CPU tensor (torch: the input's device), and
  ``zeros``/``ones``/``empty``/``full``/``rand...`` with ``device="meta"`` a CPU one; so
  pruning a meta module gave a CPU mask.
- ``UninitializedParameter(requires_grad=True).copy_`` skipped torch's leaf check.
- ``multi_margin_loss`` accepted a class weight that requires grad (torch: RuntimeError).
- ``nn.Module`` had no ``share_memory()``; ``Tensor.share_memory_`` of a meta tensor
  passed (torch: RuntimeError).
- ``swa_utils.update_bn`` of a meta model raised NumPy's ValueError (torch: RuntimeError,
  from the cumulative average's count).
- ``layer_norm`` over a normalized shape with a 0 emitted "Mean of empty slice".
- ``ctc_loss`` took bare int / NumPy lengths and a Tensor mixed with a list (TypeError in
  torch).
- ``lstm_cell`` / ``gru_cell`` / ``rnn_tanh_cell`` / ``rnn_relu_cell`` took a 1-D input and
  a hidden state of another batch size (torch: IndexError, RuntimeError); the cell modules
  still take unbatched input, as torch's.
"""

import warnings

import numpy as np
import pytest

import tapegrad as tg


def _outcome(fn):
    """``("ok", result)`` or ``("error", exception type)``."""
    try:
        return "ok", fn()
    except Exception as exc:  # noqa: BLE001 - the type is compared with torch's
        return "error", type(exc)


def _same_error(fn, torch_mod):
    """``fn(lib)`` raises the same exception type in tapegrad as in torch; returns it."""
    theirs = _outcome(lambda: fn(torch_mod))
    ours = _outcome(lambda: fn(tg))
    assert theirs[0] == "error", theirs
    assert ours == theirs, (ours, theirs)
    return ours[1]


# -- meta tensors: *_like and the factories ------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda m, x: m.ones_like(x),
        lambda m, x: m.zeros_like(x),
        lambda m, x: m.empty_like(x),
        lambda m, x: m.full_like(x, 2.0),
        lambda m, x: m.rand_like(x),
        # torch's randn_like on meta costs 1.5 s of one-time set-up: its rand_like (the
        # same device rule) stands for it
        lambda m, x: m.rand_like(x) if m is not tg else m.randn_like(x),
        lambda m, x: m.randint_like(x, 5),
        lambda m, x: m.ones_like(x, dtype=m.float64),
    ],
    ids=["ones", "zeros", "empty", "full", "rand", "randn", "randint", "ones-f64"],
)
def test_like_factories_keep_a_meta_device(make, torch_mod):
    """creation.py ``_like_device`` and ``_on_device``'s meta branch: a meta input gives a
    meta result of its shape and dtype (torch's ``*_like`` default device)."""
    results = [make(m, m.ones(2, 3).to("meta")) for m in (torch_mod, tg)]
    theirs, ours = results
    assert str(ours.device) == str(theirs.device) == "meta"
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


def test_like_factories_explicit_device_wins(torch_mod):
    """creation.py ``_like_device``: ``device=`` overrides the input's, both ways."""
    for m in (torch_mod, tg):
        meta, cpu = m.ones(2).to("meta"), m.ones(2)
        assert str(m.zeros_like(meta, device="cpu").device) == "cpu"
        assert str(m.full_like(cpu, 3, device="meta").device) == "meta"
        assert str(m.ones_like(cpu).device) == "cpu"
    np.testing.assert_array_equal(
        tg.zeros_like(tg.ones(2).to("meta"), device="cpu").numpy(), np.zeros(2, np.float32)
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.zeros(2, 3, device="meta"),
        lambda m: m.ones(2, 3, device="meta"),
        lambda m: m.empty(2, 3, device="meta"),
        lambda m: m.full((2, 3), 1.5, device="meta"),
        lambda m: m.rand(2, 3, device="meta"),
        lambda m: m.randn(2, 3, device="meta"),
    ],
    ids=["zeros", "ones", "empty", "full", "rand", "randn"],
)
def test_factories_on_the_meta_device(make, torch_mod):
    """creation.py zeros/ones/empty/full (through ``_on_device``): ``device="meta"`` gives a
    meta tensor, whose values cannot be read (torch's NotImplementedError)."""
    theirs, ours = make(torch_mod), make(tg)
    assert str(ours.device) == str(theirs.device) == "meta"
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert _same_error(lambda m: (theirs if m is torch_mod else ours).tolist(), torch_mod)


def test_pruning_a_meta_module_gives_a_meta_mask(torch_mod):
    """creation.py ``_like_device`` (the pruning's default mask is ``ones_like``): the mask
    and the pruned weight of a meta module are on the meta device, as torch's."""
    import torch.nn.utils.prune  # noqa: F401, PLC0415 - torch does not import it itself

    for m in (torch_mod, tg):
        lin = m.nn.Linear(3, 2).to("meta")
        m.nn.utils.prune.identity(lin, "weight")
        assert str(lin.weight_mask.device) == "meta"
        assert str(lin.weight.device) == "meta"
        assert tuple(lin.weight_mask.shape) == (2, 3)


# -- pruning method never applied ----------------------------------------------------------


@pytest.mark.parametrize("call", ["apply_mask", "remove", "hook"])
def test_prune_method_never_applied_has_no_tensor_name(call, torch_mod):
    """nn/utils/_prune_base.py: a method never applied has no ``_tensor_name`` at all
    (torch's AttributeError, not the AssertionError of one set to None)."""
    import torch.nn.utils.prune  # noqa: F401, PLC0415

    def run(m):
        method, lin = m.nn.utils.prune.L1Unstructured(amount=0.5), m.nn.Linear(2, 2)
        if call == "hook":
            return method(lin, None)
        return getattr(method, call)(lin)

    assert _same_error(run, torch_mod) is AttributeError


# -- UninitializedParameter.copy_ ----------------------------------------------------------


@pytest.mark.parametrize("shape", [(0,), (), (2,)])
def test_uninitialized_parameter_copy_is_an_in_place_op_on_a_leaf(shape, torch_mod):
    """nn/_uninitialized.py copy_: with requires_grad and grad mode on, torch's leaf check
    comes first, whatever the source's shape."""
    ours = _same_error(
        lambda m: m.nn.parameter.UninitializedParameter(requires_grad=True).copy_(m.ones(shape)),
        torch_mod,
    )
    assert ours is RuntimeError
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        tg.nn.parameter.UninitializedParameter(requires_grad=True).copy_(tg.ones(shape))


def test_uninitialized_parameter_copy_without_grad_reaches_the_shape_check(torch_mod):
    """nn/_uninitialized.py copy_: no leaf error without requires_grad or under no_grad:
    an empty source is copied, a (2,) one fails the shape check (RuntimeError, as torch)."""
    for m in (torch_mod, tg):
        UP = m.nn.parameter.UninitializedParameter
        for rg, ctx in ((False, m.enable_grad), (True, m.no_grad)):
            with ctx():
                p = UP(requires_grad=rg)
                assert p.copy_(m.ones(0)) is p
                with pytest.raises(RuntimeError) as info:
                    UP(requires_grad=rg).copy_(m.ones(2))
            assert "leaf" not in str(info.value)


# -- multi_margin_loss weight --------------------------------------------------------------


def _mml(m, weight_rg, module=False):
    x = m.tensor([[0.1, 0.9, -0.3, 0.4], [1.2, -0.5, 0.3, 0.0], [0.2, 0.2, 0.7, -1.0]])
    t = m.tensor([1, 0, 3])
    w = m.tensor([1.0, 0.5, 2.0, 1.5], requires_grad=weight_rg)
    if module:
        return m.nn.MultiMarginLoss(weight=w)(x, t)
    return m.nn.functional.multi_margin_loss(x, t, weight=w)


@pytest.mark.parametrize("module", [False, True])
def test_multi_margin_loss_refuses_a_weight_that_requires_grad(module, torch_mod):
    """nn/_losses_margin.py multi_margin_loss: torch's kernel has no derivative for the
    weight (RuntimeError, with grad mode on)."""
    assert _same_error(lambda m: _mml(m, True, module), torch_mod) is RuntimeError
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument"):
        _mml(tg, True, module)


def test_multi_margin_loss_weight_that_requires_grad_under_no_grad(torch_mod):
    """nn/_losses_margin.py multi_margin_loss: under no_grad the weight is used (torch's
    value), and a weight without requires_grad works with grad mode on."""
    with torch_mod.no_grad():
        want = _mml(torch_mod, True).item()
    with tg.no_grad():
        got = _mml(tg, True)
    assert got.dtype == tg.float32
    np.testing.assert_allclose(got.item(), want, rtol=1e-6)
    np.testing.assert_allclose(_mml(tg, False).item(), _mml(torch_mod, False).item(), rtol=1e-6)


# -- Module.share_memory -------------------------------------------------------------------


def test_module_share_memory_returns_itself(torch_mod):
    """nn/module.py share_memory: returns the module, parameters and buffers unchanged."""
    for m in (torch_mod, tg):
        bn = m.nn.BatchNorm1d(2)
        weight, mean = bn.weight, bn.running_mean
        assert bn.share_memory() is bn
        assert bn.weight is weight and bn.running_mean is mean


@pytest.mark.parametrize("kind", ["lazy", "meta"])
def test_module_share_memory_refusals(kind, torch_mod):
    """nn/module.py share_memory (each tensor's share_memory_), _tensor_compat.py
    share_memory_: an uninitialized parameter or a meta tensor raises RuntimeError."""

    def run(m):
        net = m.nn.LazyLinear(3) if kind == "lazy" else m.nn.Linear(2, 2).to("meta")
        return net.share_memory()

    assert _same_error(run, torch_mod) is RuntimeError
    assert _same_error(lambda m: m.ones(2).to("meta").share_memory_(), torch_mod)
    assert tg.ones(2).share_memory_() is not None


# -- update_bn on meta ---------------------------------------------------------------------


@pytest.mark.parametrize("data_device", ["meta", "cpu"])
def test_update_bn_of_a_meta_model(data_device, torch_mod):
    """nn/normalization.py reset_running_stats (meta: nothing to reset) and the forward's
    cumulative average of a meta count (torch's float() of it: RuntimeError)."""

    def run(m):
        net = m.nn.Sequential(m.nn.Linear(3, 3), m.nn.BatchNorm1d(3)).to("meta")
        m.optim.swa_utils.update_bn([m.ones(4, 3).to(data_device)], net)

    assert _same_error(run, torch_mod) is RuntimeError


def test_meta_batch_norm_reset_running_stats(torch_mod):
    """nn/normalization.py reset_running_stats on meta buffers: no error, still meta."""
    for m in (torch_mod, tg):
        bn = m.nn.BatchNorm1d(3).to("meta")
        bn.reset_running_stats()
        assert str(bn.running_mean.device) == str(bn.running_var.device) == "meta"
    bn = tg.nn.BatchNorm1d(2)
    bn.running_mean.fill_(3.0)
    bn.running_var.fill_(5.0)
    bn.reset_running_stats()
    np.testing.assert_array_equal(bn.running_mean.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(bn.running_var.numpy(), [1.0, 1.0])


# -- layer_norm over an empty normalized shape ---------------------------------------------


@pytest.mark.parametrize(
    ("shape", "normalized"),
    [((2, 0), (0,)), ((2, 3, 0), (3, 0)), ((2, 0), (2, 0)), ((0, 3), (3,))],
)
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm_over_an_empty_shape_is_silent(shape, normalized, affine, torch_mod):
    """nn/_norm_ops.py ``_trailing_mean``: the mean of no element is NaN without NumPy's
    "Mean of empty slice" warning; outputs and gradients as torch's."""
    results = []
    for m in (torch_mod, tg):
        x = m.ones(shape, requires_grad=True)
        w = m.full(normalized, 2.0, requires_grad=True) if affine else None
        b = m.zeros(normalized, requires_grad=True) if affine else None
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y = m.nn.functional.layer_norm(x, normalized, w, b)
            (y * 1.0).sum().backward()
        grads = [x.grad] + ([w.grad, b.grad] if affine else [])
        results.append((y, grads))
    (y_t, g_t), (y_g, g_g) = results
    assert tuple(y_g.shape) == tuple(y_t.shape) and y_g.dtype == tg.float32
    for got, want in zip(g_g, g_t):
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy())


def test_trailing_mean_of_nothing_is_nan():
    """nn/_norm_ops.py ``_trailing_mean``: NaN of the input's dtype, per leading index."""
    from tapegrad.nn._norm_ops import _trailing_mean  # noqa: PLC0415

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = _trailing_mean(np.ones((2, 0), np.float32), 1)
    assert out.shape == (2, 1) and out.dtype == np.float32 and np.isnan(out).all()


# -- ctc_loss lengths ----------------------------------------------------------------------


def _ctc(m, il, tl, batched=False):
    rng = np.random.default_rng(0)
    lp = m.tensor(rng.standard_normal((5, 4))).log_softmax(-1)
    targets = m.tensor([1, 2])
    if batched:
        lp, targets = lp[:, None], targets[None]
    conv = {"t": m.tensor, "n": np.array}
    il = conv[il[0]](il[1]) if isinstance(il, tuple) and il[0] in conv else il
    tl = conv[tl[0]](tl[1]) if isinstance(tl, tuple) and tl[0] in conv else tl
    return m.nn.functional.ctc_loss(lp, targets, il, tl)


_BAD_LENGTHS = {
    "ints": (5, 2),
    "numpy-int": (np.int64(5), 2),
    "bool": (True, 2),
    "float-list": ([5.0], [2]),
    "tuple-and-int": ((5,), 2),
    "bool-list": ([True], [2]),
    "tensor-and-list": (("t", [5]), [2]),
    "list-and-tensor": ([5], ("t", [2])),
    "arrays": (("n", [5]), ("n", [2])),
    "none": (None, [2]),
}


@pytest.mark.parametrize("case", list(_BAD_LENGTHS))
@pytest.mark.parametrize("batched", [False, True])
def test_ctc_loss_length_types(case, batched, torch_mod):
    """nn/_ctc.py ``_check_length_types``: lengths are both Tensors or both sequences of
    ints, else torch's TypeError."""
    il, tl = _BAD_LENGTHS[case]
    assert _same_error(lambda m: _ctc(m, il, tl, batched), torch_mod) is TypeError


@pytest.mark.parametrize(
    ("il", "tl"),
    [
        ([5], [2]),
        ((5,), [2]),
        ([np.int64(5)], (2,)),
        (("t", [5]), ("t", [2])),
        (("t", 5), ("t", 2)),
    ],
    ids=["lists", "tuple-list", "numpy-ints", "tensors", "0d-tensors"],
)
def test_ctc_loss_accepted_lengths(il, tl, torch_mod):
    """nn/_ctc.py ``_check_length_types`` / ``_is_int``: the accepted forms give torch's
    loss (0-d int tensors as list elements too)."""
    want = _ctc(torch_mod, il, tl).item()
    got = _ctc(tg, il, tl)
    assert got.dtype == tg.float64
    np.testing.assert_allclose(got.item(), want, rtol=1e-10)


# -- RNN cell functions: batches only ------------------------------------------------------

_H, _I = 3, 2
_GATES = {"rnn_tanh_cell": 1, "rnn_relu_cell": 1, "gru_cell": 3, "lstm_cell": 4}


def _cell_call(m, op, x_shape, h_shape, c_shape=None):
    g = _GATES[op]
    rng = np.random.default_rng(3)
    w = [m.tensor(rng.standard_normal(s)) for s in ((g * _H, _I), (g * _H, _H), (g * _H,))]
    x, h = m.ones(x_shape, dtype=m.float64), m.ones(h_shape, dtype=m.float64) * 0.5
    if op == "lstm_cell":
        c = m.ones(c_shape or h_shape, dtype=m.float64) * 0.25
        return getattr(m, op)(x, (h, c), w[0], w[1], w[2], w[2])
    return getattr(m, op)(x, h, w[0], w[1], w[2], w[2])


_CELL_ERRORS = {
    "1d-input": ((_I,), (_H,), IndexError),
    "1d-input-2d-hidden": ((_I,), (1, _H), IndexError),
    "0d-input": ((), (1, _H), IndexError),
    "batch-mismatch": ((1, _I), (_H,), RuntimeError),
    "batch-mismatch-2d": ((2, _I), (3, _H), RuntimeError),
    "1d-hidden-same-batch": ((1, _I), (1,), IndexError),
    "3d-input": ((2, 1, _I), (2, 1, _H), RuntimeError),
    "3d-input-of-input-size": ((2, _I, _I), (2, _H), RuntimeError),
    "input-size": ((1, _I + 1), (1, _H), RuntimeError),
    "hidden-size": ((1, _I), (1, _H + 1), RuntimeError),
}


@pytest.mark.parametrize("op", list(_GATES))
@pytest.mark.parametrize("case", list(_CELL_ERRORS))
def test_rnn_cell_functions_take_batches_only(op, case, torch_mod):
    """nn/_rnn_ops.py ``_check_cell`` / ``_check_2d``: torch's ``*_cell`` functions index
    ``size(1)`` of the input and hidden state (IndexError below 2-D) and check the hidden
    state's batch against the input's (RuntimeError)."""
    x_shape, h_shape, want = _CELL_ERRORS[case]
    got = _same_error(lambda m: _cell_call(m, op, x_shape, h_shape), torch_mod)
    assert got is want
    with pytest.raises(want, match=op):
        _cell_call(tg, op, x_shape, h_shape)


@pytest.mark.parametrize("c_shape", [(2, _H), (1,), (1, _H + 1)], ids=["batch", "1d", "size"])
def test_lstm_cell_checks_its_cell_state(c_shape, torch_mod):
    """nn/_rnn_ops.py ``_check_cell``'s loop over (h, c): the cell state ``c`` is checked
    as the hidden state is (hidden1 in torch's words)."""
    got = _same_error(lambda m: _cell_call(m, "lstm_cell", (1, _I), (1, _H), c_shape), torch_mod)
    assert got in (IndexError, RuntimeError)


@pytest.mark.parametrize("op", list(_GATES))
def test_rnn_cell_functions_batched_values(op, torch_mod):
    """nn/_rnn_ops.py: a (2, I) batch gives torch's values."""
    want = _cell_call(torch_mod, op, (2, _I), (2, _H))
    got = _cell_call(tg, op, (2, _I), (2, _H))
    for g, w in zip(got if op == "lstm_cell" else [got], want if op == "lstm_cell" else [want]):
        assert g.dtype == tg.float64
        np.testing.assert_allclose(g.numpy(), w.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("cls", ["RNNCell", "GRUCell", "LSTMCell"])
def test_cell_modules_still_take_unbatched_input(cls, torch_mod):
    """nn/rnn.py RNNCellBase._prepare: the modules add the batch dim (as torch's), so a
    1-D input still works, with torch's values."""
    outs = []
    for m in (torch_mod, tg):
        m.manual_seed(0)
        cell = getattr(m.nn, cls)(_I, _H)
        with torch_mod.no_grad() if m is torch_mod else tg.no_grad():
            for p in cell.parameters():
                p.copy_(m.linspace(-0.5, 0.5, p.numel()).reshape(p.shape))
        out = cell(m.tensor([0.3, -0.7]))
        outs.append(out[0] if isinstance(out, tuple) else out)
    theirs, ours = outs
    assert tuple(ours.shape) == tuple(theirs.shape) == (_H,)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "element",
    [
        lambda m: m.tensor(5),
        lambda m: m.tensor([[5]]),
        lambda m: m.tensor(5, dtype=m.int32),
        lambda m: m.tensor(True),
        lambda m: np.array(5),
        lambda m: m.tensor(5.0),
        lambda m: m.tensor([5, 6]),
        lambda m: m.tensor([], dtype=m.int64),
        lambda m: np.bool_(True),
        lambda m: np.float64(5.0),
        lambda m: np.array([5]),
    ],
    ids=[
        "0d",
        "1x1",
        "int32",
        "bool-tensor",
        "0d-array",
        "float",
        "two",
        "empty",
        "np-bool",
        "np-float",
        "1d-array",
    ],  # fmt: skip
)
def test_ctc_loss_length_list_elements(element, torch_mod):
    """nn/_ctc.py ``_is_int`` and ``_int_list``: a list element torch's int-list parser
    takes (a one-element integer or bool tensor, a 0-D integer array) gives torch's loss;
    any other is torch's TypeError."""
    outcomes = [_outcome(lambda m=m: _ctc(m, [element(m)], [2]).item()) for m in (torch_mod, tg)]
    theirs, ours = outcomes
    assert ours[0] == theirs[0], (ours, theirs)
    if theirs[0] == "ok":
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-10)
    else:
        assert ours[1] is theirs[1] is TypeError
        with pytest.raises(TypeError, match="ctc_loss"):  # ours, not NumPy's int() error
            _ctc(tg, [element(tg)], [2])
