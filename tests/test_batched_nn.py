"""nn.functional in ONE batched backward (Note [Batched gradients]), as
tests/test_batched_coverage.py does for the op table: losses and layers are not registered
ops, so no table row ran their backward rules with a batch prefix. A rule that ignores the
prefix makes ``autograd.grad(..., is_grads_batched=True)``, vectorized Jacobians and
``jacrev`` fall back to one backward per row, and a batched branch in such a rule (cross
entropy's) then runs only to be thrown away: nothing checks what it computes. Each case here
must run batched and agree with one ordinary backward on a random combination of the rows
(``batched._try_batched``'s probe), except the calls in ALLOWED_FALLBACK, which must still
fall back (remove a call from it once its rules follow the Note).

The batch is 3 rows, and several cases have a size 3: a rule that drops the prefix then
returns a gradient of its input's shape, which the engine's shape check lets through (the
cross entropy bug below)."""

import zlib

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import batched

F = tg.nn.functional


def T(a):
    return tg.tensor(a)


def _cases():
    t5 = T(np.array([0, 2, 1, 1, 0]))
    w3 = T(np.array([1.0, 2.0, 3.0]))
    t4 = T(np.array([1.0, -1.0, 1.0, -1.0]))
    return {
        # (function of the inputs that require grad, their shapes or "p" for a probability)
        "cross_entropy-mean": (lambda x: F.cross_entropy(x, t5), [(5, 3)]),
        "cross_entropy-mean-ignore": (lambda x: F.cross_entropy(x, t5, ignore_index=2), [(5, 3)]),
        "cross_entropy-mean-c4": (lambda x: F.cross_entropy(x, t5), [(5, 4)]),
        "cross_entropy-sum": (lambda x: F.cross_entropy(x, t5, reduction="sum"), [(5, 3)]),
        "cross_entropy-none": (lambda x: F.cross_entropy(x, t5, reduction="none"), [(5, 3)]),
        "cross_entropy-weight": (lambda x: F.cross_entropy(x, t5, weight=w3), [(5, 3)]),
        "cross_entropy-smoothing": (
            lambda x: F.cross_entropy(x, t5, label_smoothing=0.2),
            [(5, 3)],
        ),
        "cross_entropy-probs": (lambda x: F.cross_entropy(x, T(np.full((5, 3), 0.3))), [(5, 3)]),
        "cross_entropy-1d": (lambda x: F.cross_entropy(x, T(np.array(1))), [(4,)]),
        "cross_entropy-1d-none": (
            lambda x: F.cross_entropy(x, T(np.array(1)), reduction="none") * x.sum(),
            [(4,)],
        ),
        "cross_entropy-4d-none": (
            lambda x: F.cross_entropy(x, T(np.zeros((2, 3, 3), np.int64)), reduction="none"),
            [(2, 4, 3, 3)],
        ),
        "nll_loss-weight": (lambda x: F.nll_loss(x, t5, weight=w3), [(5, 3)]),
        "nll_loss-none": (lambda x: F.nll_loss(x, t5, reduction="none"), [(5, 3)]),
        "mse_loss": (F.mse_loss, [(4, 3), (4, 3)]),
        "l1_loss": (F.l1_loss, [(4, 3), (4, 3)]),
        "smooth_l1_loss": (F.smooth_l1_loss, [(4, 3), (4, 3)]),
        "huber_loss": (F.huber_loss, [(4, 3), (4, 3)]),
        "binary_cross_entropy": (F.binary_cross_entropy, ["p", "p"]),
        "bce_with_logits-pos_weight": (
            lambda x, y: F.binary_cross_entropy_with_logits(x, y, pos_weight=w3),
            [(4, 3), "p"],
        ),
        "kl_div-batchmean": (lambda x, y: F.kl_div(x, y, reduction="batchmean"), [(4, 3), "p"]),
        "poisson_nll_loss": (F.poisson_nll_loss, [(4, 3), "p"]),
        "gaussian_nll_loss": (F.gaussian_nll_loss, [(4, 3), (4, 3), "p"]),
        "margin_ranking_loss": (lambda a, b: F.margin_ranking_loss(a, b, t4), [(4,), (4,)]),
        "hinge_embedding_loss": (lambda a: F.hinge_embedding_loss(a, t4), [(4,)]),
        "soft_margin_loss": (lambda a: F.soft_margin_loss(a, t4), [(4,)]),
        "multi_margin_loss": (lambda a: F.multi_margin_loss(a, t5[:4]), [(4, 3)]),
        "multilabel_margin_loss": (
            lambda a: F.multilabel_margin_loss(a, T(np.array([[0, 2, -1], [1, -1, 0]]))),
            [(2, 3)],
        ),
        "cosine_embedding_loss": (lambda a, b: F.cosine_embedding_loss(a, b, t4), [(4, 3)] * 2),
        "triplet_margin_loss": (F.triplet_margin_loss, [(4, 3)] * 3),
        "linear": (F.linear, [(4, 3), (2, 3), (2,)]),
        "bilinear": (F.bilinear, [(4, 3), (4, 2), (5, 3, 2), (5,)]),
        "batch_norm-train": (
            lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
            [(4, 3, 2), (3,), (3,)],
        ),
        "layer_norm": (lambda x, w, b: F.layer_norm(x, (3,), w, b), [(4, 3), (3,), (3,)]),
        "group_norm": (lambda x, w, b: F.group_norm(x, 2, w, b), [(2, 4, 3), (4,), (4,)]),
        "rms_norm": (lambda x, w: F.rms_norm(x, (3,), w), [(4, 3), (3,)]),
        "local_response_norm": (lambda x: F.local_response_norm(x, 2), [(2, 4, 3)]),
        "embedding": (lambda w: F.embedding(T(np.array([[0, 2], [1, 1]])), w), [(3, 4)]),
        "embedding_bag": (
            lambda w: F.embedding_bag(T(np.array([0, 2, 1, 1])), w, T(np.array([0, 2]))),
            [(3, 4)],
        ),
        "interpolate-bilinear": (
            lambda x: F.interpolate(x, size=(5, 4), mode="bilinear"),
            [(1, 2, 3, 3)],
        ),
        "interpolate-bicubic": (
            lambda x: F.interpolate(x, size=(5, 4), mode="bicubic"),
            [(1, 2, 3, 3)],
        ),
        "grid_sample": (lambda x, g: F.grid_sample(x, g, align_corners=False), [(1, 2, 3, 3), "g"]),
        "affine_grid": (
            lambda th: F.affine_grid(th, (1, 2, 3, 3), align_corners=False),
            [(1, 2, 3)],
        ),
        "pad-reflect": (lambda x: F.pad(x, (1, 2), mode="reflect"), [(2, 3, 4)]),
        "scaled_dot_product_attention-causal": (
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
            [(2, 3, 4)] * 3,
        ),
        "pdist": (F.pdist, [(4, 3)]),
        "prelu": (F.prelu, [(4, 3), (3,)]),
        # rules that do not follow the Note (ALLOWED_FALLBACK)
        "conv2d": (lambda x, w: F.conv2d(x, w, padding=1), [(2, 3, 4, 4), (3, 3, 3, 3)]),
        "conv_transpose1d": (
            lambda x, w: F.conv_transpose1d(x, w, stride=2),
            [(2, 3, 4), (3, 2, 3)],
        ),
        "max_pool2d": (lambda x: F.max_pool2d(x, 2), [(2, 3, 4, 4)]),
        "avg_pool1d": (lambda x: F.avg_pool1d(x, 2), [(2, 3, 6)]),
        "unfold": (lambda x: F.unfold(x, 2), [(1, 2, 3, 3)]),
        "ctc_loss": (
            lambda x: F.ctc_loss(x.log_softmax(2), T(np.array([[1, 2], [1, 1]])), (5, 5), (2, 2)),
            [(5, 2, 3)],
        ),
    }


