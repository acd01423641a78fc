"""Bad input whose message formats a number or a shape: the raise sites no other error
table reached (found by scanning src/ for such raises, Note [Checked messages]), one row
each, checked against torch's exception type and, row by row, the message."""

import pytest

import tapegrad as tg

from ._message_check import check_message
from ._uncovered_common import _lce


def _rows(lib):
    F = lib.nn.functional
    i64 = lib.int64
    f64 = lib.float64
    la = lib.linalg
    return {
        # reductions' and dim-taking ops' dim checks (ops/_util.py)
        "sum-dim-range": lambda: lib.ones(2, 3).sum(2),
        "sum-dim-negative": lambda: lib.ones(2, 3).sum(-3),
        "mean-dim-repeated": lambda: lib.ones(2, 3).mean((1, 1)),
        "amax-dim-range": lambda: lib.amax(lib.ones(2, 3, 4), 3),
        "softmax-dim-range": lambda: lib.softmax(lib.ones(2, 3), 5),
        "cumsum-dim-range": lambda: lib.cumsum(lib.ones(4), 1),
        "aminmax-empty-dim": lambda: lib.aminmax(lib.ones(2, 0), dim=1),
        "std-dim-range": lambda: lib.std(lib.ones(3, 2), 2),
        # shape ops
        "reshape-size": lambda: lib.ones(2, 3).reshape(4, 2),
        "reshape-two-inferred": lambda: lib.ones(2, 3).reshape(-1, -1),
        "reshape-negative": lambda: lib.ones(2, 3).reshape(-2, 3),
        "reshape-empty-inferred": lambda: lib.ones(0, 3).reshape(-1, 0),
        "permute-count": lambda: lib.ones(2, 3, 4).permute(0, 1),
        "expand-fewer": lambda: lib.ones(2, 3).expand(3),
        "unflatten-sizes": lambda: lib.ones(2, 6).unflatten(1, (4, 2)),
        "mT-1d": lambda: lib.ones(3).mT,
        "narrow-range": lambda: lib.narrow(lib.ones(2, 5), 1, 3, 4),
        "narrow-start": lambda: lib.narrow(lib.ones(2, 5), 1, -6, 1),
        "cat-sizes": lambda: lib.cat([lib.ones(2, 3), lib.ones(3, 4)]),
        "stack-sizes": lambda: lib.stack([lib.ones(2, 3), lib.ones(2, 4)]),
        "split-sizes": lambda: lib.split(lib.ones(5, 2), [2, 2]),
        "pad-odd": lambda: F.pad(lib.ones(2, 3), (1, 1, 1)),
        "pad-reflect-large": lambda: F.pad(lib.ones(1, 1, 3), (3, 3), mode="reflect"),
        "pad-circular-large": lambda: F.pad(lib.ones(1, 1, 3), (4, 4), mode="circular"),
        "roll-no-dims": lambda: lib.roll(lib.ones(2, 3), (1, 2)),
        "H-3d": lambda: lib.ones(2, 2, 2).H,
        "broadcast_to-size": lambda: lib.broadcast_to(lib.ones(2, 3), (4, 3, 2)),
        "combinations-2d": lambda: lib.combinations(lib.ones(2, 2)),
        "cartesian_prod-2d": lambda: lib.cartesian_prod(lib.ones(2), lib.ones(2, 2)),
        "diag-3d": lambda: lib.diag(lib.ones(2, 2, 2)),
        "trace-1d": lambda: lib.trace(lib.ones(3)),
        "select_scatter-index": lambda: lib.select_scatter(lib.ones(2, 3), lib.ones(2), 1, 5),
        "slice_scatter-size": lambda: lib.slice_scatter(lib.ones(4, 3), lib.ones(3, 3), 0, 0, 2),
        "as_strided-lengths": lambda: lib.as_strided(lib.ones(6), (2, 3), (1,)),
        "as_strided-storage": lambda: lib.as_strided(lib.ones(6), (3, 3), (3, 1)),
        "fill_-1d-value": lambda: lib.zeros(3).fill_(lib.ones(2)),
        "index_copy-source": lambda: lib.zeros(3, 2).index_copy(
            0, lib.tensor([0, 1]), lib.ones(2, 3)
        ),
        "gather-ndim": lambda: lib.gather(lib.ones(2, 3), 1, lib.zeros(2, dtype=i64)),
        "gather-range": lambda: lib.gather(lib.ones(2, 3), 1, lib.full((2, 1), 3, dtype=i64)),
        "masked_fill-broadcast": lambda: lib.ones(2, 3).masked_fill(lib.ones(3, 2) > 0, 0.0),
        "index_select-0d": lambda: lib.index_select(lib.tensor(1.0), 0, lib.tensor([0, 0])),
        "getitem-range": lambda: lib.ones(2, 3)[:, 3],
        "getitem-float-index": lambda: lib.ones(2, 3)[lib.ones(1)],
        "copy_-shape": lambda: lib.zeros(2, 3).copy_(lib.ones(4)),
        "add_-broadcast-self": lambda: lib.zeros(3).add_(lib.ones(2, 3)),
        "diff-prepend": lambda: lib.diff(lib.ones(2, 3), prepend=lib.ones(3)),
        "gradient-edge-order": lambda: lib.gradient(lib.ones(1, 3), dim=0),
        "trapezoid-x-count": lambda: lib.trapezoid(lib.ones(2, 3), lib.ones(4)),
        # products and linalg: square and batch checks
        "matmul-0d": lambda: lib.matmul(lib.tensor(1.0), lib.ones(2)),
        "matmul-inner": lambda: lib.matmul(lib.ones(2, 3), lib.ones(4, 2)),
        "mm-1d": lambda: lib.mm(lib.ones(2), lib.ones(2, 2)),
        "bmm-2d": lambda: lib.bmm(lib.ones(2, 2), lib.ones(2, 2, 2)),
        "outer-2d": lambda: lib.outer(lib.ones(2, 2), lib.ones(2)),
        "tensordot-sizes": lambda: lib.tensordot(lib.ones(2, 3), lib.ones(4, 2), ([1], [0])),
        "tensordot-int-dims": lambda: lib.tensordot(lib.ones(2, 3), lib.ones(3, 2), 3),
        "multi_dot-one": lambda: la.multi_dot([lib.ones(2, 2)]),
        "multi_dot-3d": lambda: la.multi_dot([lib.ones(2, 2), lib.ones(2, 2, 2), lib.ones(2, 2)]),
        "matrix_power-nonsquare": lambda: lib.matrix_power(lib.ones(2, 3), 2),
        "cdist-1d": lambda: lib.cdist(lib.ones(3), lib.ones(2, 3)),
        "cdist-columns": lambda: lib.cdist(lib.ones(2, 3), lib.ones(2, 4)),
        "cdist-columns-batch": lambda: lib.cdist(lib.ones(2, 3, 4), lib.ones(2, 3, 5)),
        "mm-inner": lambda: lib.mm(lib.ones(2, 3), lib.ones(4, 2)),
        "mv-inner": lambda: lib.mv(lib.ones(2, 3), lib.ones(4)),
        "linalg.inv-nonsquare": lambda: la.inv(lib.ones(2, 3)),
        "linalg.det-nonsquare": lambda: la.det(lib.ones(3, 2)),
        "linalg.solve-rows": lambda: la.solve(lib.eye(2), lib.ones(3)),
        "linalg.cholesky-nonsquare": lambda: la.cholesky(lib.ones(2, 3)),
        "linalg.eigh-nonsquare": lambda: la.eigh(lib.ones(2, 3)),
        "linalg.cond-1d": lambda: la.cond(lib.ones(3)),
        "linalg.lu_solve-shapes": lambda: la.lu_solve(*la.lu_factor(lib.eye(2)), lib.ones(3, 1)),
        "lu_unpack-pivots": lambda: lib.lu_unpack(lib.eye(3), lib.ones(2, dtype=lib.int32)),
        "ldl_solve-pivots": lambda: la.ldl_solve(
            lib.eye(2).expand(3, 2, 2), lib.ones(2, 2, dtype=lib.int32), lib.ones(3, 2, 1)
        ),
        "householder-wide": lambda: la.householder_product(lib.ones(2, 3), lib.ones(2)),
        "geqrf-1d": lambda: lib.geqrf(lib.ones(3)),
        "ormqr-tau": lambda: lib.ormqr(lib.ones(3, 2), lib.ones(3), lib.ones(3, 2)),
        "cholesky_solve-rows": lambda: lib.cholesky_solve(lib.ones(3, 1), lib.eye(2)),
        "triangular_solve-1d": lambda: lib.triangular_solve(lib.ones(2), lib.eye(2)),
        "renorm-1d": lambda: lib.renorm(lib.ones(3), 2, 0, 1.0),
        "cov-3d": lambda: lib.cov(lib.ones(2, 2, 2)),
        "histogramdd-1d": lambda: lib.histogramdd(lib.ones(3), bins=2),
        "bucketize-2d": lambda: lib.bucketize(lib.ones(3), lib.ones(2, 2)),
        # nn functional: rank, size and target checks
        "linear-shapes": lambda: F.linear(lib.ones(2, 3), lib.ones(4, 2)),
        "conv2d-groups": lambda: F.conv2d(lib.ones(1, 4, 5, 5), lib.ones(2, 3, 3, 3), groups=2),
        "conv2d-too-small": lambda: F.conv2d(lib.ones(1, 1, 2, 2), lib.ones(1, 1, 3, 3)),
        "conv2d-5d": lambda: F.conv2d(lib.ones(1, 1, 1, 4, 4), lib.ones(1, 1, 3, 3)),
        "batch_norm-one-value": lambda: F.batch_norm(lib.ones(1, 3), None, None, training=True),
        "layer_norm-shape": lambda: F.layer_norm(lib.ones(2, 3), (2,)),
        "group_norm-channels": lambda: F.group_norm(lib.ones(2, 3, 4), 2),
        "glu-odd": lambda: F.glu(lib.ones(2, 3)),
        "pdist-3d": lambda: F.pdist(lib.ones(2, 2, 2)),
        "dropout1d-4d": lambda: F.dropout1d(lib.ones(1, 1, 2, 2)),
        "channel_shuffle-2d": lambda: F.channel_shuffle(lib.ones(2, 4), 2),
        "pixel_shuffle-2d": lambda: F.pixel_shuffle(lib.ones(4, 4), 2),
        "pixel_unshuffle-2d": lambda: F.pixel_unshuffle(lib.ones(4, 4), 2),
        "grid_sample-3d": lambda: F.grid_sample(
            lib.ones(1, 2, 2), lib.zeros(1, 2, 2), align_corners=False
        ),
        "grid_sample-grid-shape": lambda: F.grid_sample(
            lib.ones(1, 1, 2, 2), lib.zeros(2, 2, 2, 2), align_corners=False
        ),
        "cross_entropy-target": lambda: F.cross_entropy(lib.ones(2, 3), lib.tensor([0, 1, 2])),
        "cross_entropy-3d-target": lambda: F.cross_entropy(
            lib.ones(2, 3, 4), lib.zeros(2, 5, dtype=i64)
        ),
        "bce-sizes": lambda: F.binary_cross_entropy(lib.ones(2) / 2, lib.ones(3)),
        "bce_logits-sizes": lambda: F.binary_cross_entropy_with_logits(lib.ones(2), lib.ones(3)),
        "kl_div-sizes": lambda: F.kl_div(lib.ones(2), lib.ones(3)),
        "mse-sizes": lambda: F.mse_loss(lib.ones(2, 3), lib.ones(4, 3)),
        "soft_margin-sizes": lambda: F.soft_margin_loss(lib.ones(2, 3), lib.ones(3, 3)),
        "nll_loss-3d-target": lambda: F.nll_loss(lib.ones(2, 3, 4), lib.zeros(2, 5, dtype=i64)),
        "sdpa-1d": lambda: F.scaled_dot_product_attention(lib.ones(4), lib.ones(4), lib.ones(4)),
        "sdpa-features": lambda: F.scaled_dot_product_attention(
            lib.ones(1, 2, 4), lib.ones(1, 2, 3), lib.ones(1, 2, 4)
        ),
        "sdpa-batch": lambda: F.scaled_dot_product_attention(
            lib.ones(2, 2, 4), lib.ones(3, 2, 4), lib.ones(3, 2, 4)
        ),
        "sdpa-mask-shape": lambda: F.scaled_dot_product_attention(
            lib.ones(1, 2, 4), lib.ones(1, 3, 4), lib.ones(1, 3, 4), lib.zeros(2, 2) > 0
        ),
        "mha-2d-mask": lambda: lib.nn.MultiheadAttention(4, 2)(
            lib.ones(3, 1, 4), lib.ones(3, 1, 4), lib.ones(3, 1, 4), attn_mask=lib.zeros(2, 3)
        ),
        "max_unpool2d-index": lambda: F.max_unpool2d(
            lib.ones(1, 1, 2, 2), lib.full((1, 1, 2, 2), 20, dtype=i64), 2
        ),
        "max_unpool2d-index-edge": lambda: F.max_unpool2d(
            lib.ones(1, 1, 2, 2), lib.full((1, 1, 2, 2), 16, dtype=i64), 2
        ),
        "native_group_norm-shape": lambda: lib.native_group_norm(
            lib.ones(2, 4, 3), None, None, 2, 4, 5, 2, 1e-5
        ),
        "local_response_norm-3d-ok": lambda: F.local_response_norm(lib.ones(2), 2),
        "fold-blocks": lambda: F.fold(lib.ones(1, 4, 5), (3, 3), 2),
        "interpolate-bilinear-3d": lambda: F.interpolate(
            lib.ones(1, 1, 4), size=2, mode="bilinear"
        ),
        "upsample_bilinear-3d": lambda: F.upsample_bilinear(lib.ones(1, 1, 4), size=2),
        "RNN-input-size": lambda: lib.nn.RNN(2, 3)(lib.ones(4, 1, 5)),
        "RNN-4d": lambda: lib.nn.RNN(2, 3)(lib.ones(4, 1, 1, 2)),
        "GRU-hidden-size": lambda: lib.nn.GRU(2, 3)(lib.ones(4, 1, 2), lib.zeros(1, 1, 4)),
        "LSTM-hx-rank": lambda: lib.nn.LSTM(2, 3)(
            lib.ones(4, 1, 2), (lib.zeros(1, 3), lib.zeros(1, 3))
        ),
        "RNN-hx-rank": lambda: lib.nn.RNN(2, 3)(lib.ones(4, 1, 2), lib.zeros(1, 3)),
        "ConvTranspose2d-output-size": lambda: lib.nn.ConvTranspose2d(1, 1, 3, stride=2)(
            lib.ones(1, 1, 3, 3), output_size=[12, 12]
        ),
        "BatchNorm1d-4d": lambda: lib.nn.BatchNorm1d(2)(lib.ones(1, 2, 2, 2)),
        "orthogonal-1d": lambda: lib.nn.utils.parametrizations.orthogonal(_with_bias_weight(lib)),
        "weight_norm-dim": lambda: lib.nn.utils.parametrizations.weight_norm(
            lib.nn.Linear(2, 2), dim=3
        ),
        # the second scan: dtype pairs, argument counts, einsum, in-place, norms, ...
        "mm-dtypes": lambda: lib.mm(lib.ones(2, 2), lib.ones(2, 2, dtype=f64)),
        "matmul-dtypes": lambda: lib.matmul(lib.ones(3, 2, 2), lib.ones(2, 2, dtype=f64)),
        "baddbmm-dtypes": lambda: lib.baddbmm(
            lib.ones(2, 2, 2), lib.ones(2, 2, 2, dtype=f64), lib.ones(2, 2, 2)
        ),
        "multi_dot-dtypes": lambda: la.multi_dot([lib.ones(2, 2), lib.ones(2, 2, dtype=f64)]),
        "elu-keyword": lambda: F.elu(lib.ones(2), beta=1.0),
        "sum_to_size-size": lambda: lib.ones(2, 3).sum_to_size(4),
        "diff-0d": lambda: lib.diff(lib.tensor(1.0)),
        "gradient-spacing-count": lambda: lib.gradient(lib.ones(3, 3), spacing=[1.0, 2.0, 3.0]),
        "einsum-operand-count": lambda: lib.einsum("ij,jk", lib.ones(2, 2)),
        "einsum-subscript-count": lambda: lib.einsum("ijk", lib.ones(2, 2)),
        "einsum-repeated-size": lambda: lib.einsum("ii", lib.ones(2, 3)),
        "householder-1d": lambda: la.householder_product(lib.ones(3), lib.ones(1)),
        "mul_-broadcast-self": lambda: lib.zeros(3).mul_(lib.ones(2, 3)),
        "add_-expanded": lambda: lib.ones(3).expand(2, 3).add_(1.0),
        "setitem-range": lambda: lib.ones(2, 3).__setitem__(5, 1.0),
        "index_put-range": lambda: lib.ones(3).index_put((lib.tensor([5]),), lib.tensor(1.0)),
        "vector_norm-empty-inf": lambda: la.vector_norm(lib.ones(2, 0), float("inf"), dim=1),
        "vector_norm-empty-negative": lambda: la.vector_norm(lib.ones(0, 3), -1.0, dim=0),
        "norm-fro-3-dims": lambda: lib.norm(lib.ones(2, 2, 2), "fro", dim=(0, 1, 2)),
        "bincount-2d": lambda: lib.bincount(lib.tensor([[1, 2]])),
        "sdpa-gqa": lambda: F.scaled_dot_product_attention(
            lib.ones(1, 3, 2, 4), lib.ones(1, 2, 2, 4), lib.ones(1, 2, 2, 4), enable_gqa=True
        ),
        "grid_sample-5d-grid": lambda: F.grid_sample(
            lib.ones(1, 1, 2, 2), lib.zeros(1, 2, 2, 2, 3), align_corners=False
        ),
        "lce-in-features": lambda: _lce(lib, lib.ones(2, 3), lib.ones(4, 2), lib.tensor([0, 1])),
        "max_unpool2d-output-size-range": lambda: F.max_unpool2d(
            lib.ones(1, 1, 2, 2), lib.zeros(1, 1, 2, 2, dtype=i64), 2, output_size=[9, 9]
        ),
        "InstanceNorm1d-4d": lambda: lib.nn.InstanceNorm1d(2)(lib.ones(1, 2, 2, 2)),
        "BatchNorm2d-3d": lambda: lib.nn.BatchNorm2d(2)(lib.ones(2, 2, 2)),
        # check_errors=True on a singular matrix
        "inv_ex-check_errors": lambda: la.inv_ex(lib.zeros(2, 2), check_errors=True),
        "inv_ex-check_errors-batch": lambda: la.inv_ex(
            lib.stack([lib.eye(3), lib.tensor([[1.0, 2, 3], [2, 4, 6], [0, 0, 1]])]),
            check_errors=True,
        ),
        "cholesky_ex-check_errors-minor": lambda: la.cholesky_ex(
            lib.tensor([[1.0, 0, 0], [0, 1, 0], [0, 0, -1]]), check_errors=True
        ),
        "cholesky_ex-check_errors-batch": lambda: la.cholesky_ex(
            lib.stack([lib.eye(2), lib.eye(2), -lib.eye(2)]), check_errors=True
        ),
        "lu_factor_ex-check_errors": lambda: la.lu_factor_ex(lib.zeros(2, 2), check_errors=True),
        "solve_ex-check_errors": lambda: la.solve_ex(
            lib.zeros(2, 2), lib.ones(2), check_errors=True
        ),
    }


