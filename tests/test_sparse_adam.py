"""optim.SparseAdam against torch.optim.SparseAdam on embedding models (issue 11).

torch feeds it sparse gradients from ``nn.Embedding(sparse=True)``; tapegrad's are dense
(the rows with a nonzero entry are the rows updated) or a sparse COO tensor set by hand.
Weights, moments and step counts must match torch after several steps.
"""

import numpy as np
import pytest

import tapegrad as tg

V, D = 10, 4


def _batches(seed=0, n=5):
    rng = np.random.default_rng(seed)
    # rows 8 and 9 are never looked up: they must keep their values and zero moments
    return [rng.integers(0, 8, (3, 5)) for _ in range(n)], rng.standard_normal((3, 5, D))


def _train(m, weight, padding_idx=None, maximize=False, betas=(0.9, 0.999), lr=0.05):
    emb = m.nn.Embedding(V, D, padding_idx=padding_idx, sparse=True)
    with m.no_grad():
        emb.weight.copy_(m.tensor(weight))
    opt = m.optim.SparseAdam(emb.parameters(), lr=lr, betas=betas, maximize=maximize)
    idxs, target = _batches()
    for idx in idxs:
        opt.zero_grad()
        out = emb(m.tensor(idx))
        ((out - m.tensor(target, dtype=m.float32)) ** 2).sum().backward()
        opt.step()
    return emb, opt


@pytest.mark.parametrize(
    "kw", [{}, {"padding_idx": 2}, {"maximize": True}, {"betas": (0.5, 0.7), "lr": 0.3}]
)
def test_embedding_training_matches_torch(torch_mod, kw):
    w = np.random.default_rng(1).standard_normal((V, D)).astype(np.float32)
    ours, opt = _train(tg, w, **kw)
    ref, topt = _train(torch_mod, w, **kw)
    np.testing.assert_allclose(
        ours.weight.detach().numpy(), ref.weight.detach().numpy(), 1e-5, 1e-6
    )
    st, tst = opt.state[ours.weight], topt.state[ref.weight]
    assert sorted(st) == sorted(tst) == ["exp_avg", "exp_avg_sq", "step"]
    assert st["step"] == tst["step"] == 5
    for k in ("exp_avg", "exp_avg_sq"):
        np.testing.assert_allclose(st[k].numpy(), tst[k].numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(ours.weight.detach().numpy()[8:], w[8:])  # never looked up


def test_sparse_coo_gradient_matches_torch(torch_mod):
    """A hand-made sparse gradient, with a repeated index and an explicit zero: the entries
    updated are the coalesced indices, exactly as torch (the zero's moments decay)."""
    w = np.random.default_rng(2).standard_normal((V, D)).astype(np.float32)
    idx = np.array([[1, 4, 1, 6, 6], [0, 2, 0, 3, 1]])
    vals = np.random.default_rng(3).standard_normal(5).astype(np.float32)
    vals[3] = 0.0
    results = []
    for m in (tg, torch_mod):
        p = m.nn.Parameter(m.tensor(w))
        opt = m.optim.SparseAdam([p], lr=0.1)
        for k in range(3):
            p.grad = m.sparse_coo_tensor(m.tensor(idx), m.tensor(vals * (k + 1)), (V, D))
            opt.step()
        results.append((p.detach().numpy(), opt.state[p]["exp_avg"].numpy()))
    (pw, pm), (tw, tm) = results
    np.testing.assert_allclose(pw, tw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(pm, tm, rtol=1e-5, atol=1e-7)


def test_dense_gradient_skips_rows_that_are_exactly_zero():
    """The documented difference: with a dense gradient a looked-up row whose gradient is
    exactly zero cannot be told from an untouched one, so it keeps its value."""
    p = tg.nn.Parameter(tg.ones(3, 2))
    opt = tg.optim.SparseAdam([p], lr=0.1)
    p.grad = tg.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, -2.0]])
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [[0.9, 1.0], [1.0, 1.0], [1.0, 1.1]], 1e-6)
    assert opt.state[p]["exp_avg"].numpy()[1].tolist() == [0.0, 0.0]


def test_state_dict_round_trip():
    emb, opt = _train(tg, np.zeros((V, D), np.float32))
    sd = opt.state_dict()
    emb2 = tg.nn.Embedding(V, D, sparse=True)
    opt2 = tg.optim.SparseAdam(emb2.parameters(), lr=0.05)
    opt2.load_state_dict(sd)
    assert opt2.state[emb2.weight]["step"] == 5
    np.testing.assert_array_equal(
        opt2.state[emb2.weight]["exp_avg"].numpy(), opt.state[emb.weight]["exp_avg"].numpy()
    )
    assert "sparse=True" in repr(emb2)


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"lr": 0.0}, "Invalid learning rate: 0.0"),
        ({"eps": -1.0}, "Invalid epsilon value: -1.0"),
        ({"betas": (1.0, 0.9)}, "Invalid beta parameter at index 0: 1.0"),
        ({"betas": (0.9, -0.1)}, "Invalid beta parameter at index 1: -0.1"),
    ],
)
def test_bad_hyperparameters_raise_as_torch(torch_mod, kw, msg):
    for m in (tg, torch_mod):
        with pytest.raises(ValueError, match=msg.replace("(", r"\(")):
            m.optim.SparseAdam([m.nn.Parameter(m.zeros(2))], **kw)


def test_sparse_parameters_are_refused(torch_mod):
    for m in (tg, torch_mod):
        sp = m.sparse_coo_tensor(m.tensor([[0]]), m.tensor([1.0]), (2,))
        with pytest.raises(ValueError, match=r"Sparse params at indices \[\[0, 0\]\]"):
            m.optim.SparseAdam([sp])
