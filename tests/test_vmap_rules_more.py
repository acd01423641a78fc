"""Issue 15: batching rules for pooling, convolutions, embedding, attention and the index
family (_batch_rules_more.py): each against a Python loop for in_dims 0 and 1 and under
nested vmap, with no fallback allowed, and per-sample gradients (vmap(grad)) against a
loop of gradients, in float64 (tests/_vmap_harness.py); a few against torch.func."""

import numpy as np
import pytest

import tapegrad as tg

from ._vmap_harness import (
    _ints,
    _tensor,
    no_fallback,  # noqa: F401 - autouse: a fallback fails the test
    rule_tests,
)

F = tg.func
NF = tg.nn.functional


CASES = {
    "max_pool1d": (
        lambda x: NF.max_pool1d(x, 3, stride=2, padding=1),
        lambda r, b: [r.standard_normal(b + (2, 9))],
        (True,),
        0,
    ),
    "max_pool1d-images": (
        lambda x: NF.max_pool1d(x, 2),
        lambda r, b: [r.standard_normal(b + (2, 3, 8))],
        (True,),
        0,
    ),
    "max_pool2d-indices": (
        lambda x: NF.max_pool2d(x, 2, return_indices=True),
        lambda r, b: [r.standard_normal(b + (2, 2, 6, 6))],
        (True,),
        0,
    ),
    "max_pool2d-unbatched-image": (
        lambda x: NF.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
        lambda r, b: [r.standard_normal(b + (2, 7, 6))],
        (True,),
        0,
    ),
    "max_pool3d": (
        lambda x: NF.max_pool3d(x, 2, return_indices=True),
        lambda r, b: [r.standard_normal(b + (2, 2, 4, 4, 4))],
        (True,),
        0,
    ),
    "avg_pool1d": (
        lambda x: NF.avg_pool1d(x, 3, stride=2, padding=1, count_include_pad=False),
        lambda r, b: [r.standard_normal(b + (2, 3, 9))],
        (True,),
        0,
    ),
    "avg_pool2d": (
        lambda x: NF.avg_pool2d(x, 2, stride=1, padding=1),
        lambda r, b: [r.standard_normal(b + (2, 5, 5))],
        (True,),
        0,
    ),
    "avg_pool3d": (
        lambda x: NF.avg_pool3d(x, 2),
        lambda r, b: [r.standard_normal(b + (1, 2, 4, 4, 4))],
        (True,),
        0,
    ),
    "adaptive_avg_pool1d": (
        lambda x: NF.adaptive_avg_pool1d(x, 4),
        lambda r, b: [r.standard_normal(b + (2, 3, 9))],
        (True,),
        0,
    ),
    "adaptive_avg_pool2d": (
        lambda x: NF.adaptive_avg_pool2d(x, (3, 2)),
        lambda r, b: [r.standard_normal(b + (2, 7, 5))],
        (True,),
        0,
    ),
    "adaptive_avg_pool3d": (
        lambda x: NF.adaptive_avg_pool3d(x, 2),
        lambda r, b: [r.standard_normal(b + (2, 2, 5, 4, 3))],
        (True,),
        0,
    ),
    "adaptive_max_pool1d": (
        lambda x: NF.adaptive_max_pool1d(x, 4, return_indices=True),
        lambda r, b: [r.standard_normal(b + (2, 3, 9))],
        (True,),
        0,
    ),
    "adaptive_max_pool2d": (
        lambda x: NF.adaptive_max_pool2d(x, 3),
        lambda r, b: [r.standard_normal(b + (2, 2, 7, 5))],
        (True,),
        0,
    ),
    "adaptive_max_pool3d": (
        lambda x: NF.adaptive_max_pool3d(x, 2),
        lambda r, b: [r.standard_normal(b + (2, 5, 4, 3))],
        (True,),
        0,
    ),
    "conv1d": (
        lambda x, w, bias: NF.conv1d(x, w, bias, stride=2, padding=1),
        lambda r, b: [
            r.standard_normal(b + (2, 3, 9)),
            r.standard_normal((4, 3, 3)),
            r.standard_normal(4),
        ],  # fmt: skip
        (True, False, False),
        0,
    ),
    "conv1d-per-sample-weight": (
        lambda x, w, bias: NF.conv1d(x, w, bias, padding="same", groups=1),
        lambda r, b: [
            r.standard_normal((2, 3, 9)),
            r.standard_normal(b + (4, 3, 3)),
            r.standard_normal(b + (4,)),
        ],  # fmt: skip
        (False, True, True),
        1,
    ),
    "conv2d-per-sample-weight-groups": (
        lambda x, w: NF.conv2d(x, w, None, 1, 1, 1, 2),
        lambda r, b: [r.standard_normal(b + (4, 5, 5)), r.standard_normal(b + (6, 2, 3, 3))],
        (True, True),
        1,
    ),
    "conv3d": (
        lambda x, w: NF.conv3d(x, w, dilation=1, padding=1),
        lambda r, b: [r.standard_normal(b + (2, 4, 4, 4)), r.standard_normal(b + (3, 2, 3, 3, 3))],
        (True, True),
        0,
    ),
    "conv_transpose1d": (
        lambda x, w: NF.conv_transpose1d(x, w, stride=2, output_padding=1),
        lambda r, b: [r.standard_normal(b + (2, 3, 5)), r.standard_normal((3, 2, 3))],
        (True, False),
        0,
    ),
    "conv_transpose2d": (
        lambda x, w: NF.conv_transpose2d(x, w, stride=2, padding=1),
        lambda r, b: [r.standard_normal(b + (3, 4, 4)), r.standard_normal((3, 2, 3, 3))],
        (True, False),
        0,
    ),
    "conv_transpose3d": (
        lambda x, w: NF.conv_transpose3d(x, w),
        lambda r, b: [r.standard_normal(b + (1, 2, 3, 3, 3)), r.standard_normal((2, 2, 2, 2, 2))],
        (True, False),
        0,
    ),
    "embedding": (
        lambda i, w: NF.embedding(i, w),
        lambda r, b: [_ints(r, 6, b + (2, 4)), r.standard_normal((6, 3))],
        (True, False),
        1,
    ),
    "embedding-per-sample-table": (
        lambda i, w: NF.embedding(i, w, padding_idx=-2),
        lambda r, b: [_ints(r, 6, (5,)), r.standard_normal(b + (6, 3))],
        (False, True),
        1,
    ),
    "embedding-both-padding": (
        lambda i, w: NF.embedding(i, w, padding_idx=1),
        lambda r, b: [_ints(r, 6, b + (7,)), r.standard_normal(b + (6, 3))],
        (True, True),
        1,
    ),
    "sdpa": (
        lambda q, k, v: NF.scaled_dot_product_attention(q, k, v),
        lambda r, b: [
            r.standard_normal(b + (2, 3, 4)),
            r.standard_normal(b + (2, 5, 4)),
            r.standard_normal(b + (2, 5, 3)),
        ],  # fmt: skip
        (True, True, True),
        0,
    ),
    "sdpa-causal-unbatched-kv": (
        lambda q, k, v: NF.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
        lambda r, b: [
            r.standard_normal(b + (4, 2)),
            r.standard_normal((2, 4, 2)),
            r.standard_normal((2, 4, 3)),
        ],  # fmt: skip
        (True, False, False),
        0,
    ),
    "sdpa-float-mask": (
        lambda q, k, v, m: NF.scaled_dot_product_attention(q, k, v, attn_mask=m),
        lambda r, b: [
            r.standard_normal(b + (2, 3, 4)),
            r.standard_normal((2, 5, 4)),
            r.standard_normal(b + (2, 5, 3)),
            r.standard_normal(b + (3, 5)),
        ],  # fmt: skip
        (True, False, True, True),
        3,
    ),
    "sdpa-bool-mask-gqa": (
        lambda q, k, v, m: NF.scaled_dot_product_attention(
            q, k, v, attn_mask=m > 0, enable_gqa=True
        ),
        lambda r, b: [
            r.standard_normal(b + (4, 3, 2)),
            r.standard_normal(b + (2, 5, 2)),
            r.standard_normal(b + (2, 5, 2)),
            r.uniform(-0.3, 1, b + (3, 5)),
        ],  # fmt: skip
        (True, True, True, True),
        0,
    ),
    "gather": (
        lambda x, i: x.gather(1, i),
        lambda r, b: [r.standard_normal(b + (3, 4)), _ints(r, 4, b + (3, 6))],
        (True, True),
        0,
    ),
    "gather-unbatched-index": (
        lambda x, i: tg.gather(x, -2, i),
        lambda r, b: [r.standard_normal(b + (3, 4)), _ints(r, 3, (2, 4))],
        (True, False),
        0,
    ),
    "gather-unbatched-input": (
        lambda x, i: tg.gather(x, 0, i),  # x.gather(..): a plain method loops (see report)
        lambda r, b: [r.standard_normal((3, 4)), _ints(r, 3, b + (5, 4))],
        (False, True),
        0,
    ),
    "take_along_dim": (
        lambda x, i: tg.take_along_dim(x, i, 1),
        lambda r, b: [r.standard_normal(b + (3, 4)), _ints(r, 4, b + (1, 2))],
        (True, True),
        0,
    ),
    "take_along_dim-flat": (
        lambda x, i: tg.take_along_dim(x, i),
        lambda r, b: [r.standard_normal(b + (3, 4)), _ints(r, 12, (5,))],
        (True, False),
        0,
    ),
    "scatter": (
        lambda x, i, s: x.scatter(1, i, s),
        lambda r, b: [
            r.standard_normal(b + (3, 5)),
            _perm_index(r, b, (3, 2), 5),
            r.standard_normal(b + (3, 4)),
        ],  # fmt: skip
        (True, True, True),
        2,
    ),
    "scatter-value-unbatched-index": (
        lambda x, i: x.scatter(0, i, value=2.5),
        lambda r, b: [r.standard_normal(b + (4, 3)), _perm_index(r, (), (2, 3), 4, axis=0)],
        (True, False),
        0,
    ),
    "scatter-reduce-multiply": (
        lambda x, i, s: tg.scatter(x, 1, i, s, reduce="multiply"),
        lambda r, b: [
            r.standard_normal((3, 5)),
            _ints(r, 5, b + (3, 4)),
            r.standard_normal(b + (3, 4)),
        ],  # fmt: skip
        (False, True, True),
        2,
    ),
    "scatter_add": (
        lambda x, i, s: x.scatter_add(1, i, s),
        lambda r, b: [
            r.standard_normal(b + (3, 5)),
            _ints(r, 5, b + (3, 6)),
            r.standard_normal(b + (3, 6)),
        ],  # fmt: skip
        (True, True, True),
        2,
    ),
    "scatter_reduce-amax": (
        lambda x, i, s: x.scatter_reduce(1, i, s, "amax"),
        lambda r, b: [
            r.standard_normal(b + (3, 5)),
            _ints(r, 5, b + (3, 6)),
            r.standard_normal(b + (3, 6)),
        ],  # fmt: skip
        (True, True, True),
        2,
    ),
    "scatter_reduce-mean-exclude-self": (
        lambda x, i, s: tg.scatter_reduce(x, 0, i, s, "mean", include_self=False),
        lambda r, b: [
            r.standard_normal(b + (4, 3)),
            _ints(r, 4, (5, 3)),
            r.standard_normal(b + (5, 3)),
        ],  # fmt: skip
        (True, False, True),
        0,
    ),
    "index_select": (
        lambda x, i: x.index_select(1, i),
        lambda r, b: [r.standard_normal(b + (3, 4)), _ints(r, 4, b + (5,))],
        (True, True),
        0,
    ),
    "index_select-unbatched-input": (
        lambda x, i: tg.index_select(x, 0, i),
        lambda r, b: [r.standard_normal((4, 3)), _ints(r, 4, b + (2,))],
        (False, True),
        0,
    ),
    "index_add": (
        lambda x, i, s: x.index_add(1, i, s, alpha=0.5),
        lambda r, b: [
            r.standard_normal(b + (3, 4)),
            _ints(r, 4, b + (6,)),
            r.standard_normal(b + (3, 6)),
        ],  # fmt: skip
        (True, True, True),
        2,
    ),
    "index_add-unbatched-index": (
        lambda x, i, s: tg.index_add(x, 0, i, s),
        lambda r, b: [
            r.standard_normal(b + (4, 3)),
            _ints(r, 4, (5,)),
            r.standard_normal((5, 3)),
        ],  # fmt: skip
        (True, False, False),
        0,
    ),
    "index_copy": (
        lambda x, i, s: x.index_copy(1, i, s),
        lambda r, b: [
            r.standard_normal(b + (3, 5)),
            _perm_index(r, b, (2,), 5, axis=0),
            r.standard_normal(b + (3, 2)),
        ],  # fmt: skip
        (True, True, True),
        2,
    ),
    "index_copy-unbatched-index": (
        lambda x, i, s: tg.index_copy(x, 0, i, s),
        lambda r, b: [r.standard_normal((4, 3)), np.array([3, 1]), r.standard_normal(b + (2, 3))],
        (False, False, True),
        2,
    ),
    "index_fill": (
        lambda x, i: x.index_fill(1, i, -1.5),
        lambda r, b: [r.standard_normal(b + (3, 5)), _ints(r, 5, b + (3,))],
        (True, True),
        0,
    ),
    "index_fill-tensor-value-batched-index": (
        lambda x, i, v: x.index_fill(1, i, v),
        lambda r, b: [r.standard_normal(b + (3, 5)), _ints(r, 5, b + (2,)), r.standard_normal(())],
        (True, True, False),
        2,
    ),
    "conv2d-same-padding": (
        lambda x, w: NF.conv2d(x, w, padding="same"),
        lambda r, b: [r.standard_normal(b + (2, 5, 5)), r.standard_normal(b + (3, 2, 3, 3))],
        (True, True),
        1,
    ),
    "index_fill-tensor-value": (
        lambda x, i, v: x.index_fill(0, i, v),
        lambda r, b: [r.standard_normal(b + (4, 3)), _ints(r, 4, (2,)), r.standard_normal(())],
        (True, False, False),
        0,
    ),
}


