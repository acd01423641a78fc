"""Keyword options no other test passed a non-default value to, against torch: values and
gradients. Found by listing the parameters of every function PyTorch's op_db covers,
dropping those op_db's own samples pass (positionally or by name) and those a test calls
the function with (``name=`` inside the call); the most used functions first."""

import numpy as np
import pytest

import tapegrad as tg

INF = float("inf")


def _pos_def(m, a):
    return a @ a.mT + 3 * m.eye(a.shape[-1], dtype=a.dtype)


def _sym(m, a):
    return a + a.mT + 4 * m.eye(a.shape[-1], dtype=a.dtype)


def _normalize_rows(m, a):
    return m.nn.functional.normalize(a * m.tensor([[1.0], [0.0], [1.0]], dtype=a.dtype), eps=0.5)


# name: (fn(lib, *inputs), input shapes, differentiable)
ROWS = {
    # reductions: NumPy's spellings axis= / keepdims=
    "mean-axis-keepdims": (lambda m, a: m.mean(a, axis=1, keepdims=True), [(3, 4)], True),
    "amax-axis-keepdims": (lambda m, a: m.amax(a, axis=0, keepdims=True), [(3, 4)], True),
    "amin-axis-keepdims": (lambda m, a: m.amin(a, axis=1, keepdims=True), [(3, 4)], True),
    "logsumexp-axis-keepdims": (
        lambda m, a: m.logsumexp(a, axis=1, keepdims=True),
        [(3, 4)],
        True,
    ),
    "nansum-axis-keepdims": (lambda m, a: m.nansum(a, axis=0, keepdims=True), [(3, 4)], True),
    "nanmean-axis-keepdims": (lambda m, a: m.nanmean(a, axis=1, keepdims=True), [(3, 4)], True),
    "prod-keepdims": (lambda m, a: m.prod(a, 1, keepdims=True), [(3, 4)], True),
    "argmax-keepdims": (lambda m, a: m.argmax(a, 1, keepdims=True), [(3, 4)], False),
    "argmin-axis-keepdims": (lambda m, a: m.argmin(a, axis=0, keepdims=True), [(3, 4)], False),
    "any-axis-keepdims": (lambda m, a: m.any(a > 0.5, axis=1, keepdims=True), [(3, 4)], False),
    "all-keepdims": (lambda m, a: m.all(a > 0.2, 0, keepdims=True), [(3, 4)], False),
    # arithmetic and elementwise options
    "sub-alpha": (lambda m, a, b: m.sub(a, b, alpha=2.5), [(3, 4), (3, 4)], True),
    "rsub-alpha": (lambda m, a, b: m.rsub(a, b, alpha=-1.5), [(3, 4), (4,)], True),
    "nan_to_num-posinf-neginf": (
        lambda m, a: m.nan_to_num(
            a / (a - a.mean()).sign().clamp(min=0), nan=0.5, posinf=7.0, neginf=-7.0
        ),
        [(3, 4)],
        True,
    ),
    "leaky_relu-slope": (
        lambda m, a: m.nn.functional.leaky_relu(a - 0.5, negative_slope=0.3),
        [(3, 4)],
        True,
    ),
    "normalize-eps": (_normalize_rows, [(3, 4)], True),
    # shape and indexing ops
    "repeat_interleave-output_size": (
        lambda m, a: m.repeat_interleave(a, m.tensor([1, 2, 0]), dim=0, output_size=3),
        [(3, 2)],
        True,
    ),
    "diagonal-dims": (
        lambda m, a: m.linalg.diagonal(a, offset=1, dim1=0, dim2=2),
        [(3, 2, 4)],
        True,
    ),
    "diagonal_scatter-dims": (
        lambda m, a, b: m.diagonal_scatter(a, b, 0, dim1=1, dim2=2),
        [(2, 3, 3), (2, 3)],
        True,
    ),
    "unique_consecutive-dim": (
        lambda m, a: m.unique_consecutive((a > 0.5).long().repeat_interleave(2, 0), dim=0),
        [(3, 2)],
        False,
    ),
    "topk-unsorted": (lambda m, a: m.topk(a, 3, sorted=False)[0].sort().values, [(6,)], True),
    "searchsorted-out_int32": (
        lambda m, a, b: m.searchsorted(a.sort().values, b, out_int32=True),
        [(5,), (3,)],
        False,
    ),
    "nonzero_static-fill_value": (
        lambda m, a: m.nonzero_static(a > 0.5, size=20, fill_value=-3),
        [(3, 4)],
        False,
    ),
    "isin-invert": (
        lambda m, a, b: m.isin(a.round(decimals=1), b.round(decimals=1), invert=True),
        [(4,), (4,)],
        False,
    ),
    "isin-assume_unique": (
        lambda m, a: m.isin(m.tensor([1, 2, 3]), m.tensor([2, 5]), assume_unique=True),
        [(1,)],
        False,
    ),
    # linalg options
    "cond-p-svd": (
        lambda m, a: m.stack([m.linalg.cond(a, p) for p in (2, -2)]),
        [(3, 3)],
        True,
    ),
    # torch's own backward of these fails (an inverse it saved is changed in place)
    "cond-p-inverse": (
        lambda m, a: m.stack([m.linalg.cond(a, p) for p in ("fro", "nuc", INF, -INF, 1, -1)]),
        [(3, 3)],
        False,
    ),
    "lstsq-rcond": (
        lambda m, a, b: m.linalg.lstsq(a, b, rcond=1e-3, driver="gelsd").solution,
        [(4, 3), (4, 2)],
        True,
    ),
    "pinverse-rcond": (lambda m, a: m.pinverse(a, rcond=0.5), [(4, 3)], False),
    "qr-some-false": (
        lambda m, a: (lambda q, r: (q.shape[1], q @ r))(*a.qr(some=False)),
        [(4, 3)],
        False,  # torch: not differentiable when complete and nrows > ncols
    ),
    "svd-some-false-shapes": (
        lambda m, a: [s for t in a.svd(some=False) for s in t.shape],
        [(4, 3)],
        False,
    ),
    "lu_unpack-no-data": (
        lambda m, a: [t.shape for t in m.lu_unpack(*m.linalg.lu_factor(a), unpack_data=False)],
        [(3, 3)],
        False,
    ),
    "lu_unpack-no-pivots": (
        lambda m, a: m.lu_unpack(*m.linalg.lu_factor(a), unpack_pivots=False)[1:],
        [(3, 3)],
        True,
    ),
    "ldl_factor-hermitian": (
        lambda m, a: m.linalg.ldl_factor(_sym(m, a), hermitian=True)[0],
        [(3, 3)],
        False,
    ),
    "ldl_solve-hermitian": (
        lambda m, a, b: m.linalg.ldl_solve(*m.linalg.ldl_factor(_sym(m, a)), b, hermitian=True),
        [(3, 3), (3, 2)],
        False,
    ),
    # check_errors=True on a matrix the factorization takes: the same result as without
    "cholesky_ex-check_errors": (
        lambda m, a: m.linalg.cholesky_ex(_pos_def(m, a), check_errors=True),
        [(3, 3)],
        True,
    ),
    "inv_ex-check_errors": (
        lambda m, a: m.linalg.inv_ex(_pos_def(m, a), check_errors=True),
        [(2, 3, 3)],
        True,
    ),
    "lu_factor_ex-check_errors": (
        lambda m, a: m.linalg.lu_factor_ex(_pos_def(m, a), check_errors=True),
        [(3, 3)],
        False,
    ),
    "solve_ex-check_errors": (
        lambda m, a, b: m.linalg.solve_ex(_pos_def(m, a), b, left=False, check_errors=True),
        [(3, 3), (2, 3)],
        True,
    ),
    "ldl_factor_ex-check_errors": (
        lambda m, a: m.linalg.ldl_factor_ex(_sym(m, a), hermitian=True, check_errors=True),
        [(3, 3)],
        False,
    ),
    # nn functional options
    "bce_with_logits-weight": (
        lambda m, a, t, w: m.nn.functional.binary_cross_entropy_with_logits(
            a, t, weight=w.detach()
        ),
        [(3, 4), (3, 4), (4,)],
        True,
    ),
    "mse_loss-weight": (
        lambda m, a, t, w: m.nn.functional.mse_loss(a, t, weight=w),
        [(3, 4), (3, 4), (3, 4)],
        True,
    ),
    "triplet_margin-eps": (
        lambda m, a, p, n: m.nn.functional.triplet_margin_loss(a, p, n, eps=0.5, swap=True),
        [(3, 4), (3, 4), (3, 4)],
        True,
    ),
    "triplet_distance-reduction": (
        lambda m, a, p, n: m.nn.functional.triplet_margin_with_distance_loss(
            a, p, n, reduction="none"
        ),
        [(3, 4), (3, 4), (3, 4)],
        True,
    ),
    "unfold-dilation": (
        lambda m, a: m.nn.functional.unfold(a, 2, dilation=(2, 1), padding=1, stride=2),
        [(1, 2, 5, 4)],
        True,
    ),
    "conv3d-groups": (
        lambda m, a, w: m.nn.functional.conv3d(a, w, groups=2, padding=1),
        [(1, 4, 3, 3, 3), (2, 2, 2, 2, 2)],
        True,
    ),
    "max_pool3d-padding": (
        lambda m, a: m.nn.functional.max_pool3d(a, 2, padding=1, stride=2),
        [(1, 1, 3, 4, 3)],
        True,
    ),
    "mha-no-weights": (
        lambda m, q, w: m.nn.functional.multi_head_attention_forward(
            q,
            q,
            q,
            4,
            2,
            w,
            None,
            None,
            None,
            False,
            0.0,
            w[:4],
            None,
            need_weights=False,
        )[0],
        [(3, 1, 4), (12, 4)],
        True,
    ),
    "mha-separate-proj": (
        lambda m, q, a, b, c: m.nn.functional.multi_head_attention_forward(
            q,
            q,
            q,
            4,
            2,
            None,
            None,
            None,
            None,
            False,
            0.0,
            a,
            None,
            use_separate_proj_weight=True,
            q_proj_weight=a,
            k_proj_weight=b,
            v_proj_weight=c,
            average_attn_weights=False,
        ),
        [(3, 2, 4), (4, 4), (4, 4), (4, 4)],
        True,
    ),
    "mha-causal-padding": (
        lambda m, q, w: m.nn.functional.multi_head_attention_forward(
            q,
            q,
            q,
            4,
            2,
            w,
            None,
            None,
            None,
            False,
            0.0,
            w[:4],
            None,
            key_padding_mask=m.tensor([[False, False, True]]),
            attn_mask=m.ones(3, 3).triu(1) > 0,
            is_causal=True,
        ),
        [(3, 1, 4), (12, 4)],
        True,
    ),
}


