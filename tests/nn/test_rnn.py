"""RNN/LSTM/GRU, their cells and nn.utils.rnn packing against torch with identical weights."""

import numpy as np
import pytest

import tapegrad as tg

rng = np.random.default_rng(0)
rnn_utils = tg.nn.utils.rnn


def _sync(ours, theirs):
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: v.detach().numpy().copy() for k, v in theirs.state_dict().items()})


def _flat(x):
    if isinstance(x, tuple):
        return [y for z in x for y in _flat(z)]
    return [x]


def _close(a, b, what, atol=1e-10):
    np.testing.assert_allclose(a, b, atol=atol, rtol=atol, err_msg=what)


def _weighted_sum(m, outs):
    total = 0
    for u in outs:
        w = np.cos(np.arange(int(np.prod(u.shape)))).reshape(tuple(u.shape))
        total = total + (u * m.tensor(w, dtype=u.dtype)).sum()
    return total


RNN_CASES = [
    # (class, kwargs, input shape, pass an initial state)
    ("LSTM", {}, (5, 3, 4), False),
    ("LSTM", {"proj_size": 3, "num_layers": 2, "bidirectional": True}, (5, 3, 4), True),
    ("LSTM", {"bias": False, "batch_first": True}, (3, 5, 4), True),
    ("LSTM", {}, (5, 4), True),
    ("GRU", {"num_layers": 2, "bidirectional": True}, (5, 3, 4), True),
    ("GRU", {"batch_first": True}, (3, 5, 4), False),
    ("GRU", {"bias": False}, (5, 4), True),
    ("RNN", {"nonlinearity": "relu", "batch_first": True}, (3, 5, 4), True),
    ("RNN", {"num_layers": 3, "bidirectional": True}, (5, 2, 4), False),
]


def _state(cls, kw, shape, m, arrays):
    d = (2 if kw.get("bidirectional") else 1) * kw.get("num_layers", 1)
    hs = (d,) + ((shape[0] if kw.get("batch_first") else shape[1],) if len(shape) == 3 else ())
    h = m.tensor(arrays[0][: int(np.prod(hs + (6,)))].reshape(hs + (6,)), requires_grad=True)
    if kw.get("proj_size"):
        h = m.tensor(arrays[0][: int(np.prod(hs + (3,)))].reshape(hs + (3,)), requires_grad=True)
    if cls != "LSTM":
        return h, [h]
    c = m.tensor(arrays[1][: int(np.prod(hs + (6,)))].reshape(hs + (6,)), requires_grad=True)
    return (h, c), [h, c]


@pytest.mark.parametrize("case", RNN_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(RNN_CASES)])
def test_rnn_matches_torch(case, torch_mod):
    cls, kw, shape, with_state = case
    theirs = getattr(torch_mod.nn, cls)(4, 6, **kw).double()
    ours = getattr(tg.nn, cls)(4, 6, **kw).double()
    _sync(ours, theirs)
    x = rng.standard_normal(shape)
    states = [rng.standard_normal(200), rng.standard_normal(200)]
    res = {}
    for m, mod in ((tg, ours), (torch_mod, theirs)):
        xt = m.tensor(x, requires_grad=True)
        leaves = [xt]
        args = [xt]
        if with_state:
            hx, extra = _state(cls, kw, shape, m, states)
            args.append(hx)
            leaves += extra
        opt = m.optim.SGD(mod.parameters(), lr=0.5)
        steps = []
        for _ in range(2):  # two training steps
            out = _flat(mod(*args))
            loss = _weighted_sum(m, out)
            loss.backward()
            steps.append(
                (
                    [o.detach().numpy().copy() for o in out],
                    [p.grad.numpy().copy() for p in mod.parameters()],
                    [t.grad.numpy().copy() for t in leaves],
                )
            )
            opt.step()
            opt.zero_grad()
            for t in leaves:
                t.grad = None
        res[m] = steps
    for step, (a, b) in enumerate(zip(res[tg], res[torch_mod])):
        for kind, xs, ys in zip(("output", "param grad", "input grad"), a, b):
            assert len(xs) == len(ys)
            for i, (u, v) in enumerate(zip(xs, ys)):
                _close(u, v, f"{kind} {i} at step {step}")