def _perm_index(rng, batch, shape, size, axis=-1):
    """Indices without repeats along ``axis`` (scatter/index_copy are then deterministic)."""
    out = np.empty(batch + shape, dtype=np.int64)
    flat = out.reshape(-1, *shape)
    for k in range(flat.shape[0]):
        base = np.moveaxis(flat[k], axis, -1)
        for pos in np.ndindex(base.shape[:-1]):
            base[pos] = rng.permutation(size)[: base.shape[-1]]
    return out


(
    test_rule_matches_a_loop,
    test_rule_under_nested_vmap,
    test_per_sample_gradients_through_the_rule,
) = rule_tests(CASES)


def test_embedding_with_a_batched_table_refuses_an_index_out_of_range():
    """Offsetting the indices by b·V must not let one element read another's rows."""
    idx = tg.tensor([0, 6])
    tables = tg.randn(2, 6, 3, dtype=tg.float64)
    with pytest.raises(IndexError, match="out of range"):
        F.vmap(lambda w: NF.embedding(idx, w))(tables)


def test_padding_idx_rows_get_no_per_sample_gradient():
    idx = tg.tensor([[1, 2, 1], [0, 1, 3]])
    table = tg.randn(4, 2, dtype=tg.float64)
    g = F.vmap(F.grad(lambda w, i: NF.embedding(i, w, padding_idx=1).sum()), in_dims=(None, 0))(
        table, idx
    )
    np.testing.assert_array_equal(g[:, 1].numpy(), 0.0)
    np.testing.assert_array_equal(g[0, 2].numpy(), [1.0, 1.0])


