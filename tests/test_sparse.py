"""Sparse COO tensors (issue 17, item 4) against torch.sparse: values and gradients."""

import numpy as np
import pytest

import tapegrad as tg

IDX = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]  # (0, 2) twice: uncoalesced
VALS = [3.0, 4.0, 5.0, 1.0, -2.0]


def _coo(m, values=VALS, **kw):
    return m.sparse_coo_tensor(IDX, values, (3, 3), check_invariants=True, **kw)


def _np(t):
    return t.detach().numpy()


def test_construction_and_coalesce_match_torch(torch_mod):
    s, st = _coo(tg), _coo(torch_mod)
    assert s.is_sparse and st.is_sparse and isinstance(s, tg.Tensor)
    assert tuple(s.shape) == tuple(st.shape) and s.dtype == tg.float32
    assert s._nnz() == st._nnz() == 5 and not s.is_coalesced()
    assert (s.sparse_dim(), s.dense_dim()) == (st.sparse_dim(), st.dense_dim())
    for x in (s, st):
        with pytest.raises(RuntimeError, match="uncoalesced"):
            x.indices()
    c, ct = s.coalesce(), st.coalesce()
    assert c.is_coalesced() and c._nnz() == ct._nnz() == 4
    np.testing.assert_array_equal(c.indices().numpy(), ct.indices().numpy())
    np.testing.assert_array_equal(_np(c.values()), _np(ct.values()))
    np.testing.assert_array_equal(_np(s.to_dense()), _np(st.to_dense()))
    assert s.type() == st.type() == "torch.sparse.FloatTensor"


def test_size_is_inferred_and_legacy_constructor(torch_mod):
    s = tg.sparse_coo_tensor(IDX, VALS)
    assert tuple(s.shape) == tuple(torch_mod.sparse_coo_tensor(IDX, VALS).shape)
    legacy = tg.sparse.FloatTensor(tg.tensor(IDX), tg.tensor(VALS, dtype=tg.float64), (3, 4))
    assert legacy.dtype == tg.float32 and tuple(legacy.shape) == (3, 4)


def test_to_sparse_and_back_with_gradient(torch_mod):
    a = np.array([[0.0, 2.0, 0.0], [3.0, 0.0, -1.0]])
    grads = []
    for m in (tg, torch_mod):
        x = m.tensor(a, requires_grad=True)
        s = x.to_sparse()
        assert s.is_sparse and s.is_coalesced() and s._nnz() == 3
        (s.to_dense() * m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(*grads)  # only at the stored entries


def test_sparse_mm_gradients_reach_values_and_dense(torch_mod):
    rng = np.random.default_rng(0)
    d0, w = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    res = []
    for m in (tg, torch_mod):
        v = m.tensor(VALS, dtype=m.float64, requires_grad=True)
        d = m.tensor(d0, requires_grad=True)
        s = _coo(m, v)
        outs = [m.sparse.mm(s, d), m.spmm(s, d), s @ d, m.matmul(s, d)]
        loss = sum((o * m.tensor(w)).sum() for o in outs)
        loss.backward()
        res.append((_np(outs[0]), v.grad.numpy(), d.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_leafness_follows_torch(torch_mod):
    for m in (tg, torch_mod):
        v = m.tensor(VALS, requires_grad=True)
        s = _coo(m, v)
        assert s.requires_grad and not s.is_leaf and s.grad_fn is not None
        assert _coo(m).is_leaf and not _coo(m).requires_grad
        d = s.data
        assert d.is_sparse and not d.requires_grad


def test_sparse_leaf_gets_a_sparse_grad(torch_mod):
    d0 = np.arange(6.0).reshape(3, 2)
    got = []
    for m in (tg, torch_mod):
        s = _coo(m, requires_grad=True)
        assert s.requires_grad and s.is_leaf
        m.sparse.mm(s, m.tensor(d0, dtype=m.float32)).pow(2).sum().backward()
        g = s.grad.coalesce()
        assert g.is_sparse
        got.append((g.indices().numpy(), _np(g.values()), _np(s.grad.to_dense())))
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_sums_match_torch(dim, torch_mod):
    res = []
    for m in (tg, torch_mod):
        v = m.tensor(VALS, dtype=m.float64, requires_grad=True)
        s = _coo(m, v)
        out = m.sparse.sum(s) if dim is None else m.sparse.sum(s, dim)
        dense = out.to_dense() if out.is_sparse else out
        (
            dense * m.arange(1.0, 1.0 + dense.numel(), dtype=m.float64).reshape(dense.shape)
        ).sum().backward()
        res.append((_np(dense), v.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b)
    assert _np(_coo(tg).sum()) == pytest.approx(11.0)


def test_transpose_and_scaling_match_torch(torch_mod):
    out = []
    for m in (tg, torch_mod):
        s = _coo(m)
        out.append([_np(s.t().to_dense()), _np((s * 2.0).to_dense()), _np((-s / 4).to_dense())])
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.sparse.mm(_coo(m), m.ones(4, 2)),
        lambda m: m.sparse.mm(_coo(m), m.ones(3, 2, dtype=m.float64)),
        lambda m: m.sparse_coo_tensor([[0, 3]], [1.0, 2.0], (3,), check_invariants=True),
        lambda m: m.sparse_coo_tensor([[0, 1]], [1.0, 2.0, 3.0], (3,)),
    ],
    ids=["shape", "dtype", "out-of-bounds", "nnz-mismatch"],
)
def test_bad_input_raises_like_torch(make, torch_mod):
    for m in (tg, torch_mod):
        with pytest.raises(RuntimeError):
            make(m)


def test_dense_only_ops_refuse_a_sparse_tensor():
    with pytest.raises(TypeError, match="to_dense"):
        _coo(tg).numpy()
    with pytest.raises(NotImplementedError, match="to_dense"):
        _coo(tg) * tg.ones(3, 3)


def test_a_gcn_trains_like_torch(torch_mod):
    """Two-layer GCN (Kipf & Welling) on a normalised sparse adjacency, 5 SGD steps."""
    rng = np.random.default_rng(1)
    n, f, h, c = 8, 5, 4, 3
    edges = rng.integers(0, n, (2, 20))
    adj = np.zeros((n, n))
    adj[edges[0], edges[1]] = adj[edges[1], edges[0]] = 1.0
    adj += np.eye(n)
    dinv = 1.0 / np.sqrt(adj.sum(1))
    norm = adj * dinv[:, None] * dinv[None, :]
    idx = np.stack(np.nonzero(norm))
    feats, labels = rng.standard_normal((n, f)), rng.integers(0, c, n)
    w1, w2 = rng.standard_normal((f, h)) * 0.5, rng.standard_normal((h, c)) * 0.5
    losses = []
    for m in (tg, torch_mod):
        a = m.sparse_coo_tensor(idx, norm[tuple(idx)], (n, n), dtype=m.float64)
        x, y = m.tensor(feats), m.tensor(labels)
        p1, p2 = m.tensor(w1, requires_grad=True), m.tensor(w2, requires_grad=True)
        opt = m.optim.SGD([p1, p2], lr=0.5)
        run = []
        for _ in range(5):
            opt.zero_grad()
            hid = m.relu(m.spmm(a, x @ p1))
            loss = m.nn.functional.cross_entropy(m.spmm(a, hid @ p2), y)
            loss.backward()
            opt.step()
            run.append(loss.item())
        losses.append(run)
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-10)


def test_addition_matches_torch(torch_mod):
    other = [[0, 2], [1, 1]]
    res = []
    for m in (tg, torch_mod):
        v = m.tensor(VALS, dtype=m.float64, requires_grad=True)
        s = _coo(m, v)
        t = m.sparse_coo_tensor(other, [10.0, 20.0], (3, 3), dtype=m.float64)
        dense = m.ones(3, 3, dtype=m.float64)
        outs = [(s + t).to_dense(), (s - t).to_dense(), dense + s, dense - s]
        sum((o * (k + 1.0)).sum() for k, o in enumerate(outs)).backward()
        with pytest.raises(RuntimeError, match="not supported"):
            s + dense
        res.append([_np(o) for o in outs] + [v.grad.numpy()])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b)


