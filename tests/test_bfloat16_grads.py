"""bfloat16 tensors may require grad, as in torch (Note [bfloat16 gradients] in
autograd/engine.py), and bfloat16 sums accumulate in float32 (Note [bfloat16 sums] in
ops/reduction.py), and normalisations compute in float32 (nn/_norm_ops.py). Gradients are
compared with torch's at bfloat16's tolerances."""

import numpy as np
import pytest

import tapegrad as tg

rng = np.random.default_rng(0)
X = rng.standard_normal((4, 6)).astype(np.float32)
W = rng.standard_normal((3, 6)).astype(np.float32)

FNS = {
    "mul_sum": lambda m, F, x, w: (x * x).sum(),
    "softmax": lambda m, F, x, w: (F.softmax(x, -1) * x).sum(),
    "gelu": lambda m, F, x, w: F.gelu(x).sum(),
    "matmul": lambda m, F, x, w: (x @ w.t()).pow(2).mean(),
    "exp_div": lambda m, F, x, w: (x.exp() / (1 + x * x)).sum(),
    "cross_entropy": lambda m, F, x, w: F.cross_entropy(x, m.tensor([0, 1, 2, 3])),
    "mse": lambda m, F, x, w: F.mse_loss(x[:3], w),
    "tanh_mean": lambda m, F, x, w: x.tanh().mean(),
    "sigmoid": lambda m, F, x, w: x.sigmoid().sum(),
    "relu": lambda m, F, x, w: F.relu(x).sum(),
    "logsumexp": lambda m, F, x, w: x.logsumexp(1).sum(),
    "layer_norm": lambda m, F, x, w: (F.layer_norm(x, (6,))[:3] * w).sum(),
    "group_norm": lambda m, F, x, w: (F.group_norm(x.reshape(2, 4, 3), 2) * 0.5).pow(2).sum(),
}


def _grads(m, name):
    x = m.tensor(X, dtype=m.bfloat16, requires_grad=True)
    w = m.tensor(W, dtype=m.bfloat16, requires_grad=True)
    FNS[name](m, m.nn.functional, x, w).backward()
    return [None if t.grad is None else (str(t.grad.dtype), t.grad.float().numpy()) for t in (x, w)]


@pytest.mark.parametrize("name", sorted(FNS))
def test_bfloat16_gradients_match_torch(torch_mod, name):
    ours, theirs = _grads(tg, name), _grads(torch_mod, name)
    for a, b in zip(ours, theirs):
        assert (a is None) == (b is None)
        if a is not None:
            assert a[0].split(".")[-1] == b[0].split(".")[-1] == "bfloat16"
            np.testing.assert_allclose(a[1], b[1], rtol=1.6e-2, atol=1e-2)  # torch's bf16


@pytest.mark.parametrize("make", ["tensor", "zeros", "randn", "full"])
def test_bfloat16_tensors_may_be_created_requiring_grad(torch_mod, make):
    for m in (tg, torch_mod):
        args = {"tensor": ([1.0, 2.0],), "full": ((2,), 1.5)}.get(make, (2,))
        t = getattr(m, make)(*args, dtype=m.bfloat16, requires_grad=True)
        assert t.requires_grad and t.is_leaf
    with pytest.raises(RuntimeError, match="floating point"):
        tg.zeros(2, dtype=tg.int64, requires_grad=True)


def test_bfloat16_sums_accumulate_in_float32(torch_mod):
    x = (rng.random(5000) * 3).astype(np.float32)
    for op in ("sum", "mean", "cumsum"):
        res = []
        for m in (tg, torch_mod):
            t = m.tensor(x).to(m.bfloat16)
            r = getattr(t, op)(0) if op == "cumsum" else getattr(t, op)()
            r2 = getattr(t.reshape(50, 100), op)(1)
            assert str(r.dtype).endswith("bfloat16") and str(r2.dtype).endswith("bfloat16")
            res.append((r.float().numpy(), r2.float().numpy()))
            if op != "cumsum":  # an explicit dtype is kept
                assert str(getattr(t, op)(dtype=m.float32).dtype).endswith("float32")
        np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-2)
        np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-2)


def test_bfloat16_normalisations_compute_in_float32(torch_mod):
    x = (rng.standard_normal((4, 3, 8)) * 3 + 40).astype(np.float32)  # a large mean
    res = []
    for m in (tg, torch_mod):
        t, F = m.tensor(x).to(m.bfloat16), m.nn.functional
        outs = (
            F.layer_norm(t, (8,)),
            F.group_norm(t, 3),
            F.batch_norm(t, None, None, training=True),
        )
        assert all(str(o.dtype).endswith("bfloat16") for o in outs)
        res.append([o.float().numpy() for o in outs])
    for ours, theirs, atol in zip(*res, (1.6e-2, 1.6e-2, 5e-2)):  # torch's bf16 batch_norm
        np.testing.assert_allclose(ours, theirs, rtol=1.6e-2, atol=atol)  # rounds more steps