def test_modules_under_functional_call_and_vmap_use_the_rules():
    nn = tg.nn
    tg.manual_seed(0)
    model = nn.Sequential(
        nn.Conv1d(2, 3, 3), nn.MaxPool1d(2), nn.AdaptiveAvgPool1d(2), nn.Flatten(0), nn.Linear(6, 1)
    ).double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = tg.randn(4, 2, 9, dtype=tg.float64)

    def loss(p, xi):
        return tg.func.functional_call(model, p, (xi,)).sum()

    got = F.vmap(F.grad(loss), in_dims=(None, 0))(params, x)
    for b in range(4):
        want = F.grad(loss)(params, x[b])
        for key in params:
            np.testing.assert_allclose(got[key][b].numpy(), want[key].numpy(), rtol=1e-12)


def test_against_torch_func(torch_mod):
    torch = torch_mod
    rng = np.random.default_rng(7)
    xa, wa = rng.standard_normal((4, 2, 3, 8)), rng.standard_normal((4, 5, 3, 3))
    ia = rng.integers(0, 6, (4, 5))
    ta = rng.standard_normal((6, 3))

    def f(m, x, w, i, t):
        nf = m.nn.functional
        h = nf.max_pool1d(nf.conv1d(x, w, padding=1), 2)  # (2, 5, 4)
        e = nf.embedding(i, t, padding_idx=0)  # (5, 3)
        att = nf.scaled_dot_product_attention(h, h, h, is_causal=True)
        return (att.sum(-1) @ e).sum() + h.gather(
            -1, (i[:4] % 4).reshape(1, 1, 4).expand(2, 5, 4)
        ).sum()

    def per_sample(m, fn):
        return fn.vmap(fn.grad(lambda t, x, w, i: f(m, x, w, i, t)), in_dims=(None, 0, 0, 0))

    ours = per_sample(tg, F)(_tensor(ta), _tensor(xa), _tensor(wa), _tensor(ia))
    theirs = per_sample(torch, torch.func)(*(torch.tensor(a) for a in (ta, xa, wa, ia)))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)