@pytest.mark.parametrize(
    "cls, kw",
    [
        ("LSTM", {"num_layers": 2, "bidirectional": True}),
        ("GRU", {"bidirectional": True, "batch_first": True}),
        ("RNN", {}),
        ("LSTM", {"proj_size": 2}),
    ],
)
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_sequence_matches_torch(cls, kw, enforce_sorted, torch_mod):
    theirs = getattr(torch_mod.nn, cls)(4, 6, **kw).double()
    ours = getattr(tg.nn, cls)(4, 6, **kw).double()
    _sync(ours, theirs)
    bf = kw.get("batch_first", False)
    x = rng.standard_normal((3, 5, 4) if bf else (5, 3, 4))
    lens = [5, 3, 2] if enforce_sorted else [3, 5, 2]
    d = (2 if kw.get("bidirectional") else 1) * kw.get("num_layers", 1)
    h = rng.standard_normal((d, 3, kw.get("proj_size") or 6))
    c = rng.standard_normal((d, 3, 6))
    res = []
    for m, mod in ((tg, ours), (torch_mod, theirs)):
        utils = m.nn.utils.rnn
        xt, ht = m.tensor(x, requires_grad=True), m.tensor(h, requires_grad=True)
        packed = utils.pack_padded_sequence(xt, lens, batch_first=bf, enforce_sorted=enforce_sorted)
        out, state = mod(packed, (ht, m.tensor(c)) if cls == "LSTM" else ht)
        padded, lengths = utils.pad_packed_sequence(out, batch_first=bf, total_length=6)
        outs = [padded] + _flat(state)
        _weighted_sum(m, outs).backward()
        res.append(
            [packed.data.detach().numpy(), packed.batch_sizes.numpy(), lengths.numpy()]
            + [o.detach().numpy() for o in outs]
            + [xt.grad.numpy(), ht.grad.numpy()]
            + [p.grad.numpy() for p in mod.parameters()]
        )
    for i, (a, b) in enumerate(zip(*res)):
        _close(a, b, f"item {i}")


def test_pad_and_pack_sequence_helpers(torch_mod):
    seqs = [rng.standard_normal((n, 2)) for n in (4, 2, 3)]
    for bf in (False, True):
        for side in ("right", "left"):
            a = rnn_utils.pad_sequence(
                [tg.tensor(s) for s in seqs], batch_first=bf, padding_value=-1, padding_side=side
            )
            b = torch_mod.nn.utils.rnn.pad_sequence(
                [torch_mod.tensor(s) for s in seqs],
                batch_first=bf,
                padding_value=-1,
                padding_side=side,
            )
            _close(a.numpy(), b.numpy(), "pad_sequence")
    a = rnn_utils.pack_sequence([tg.tensor(s) for s in seqs], enforce_sorted=False)
    b = torch_mod.nn.utils.rnn.pack_sequence(
        [torch_mod.tensor(s) for s in seqs], enforce_sorted=False
    )
    _close(a.data.numpy(), b.data.numpy(), "pack_sequence")
    assert a.sorted_indices.tolist() == b.sorted_indices.tolist()
    assert a.unsorted_indices.tolist() == b.unsorted_indices.tolist()
    for u, s in zip(rnn_utils.unpack_sequence(a), seqs):
        _close(u.numpy(), s, "unpack_sequence")
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        rnn_utils.pack_sequence([tg.tensor(s) for s in seqs])
    with pytest.raises(ValueError, match="total_length"):
        rnn_utils.pad_packed_sequence(a, total_length=2)


@pytest.mark.parametrize(
    "cls, kw", [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}),
                ("GRUCell", {}), ("GRUCell", {"bias": False})]
)  # fmt: skip
@pytest.mark.parametrize("batched", [True, False])
def test_cells_match_torch(cls, kw, batched, torch_mod):
    theirs = getattr(torch_mod.nn, cls)(4, 5, **kw).double()
    ours = getattr(tg.nn, cls)(4, 5, **kw).double()
    _sync(ours, theirs)
    shape = (3, 4) if batched else (4,)
    x = rng.standard_normal(shape)
    h = rng.standard_normal(shape[:-1] + (5,))
    res = []
    for m, mod in ((tg, ours), (torch_mod, theirs)):
        xt, ht = m.tensor(x, requires_grad=True), m.tensor(h, requires_grad=True)
        outs = []
        state = (ht, ht * 0.5) if cls == "LSTMCell" else ht
        for _ in range(3):  # unrolled: the state feeds back
            state = mod(xt, state)
            outs += _flat(state)
        none = _flat(mod(xt))  # no state: zeros
        _weighted_sum(m, outs + none).backward()
        res.append(
            [o.detach().numpy() for o in outs + none]
            + [xt.grad.numpy(), ht.grad.numpy()]
            + [p.grad.numpy() for p in mod.parameters()]
        )
    for i, (a, b) in enumerate(zip(*res)):
        _close(a, b, f"item {i}")