def _inputs(lib, shapes, seed):
    rng = np.random.default_rng(seed)
    return [
        lib.tensor(rng.uniform(0.1, 1.0, size=s), dtype=lib.float64, requires_grad=True)
        for s in shapes
    ]


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _array(t):
    if isinstance(t, (tg.Tensor,)):
        return t.detach().numpy()
    if hasattr(t, "detach"):
        return t.detach().numpy()
    return np.asarray(t)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", sorted(ROWS))
def test_option_matches_torch(torch_mod, name):
    fn, shapes, differentiable = ROWS[name]
    theirs_in = _inputs(torch_mod, shapes, 7)
    ours_in = _inputs(tg, shapes, 7)
    want = _flat(fn(torch_mod, *theirs_in))
    got = _flat(fn(tg, *ours_in))
    assert len(got) == len(want), name
    for g, w in zip(got, want):
        if isinstance(w, torch_mod.Tensor):
            assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1], (g.dtype, w.dtype)
            assert tuple(g.shape) == tuple(w.shape), (g.shape, w.shape)
        np.testing.assert_allclose(_array(g), _array(w), rtol=1e-6, atol=1e-9)
    if not differentiable:
        return
    rng = np.random.default_rng(1)
    pairs = [(g, w) for g, w in zip(got, want) if isinstance(w, torch_mod.Tensor)]
    weights = [rng.uniform(-1, 1, size=tuple(w.shape)) for _, w in pairs]
    loss_w = sum((w * torch_mod.tensor(c)).sum() for (_, w), c in zip(pairs, weights))
    loss_g = sum((g * tg.tensor(c)).sum() for (g, _), c in zip(pairs, weights))
    gw = torch_mod.autograd.grad(loss_w, theirs_in, allow_unused=True)
    gg = tg.autograd.grad(loss_g, ours_in, allow_unused=True)
    for a, b in zip(gg, gw):
        if b is None:
            assert a is None or not a.numpy().any()
            continue
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-9)