def _with_bias_weight(lib):
    m = lib.nn.Linear(2, 2)
    m.weight = lib.nn.Parameter(lib.ones(2))
    return m


_SDPA = {"names": ("scaled_dot_product_attention",)}
# the op's other spellings, and the checks a row is excused from (with the reason)
MESSAGES: dict = {
    "sdpa-1d": _SDPA,
    "sdpa-batch": _SDPA,
    "sdpa-features": _SDPA,
    "sdpa-mask-shape": _SDPA,
    "sdpa-gqa": _SDPA,
    # index_put with an index out of range is setitem's check
    "index_put-range": {"names": ("setitem",)},
    "getitem-range": {"names": ("index",)},
    "getitem-float-index": {"names": ("index",)},
    "broadcast_to-size": {"names": ("expand",)},
    "grid_sample-3d": {
        "waive": {
            "ranks": "torch checks the grid's last dim first",
            "numbers": "torch checks the grid's last dim first",
        }
    },
    "tensordot-int-dims": {"waive": {"numbers": "0 in '0 <= dims', the lower bound"}},
    # ours omits torch's "(for an input of torch.Size([3, 3]))" (nn/conv_more.py: reported)
    "ConvTranspose2d-output-size": {"waive": {"numbers": "ours omits the input's spatial size"}},
}

_CASES = sorted(_rows(tg))


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("case", _CASES)
def test_bad_input_message_names_op_shapes_and_torchs_numbers(torch_mod, case):
    with pytest.raises(Exception) as theirs:
        _rows(torch_mod)[case]()
    with pytest.raises(Exception) as ours:
        _rows(tg)[case]()
    want = theirs.type
    same_name = ours.type.__name__.lstrip("_") == want.__name__.lstrip("_")
    assert issubclass(ours.type, want) or same_name, (ours.type, want, str(ours.value))
    check_message(case, ours.value, theirs.value, **MESSAGES.get(case, {}))