# call -> why its backward falls back to one pass per row (speed, not correctness)
ALLOWED_FALLBACK = {
    "conv2d": "the convolution kernels' backward (nn/_conv_ops.py) takes 4-D gradients",
    "conv_transpose1d": "the convolution kernels' backward takes 4-D gradients",
    "max_pool2d": "the pooling kernels' backward transposes fixed axes",
    "avg_pool1d": "the pooling kernels' backward transposes fixed axes",
    "unfold": "im2col's backward (col2im) takes 4-D gradients",
    "ctc_loss": "its alpha-beta backward (nn/_ctc.py) is written for one gradient",
}
CASES = _cases()


def _input(kind, rng):
    if kind == "p":
        return rng.uniform(0.1, 0.9, (4, 3))
    if kind == "g":
        return rng.uniform(-1, 1, (1, 2, 2, 2))
    return rng.standard_normal(kind)


def _runs_batched(name, create_graph):
    fn, kinds = CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    xs = tuple(tg.tensor(_input(k, rng), requires_grad=True) for k in kinds)
    out = fn(*xs)
    rows = [tg.tensor(rng.standard_normal((3,) + tuple(out.shape)))]
    return batched._try_batched((out,), xs, rows, 3, create_graph) is not None


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name", list(CASES))
def test_nn_functional_runs_in_one_batched_backward(name, create_graph):
    # create_graph: the rules' differentiable branch (cross entropy's softmax of x), batched
    if name in ALLOWED_FALLBACK:
        assert not _runs_batched(name, create_graph), (
            f"{name} runs batched now: remove it from ALLOWED_FALLBACK"
        )
    else:
        assert _runs_batched(name, create_graph), (
            f"{name}: a backward rule does not follow Note [Batched gradients] (or its batched "
            "result disagrees with an ordinary backward)"
        )


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize(
    "kwargs", [{}, {"reduction": "sum"}, {"reduction": "none"}, {"weight": [1.0, 2.0, 3.0]}]
)
@pytest.mark.parametrize("batch", [2, 3])
def test_cross_entropy_gradients_of_a_batch_of_upstream_gradients_match_torch(
    torch_mod, batch, kwargs, create_graph
):
    # A batch of 3 upstream gradients for 3 classes raised NumPy's "shape-mismatch for sum":
    # cross entropy's rule dropped the batch prefix, the engine's shape check let the (5, 3)
    # gradient through, and the batched pass's probe then failed on it (now the rule keeps the
    # prefix, and the probe refuses a gradient without it).
    torch = torch_mod
    rng = np.random.default_rng(batch)
    x, t = rng.standard_normal((5, 3)), np.array([0, 2, 1, 1, 0])
    v = rng.standard_normal((batch,) + ((5,) if kwargs.get("reduction") == "none" else ()))
    grads = []
    for lib in (torch, tg):
        kw = {
            k: lib.tensor(w, dtype=lib.float64) if k == "weight" else w for k, w in kwargs.items()
        }
        xt = lib.tensor(x, requires_grad=True)
        loss = lib.nn.functional.cross_entropy(xt, lib.tensor(t), **kw)
        (g,) = lib.autograd.grad(
            loss, xt, lib.tensor(v), is_grads_batched=True, create_graph=create_graph
        )
        assert tuple(g.shape) == (batch, 5, 3)
        assert g.requires_grad == create_graph
        grads.append(np.asarray(g.detach().numpy()))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-10, atol=1e-14)


def test_a_batched_gradient_without_its_prefix_falls_back_to_rows():
    # _probe_agrees: a rule returning a gradient of the input's shape in a batched pass (the
    # batch size equal to a size of the input) is refused, so the pass falls back to one
    # backward per row, instead of failing in the probe.
    def forward(x):
        out = x.sum()

        def backward(g):
            return (g * tg.ones(3, 3, dtype=tg.float64),)  # (3,) * (3, 3): no prefix

        return tg.autograd.graph.make_result(out._data, (x,), backward, "NoPrefixBackward")

    x = tg.tensor(np.ones((3, 3)), requires_grad=True)
    rows = [tg.tensor(np.array([1.0, 2.0, 3.0]))]
    assert batched._try_batched((forward(x),), (x,), rows, 3, False) is None
    (g,) = tg.autograd.grad(forward(x), x, rows[0], is_grads_batched=True)
    np.testing.assert_array_equal(
        g.numpy(), np.array([1.0, 2.0, 3.0])[:, None, None] * np.ones((3, 3, 3))
    )