def test_unsupported_dense_ops_name_the_op():
    with pytest.raises(NotImplementedError, match="exp: not supported for sparse COO"):
        tg.exp(_coo(tg))
    with pytest.raises(NotImplementedError, match="sparse COO"):
        tg.relu(_coo(tg))


def _special_spmm(m):
    """pyGAT's SpecialSpmmFunction (dense .t() spelled transpose(0, 1))."""

    class SpecialSpmmFunction(m.autograd.Function):
        @staticmethod
        def forward(ctx, indices, values, shape, b):
            assert not indices.requires_grad
            a = m.sparse_coo_tensor(indices, values, shape, check_invariants=True)
            ctx.save_for_backward(a, b)
            ctx.N = shape[0]
            return m.matmul(a, b)

        @staticmethod
        def backward(ctx, grad_output):
            a, b = ctx.saved_tensors
            grad_values = grad_b = None
            if ctx.needs_input_grad[1]:
                grad_a_dense = grad_output.matmul(b.transpose(0, 1))
                edge_idx = a._indices()[0, :] * ctx.N + a._indices()[1, :]
                grad_values = grad_a_dense.view(-1)[edge_idx]
            if ctx.needs_input_grad[3]:
                grad_b = a.t().matmul(grad_output)
            return None, grad_values, None, grad_b

    return SpecialSpmmFunction


def test_gat_custom_function_saving_a_sparse_tensor(torch_mod):
    res = []
    for m in (tg, torch_mod):
        idx = m.tensor([[0, 1, 2, 2], [1, 2, 0, 1]])
        v = m.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        b = m.tensor(np.arange(6.0).reshape(3, 2), dtype=m.float32, requires_grad=True)
        out = _special_spmm(m).apply(idx, v, (3, 3), b)
        (out * out).sum().backward()
        res.append((_np(out), v.grad.numpy(), b.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b)


def test_layouts_match_torch(torch_mod):
    for m in (tg, torch_mod):
        assert m.ones(2).layout == m.strided and _coo(m).layout == m.sparse_coo
        assert m.ones(2).layout != m.sparse_coo
    assert repr(tg.sparse_coo) == repr(torch_mod.sparse_coo)