def test_rnn_names_init_and_repr(torch_mod):
    ours = tg.nn.LSTM(3, 8, num_layers=2, bidirectional=True, proj_size=4)
    theirs = torch_mod.nn.LSTM(3, 8, num_layers=2, bidirectional=True, proj_size=4)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in theirs.state_dict().items()
    ]
    assert repr(ours) == repr(theirs)
    assert repr(tg.nn.RNN(3, 4, nonlinearity="relu", dropout=0.5, num_layers=2)) == repr(
        torch_mod.nn.RNN(3, 4, nonlinearity="relu", dropout=0.5, num_layers=2)
    )
    assert repr(tg.nn.GRUCell(3, 4, bias=False)) == repr(torch_mod.nn.GRUCell(3, 4, bias=False))
    w = np.concatenate([p.detach().numpy().ravel() for p in ours.parameters()])
    bound = 1 / np.sqrt(8)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert len(ours.all_weights) == 4 and len(ours.all_weights[0]) == 5
    ours.flatten_parameters()  # torch code calls it; a no-op here


def test_rnn_dropout_between_layers():
    m = tg.nn.GRU(4, 6, num_layers=2, dropout=0.5)
    x = tg.randn(5, 2, 4)
    a, b = m(x)[0], m(x)[0]
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    m.eval()
    np.testing.assert_array_equal(m(x)[0].detach().numpy(), m(x)[0].detach().numpy())
    one = tg.nn.GRU(4, 6, num_layers=1, dropout=0.5)  # no dropout after the last layer
    np.testing.assert_array_equal(one(x)[0].detach().numpy(), one(x)[0].detach().numpy())


def test_rnn_gradgradcheck():
    m = tg.nn.LSTM(2, 3, bidirectional=True).double()
    x = tg.randn(3, 2, 2, dtype=tg.float64, requires_grad=True)

    def f(x):
        out, (h, c) = m(x)
        return out.sum() + (h * c).sum()

    assert tg.autograd.gradgradcheck(f, [x])
    g = tg.nn.GRU(2, 3).double()
    assert tg.autograd.gradgradcheck(lambda x: g(x)[0], [x])


@pytest.mark.parametrize(
    "make, call, error, match",
    [
        (lambda: tg.nn.LSTM(4, 6), lambda m: m(tg.randn(5, 3, 5)), RuntimeError, "input_size"),
        (lambda: tg.nn.LSTM(4, 6), lambda m: m(tg.randn(5, 3, 4), (tg.zeros(1, 2, 6),) * 2),
         RuntimeError, "Expected hidden size"),
        (lambda: tg.nn.GRU(4, 6), lambda m: m(tg.randn(2, 5, 3, 4)), ValueError, "2D or 3D"),
        (lambda: tg.nn.RNN(4, 6, nonlinearity="gelu"), None, ValueError, "nonlinearity"),
        (lambda: tg.nn.GRU(4, 6, proj_size=2), None, ValueError, "proj_size"),
        (lambda: tg.nn.LSTM(4, 6, proj_size=6), None, ValueError, "proj_size"),
        (lambda: tg.nn.LSTM(4, 6, dropout=2.0), None, ValueError, "dropout"),
        (lambda: tg.nn.LSTM(4, 6), lambda m: m(tg.randn(5, 3, 4, dtype=tg.float64)), ValueError,
         "does not match weight dtype"),
    ],
)  # fmt: skip
def test_rnn_errors(make, call, error, match):
    with pytest.raises(error, match=match):
        m = make()
        call(m)
