"""Bad input to ops/ and nn/ raises the exception type torch raises: one table, one test
per row, on lines no other test executed (found with a line map of the whole suite)."""

import pytest

import tapegrad as tg

from ._message_check import check_message
from ._uncovered_common import _lce, _mha, _with_attribute


def _errors(lib):
    F = lib.nn.functional
    i64 = lib.int64
    x4 = lib.ones(1, 2, 5, 5)
    k = lib.ones(3, 2, 3, 3)
    return {
        # ops/indexing.py
        "index_select-2d-index": lambda: lib.index_select(
            lib.ones(3, 3), 0, lib.zeros(1, 1, dtype=i64)
        ),
        "gather-index-larger": lambda: lib.gather(lib.ones(2, 2), 0, lib.zeros(2, 3, dtype=i64)),
        "take_along_dim-ndim": lambda: lib.take_along_dim(
            lib.ones(2, 2), lib.zeros(2, dtype=i64), 0
        ),
        "take_along_dim-broadcast": lambda: lib.take_along_dim(
            lib.ones(2, 3), lib.zeros(1, 2, dtype=i64), 0
        ),
        "scatter-src-small": lambda: lib.zeros(3, 3).scatter(
            0, lib.zeros(2, 2, dtype=i64), lib.ones(1, 2)
        ),
        "masked_fill-1d-value": lambda: lib.zeros(3).masked_fill(lib.ones(3) > 0, lib.ones(2)),
        "index_put-dtype": lambda: lib.zeros(3).index_put(
            (lib.tensor([0]),), lib.ones(1, dtype=lib.float64)
        ),
        "index_put-accumulate-dtype": lambda: lib.zeros(3).index_put(
            (lib.tensor([0]),), lib.ones(1, dtype=lib.int64), accumulate=True
        ),
        "put-dtype": lambda: lib.zeros(3).put(lib.tensor([0]), lib.ones(1, dtype=lib.float64)),
        "index_put-shape": lambda: lib.zeros(3, 3).index_put((lib.tensor([0, 1]),), lib.ones(2, 2)),
        # ops/index_ops.py
        "index_add-2d-index": lambda: lib.zeros(3).index_add(
            0, lib.zeros(1, 1, dtype=i64), lib.ones(1, 1)
        ),
        "index_fill-1d-value": lambda: lib.zeros(3).index_fill(0, lib.tensor([0]), lib.ones(2)),
        "scatter_reduce-kind": lambda: lib.zeros(3).scatter_reduce(
            0, lib.tensor([0]), lib.ones(1), "maximum"
        ),
        "scatter_reduce-dtype": lambda: lib.zeros(3).scatter_reduce(
            0, lib.tensor([0]), lib.ones(1, dtype=lib.float64), "sum"
        ),
        "index_reduce-kind": lambda: lib.zeros(3).index_reduce(
            0, lib.tensor([0]), lib.ones(1), "sum"
        ),
        "masked_select-broadcast": lambda: lib.masked_select(lib.ones(3), lib.ones(2) > 0),
        "masked_scatter-broadcast": lambda: lib.zeros(3).masked_scatter(
            lib.ones(2) > 0, lib.ones(3)
        ),
        "masked_scatter-short-source": lambda: lib.zeros(3).masked_scatter(
            lib.ones(3) > 0, lib.ones(2)
        ),
        # nn/_layers_functional.py
        "group_norm-1d": lambda: F.group_norm(lib.ones(4), 2),
        "instance_norm-2d": lambda: F.instance_norm(lib.ones(2, 3)),
        "instance_norm-one-element": lambda: F.instance_norm(lib.ones(2, 3, 1)),
        "rms_norm-shape": lambda: F.rms_norm(lib.ones(2, 3), (2,)),
        "local_response_norm-2d": lambda: F.local_response_norm(lib.ones(2, 3), 2),
        "pixel_unshuffle-size": lambda: F.pixel_unshuffle(lib.ones(1, 1, 3, 4), 2),
        "bilinear-shapes": lambda: F.bilinear(lib.ones(2, 3), lib.ones(2, 4), lib.ones(5, 3, 3)),
        "embedding_bag-out-of-range": lambda: F.embedding_bag(lib.tensor([[0, 7]]), lib.ones(5, 3)),
        # nn/_mha.py
        "mha-int-mask": lambda: _mha(lib, attn_mask=lib.zeros(3, 3, dtype=i64)),
        "mha-4d-query": lambda: _mha(lib, query=lib.ones(1, 3, 2, 4)),
        "mha-embed-dim": lambda: _mha(lib, embed_dim_to_check=6),
        "mha-heads": lambda: _mha(lib, num_heads=3),
        "mha-key-value": lambda: _mha(lib, value=lib.ones(2, 2, 4)),
        "mha-3d-mask": lambda: _mha(lib, attn_mask=lib.zeros(2, 3, 3)),
        "mha-4d-mask": lambda: _mha(lib, attn_mask=lib.zeros(1, 4, 3, 3)),
        "mha-bias-k-only": lambda: _mha(lib, bias_k=lib.ones(1, 1, 4)),
        "mha-padding-mask": lambda: _mha(lib, key_padding_mask=lib.zeros(2, 2) > 0),
        "mha-separate-none": lambda: _mha(lib, use_separate_proj_weight=True),
        # nn/functional.py
        "conv2d-bias-shape": lambda: F.conv2d(x4, k, lib.ones(2)),
        "conv2d-same-strided": lambda: F.conv2d(x4, k, padding="same", stride=2),
        "conv2d-padding-triple": lambda: F.conv2d(x4, k, padding=(1, 1, 1)),
        "conv2d-stride-triple": lambda: F.conv2d(x4, k, stride=(1, 1, 1)),
        "conv2d-padding-string": lambda: F.conv2d(x4, k, padding="full"),
        "conv3d-same-strided": lambda: F.conv3d(
            lib.ones(1, 2, 4, 4, 4), lib.ones(1, 2, 3, 3, 3), padding="same", stride=2
        ),
        "conv3d-padding-string": lambda: F.conv3d(
            lib.ones(1, 2, 4, 4, 4), lib.ones(1, 2, 3, 3, 3), padding="full"
        ),
        "batch_norm-1d": lambda: F.batch_norm(lib.ones(3), lib.zeros(3), lib.ones(3)),
        # ops/misc_math.py
        "lerp-dtypes": lambda: lib.lerp(lib.ones(2), lib.ones(2, dtype=lib.float64), 0.5),
        "lerp-shapes": lambda: lib.lerp(lib.ones(2), lib.ones(3), 0.5),
        "isclose-dtypes": lambda: lib.isclose(lib.ones(2), lib.ones(2, dtype=lib.float64)),
        "isclose-shapes": lambda: lib.isclose(lib.ones(2), lib.ones(3)),
        "frexp-int": lambda: lib.frexp(lib.tensor([1, 2])),
        "addcdiv-ints": lambda: lib.addcdiv(lib.ones(2), lib.tensor([1, 2]), lib.tensor([1, 2])),
        # ops/linalg.py
        "matmul-batch": lambda: lib.matmul(lib.ones(2, 2, 3), lib.ones(3, 3, 2)),
        # ops/norm.py
        "vector_norm-str": lambda: lib.linalg.vector_norm(lib.ones(3), "fro"),
        "matrix_norm-one-dim": lambda: lib.linalg.matrix_norm(lib.ones(2, 2), dim=(0,)),
        "matrix_norm-same-dims": lambda: lib.linalg.matrix_norm(lib.ones(2, 2), dim=(0, 0)),
        "matrix_norm-ord": lambda: lib.linalg.matrix_norm(lib.ones(2, 2), ord=3),
        "matrix_norm-1d": lambda: lib.linalg.matrix_norm(lib.ones(2)),
        "embedding_bag-negative": lambda: F.embedding_bag(lib.tensor([[0, -1]]), lib.ones(5, 3)),
        "norm-p-str": lambda: lib.norm(lib.ones(2, 2), p="max"),
        "linalg.norm-3d": lambda: lib.linalg.norm(lib.ones(2, 2, 2), ord=1),
        "linalg.norm-3-dims": lambda: lib.linalg.norm(lib.ones(2, 2, 2), dim=(0, 1, 2)),
        # ops/shape.py
        "permute-repeated": lambda: lib.ones(2, 2).permute(0, 0),
        "expand-size": lambda: lib.ones(2, 3).expand(2, 4),
        "flatten-order": lambda: lib.ones(2, 3, 4).flatten(2, 1),
        "movedim-lengths": lambda: lib.movedim(lib.ones(2, 3), (0, 1), (1,)),
        "movedim-repeated": lambda: lib.movedim(lib.ones(2, 3), (0, 0), (1, 0)),
        "repeat-few": lambda: lib.ones(2, 3).repeat(2),
        "repeat-negative": lambda: lib.ones(2).repeat(-1),
        "roll-shifts-dims": lambda: lib.roll(lib.ones(2, 3), (1, 2), 0),
        # ops/extrema.py, linear_cross_entropy
        "lce-3d-input": lambda: _lce(lib, lib.ones(1, 2, 3), lib.ones(4, 3), lib.tensor([0])),
        "lce-1d-weight": lambda: _lce(lib, lib.ones(2, 3), lib.ones(3), lib.tensor([0, 1])),
        "lce-bias-shape": lambda: _lce(
            lib, lib.ones(2, 3), lib.ones(4, 3), lib.tensor([0, 1]), linear_bias=lib.ones(3)
        ),
        "lce-k-dim-unbatched": lambda: _lce(lib, lib.ones(3), lib.ones(4, 2, 3), lib.tensor([0])),
        # ops/complex_ops.py
        "imag-real": lambda: lib.imag(lib.ones(2)),
        "view_as_real-real": lambda: lib.view_as_real(lib.ones(2)),
        "view_as_complex-int": lambda: lib.view_as_complex(lib.ones(2, 2, dtype=i64)),
        "view_as_complex-last-3": lambda: lib.view_as_complex(lib.ones(2, 3)),
        "complex-dtypes": lambda: lib.complex(lib.ones(2), lib.ones(2, dtype=lib.float64)),
        "complex-int": lambda: lib.complex(lib.ones(2, dtype=i64), lib.ones(2, dtype=i64)),
        "complex-shapes": lambda: lib.complex(lib.ones(2), lib.ones(3)),
        "polar-shapes": lambda: lib.polar(lib.ones(2), lib.ones(3)),
        # ops/calculus.py, counting.py, covariance.py
        "gradient-0d-spacings": lambda: lib.gradient(
            lib.ones(2, 3), spacing=(lib.tensor(0.5), lib.tensor(2.0))
        ),
        "repeat_interleave-0d-dim": lambda: lib.repeat_interleave(lib.tensor(1.5), 3, dim=0),
        "repeat_interleave-0d-dim-tensor": lambda: lib.repeat_interleave(
            lib.tensor(1.5), lib.tensor([2]), dim=-1
        ),
        "trapezoid-x-and-dx": lambda: lib.trapezoid(lib.ones(3), lib.ones(3), dx=1.0),
        "histogramdd-bins-dtype": lambda: lib.histogramdd(
            lib.ones(4, 2), bins=[lib.tensor([0.0, 1.0], dtype=lib.float64)] * 2
        ),
        "histogramdd-bins-2d": lambda: lib.histogramdd(lib.ones(4, 1), bins=[lib.ones(2, 2)]),
        "histogram-bins-2d": lambda: lib.histogram(lib.ones(4), bins=lib.ones(2, 2)),
        "histogram-weight-shape": lambda: lib.histogram(lib.ones(4), bins=2, weight=lib.ones(3)),
        "hash_tensor-mode": lambda: lib.hash_tensor(lib.ones(3), mode=1),
        "combinations-negative": lambda: lib.combinations(lib.ones(3), -1),
        "cov-2d-weights": lambda: lib.cov(lib.ones(2, 3), fweights=lib.ones(1, 3, dtype=i64)),
        "cov-int-aweights": lambda: lib.cov(lib.ones(2, 3), aweights=lib.ones(3, dtype=i64)),
        "cov-weights-count": lambda: lib.cov(lib.ones(2, 3), fweights=lib.ones(2, dtype=i64)),
        "cov-bool": lambda: lib.cov(lib.ones(2, 3) > 0),
        "cov-zero-weights": lambda: lib.cov(lib.ones(2, 3), aweights=lib.zeros(3)),
        "corrcoef-3d": lambda: lib.corrcoef(lib.ones(2, 2, 2)),
        # ops/joining.py, shape_more.py, sorting.py
        "cat-empty": lambda: lib.cat([]),
        "split-zero": lambda: lib.split(lib.ones(4), 0),
        "chunk-zero": lambda: lib.chunk(lib.ones(4), 0),
        "pad-value-reflect": lambda: F.pad(lib.ones(1, 1, 4), (1, 1), mode="reflect", value=2.0),
        "pad-crop-reflect": lambda: F.pad(lib.ones(1, 1, 4), (-3, -3), mode="reflect"),
        "pad-crop": lambda: F.pad(lib.ones(1, 1, 4), (-3, -3)),
        "hsplit-divisible": lambda: lib.hsplit(lib.ones(2, 3), 2),
        "quantile-interpolation": lambda: lib.quantile(lib.ones(3), 0.5, interpolation="mean"),
        "quantile-2d-q": lambda: lib.quantile(lib.ones(3), lib.ones(1, 1) * 0.5),
        "quantile-int": lambda: lib.quantile(lib.tensor([1, 2]), 0.5),
        "searchsorted-leading": lambda: lib.searchsorted(lib.ones(2, 3), lib.ones(3, 1)),
        # nn/_losses.py, _losses_pointwise.py, _losses_margin.py, losses_more.py
        "nll_loss-0d": lambda: F.nll_loss(lib.ones(()), lib.tensor(0)),
        "nll_loss-weight-shape": lambda: F.nll_loss(
            lib.ones(2, 3), lib.tensor([0, 1]), weight=lib.ones(2)
        ),
        "nll_loss-target-shape": lambda: F.nll_loss(lib.ones(2, 3), lib.tensor([0, 1, 2])),
        "cross_entropy-smoothing": lambda: F.cross_entropy(
            lib.ones(2, 3), lib.tensor([0, 1]), label_smoothing=1.5
        ),
        "cross_entropy-prob-shape": lambda: F.cross_entropy(lib.ones(2, 3), lib.ones(2, 2) / 2),
        "poisson_nll-reduction": lambda: F.poisson_nll_loss(
            lib.ones(2), lib.ones(2), reduction="avg"
        ),
        "bce-weight-grad": lambda: F.binary_cross_entropy(
            lib.ones(2) / 2, lib.ones(2), weight=lib.ones(2, requires_grad=True)
        ),
        "smooth_l1-negative-beta": lambda: F.smooth_l1_loss(lib.ones(2), lib.ones(2), beta=-1.0),
        "huber-delta": lambda: F.huber_loss(lib.ones(2), lib.ones(2), delta=0.0),
        "gaussian_nll-negative-number-var": lambda: F.gaussian_nll_loss(
            lib.ones(2, 3), lib.ones(2, 3), -1.0
        ),
        "margin_ranking-dims": lambda: F.margin_ranking_loss(
            lib.ones(2), lib.ones(2, 1), lib.ones(2)
        ),
        "triplet-dims": lambda: F.triplet_margin_loss(lib.ones(2, 3), lib.ones(2, 3), lib.ones(3)),
        "triplet_distance-margin": lambda: F.triplet_margin_with_distance_loss(
            lib.ones(2, 3), lib.ones(2, 3), lib.ones(2, 3), margin=0.0
        ),
        "multi_margin-3d": lambda: F.multi_margin_loss(lib.ones(2, 3, 1), lib.tensor([0, 1])),
        "multi_margin-target": lambda: F.multi_margin_loss(lib.ones(2, 3), lib.tensor([0, 1, 2])),
        "multilabel_margin-target": lambda: F.multilabel_margin_loss(
            lib.ones(2, 3), lib.tensor([[0, 1], [1, 2]])
        ),
        "TripletMarginLoss-margin": lambda: lib.nn.TripletMarginLoss(margin=0.0),
        "TripletMarginWithDistanceLoss-margin": lambda: lib.nn.TripletMarginWithDistanceLoss(
            margin=-1.0
        ),
        "MultiMarginLoss-p": lambda: lib.nn.MultiMarginLoss(p=3),
        # nn/_ctc.py
        "ctc-float-lengths": lambda: F.ctc_loss(
            lib.ones(4, 1, 3).log_softmax(2),
            lib.tensor([[1, 2]]),
            lib.tensor([4.0]),
            lib.tensor([2]),
        ),
        "interpolate-int-linear": lambda: F.interpolate(
            lib.ones(1, 1, 4, dtype=i64), size=2, mode="linear"
        ),
        "interpolate-zero-size-2d": lambda: F.interpolate(lib.ones(1, 1, 4, 4), size=(0, 2)),
        "cross_entropy-0d": lambda: F.cross_entropy(lib.ones(()), lib.tensor(0)),
        "ctc-reduction": lambda: F.ctc_loss(
            lib.ones(4, 1, 3).log_softmax(2), lib.tensor([[1, 2]]), [4], [2], reduction="avg"
        ),
        "ctc-4d": lambda: F.ctc_loss(lib.ones(4, 1, 3, 1), lib.tensor([[1, 2]]), [4], [2]),
        "ctc-lengths-count": lambda: F.ctc_loss(
            lib.ones(4, 2, 3).log_softmax(2), lib.tensor([[1, 2], [1, 1]]), [4], [2]
        ),
        "ctc-blank": lambda: F.ctc_loss(
            lib.ones(4, 1, 3).log_softmax(2), lib.tensor([[1, 2]]), [4], [2], blank=3
        ),
        "ctc-input-length": lambda: F.ctc_loss(
            lib.ones(4, 1, 3).log_softmax(2), lib.tensor([[1, 2]]), [5], [2]
        ),
        # nn/_pool_nd.py, _interpolate.py
        "max_pool3d-2d": lambda: F.max_pool3d(lib.ones(4, 4), 2),
        "max_pool3d-too-small": lambda: F.max_pool3d(lib.ones(1, 1, 2, 2, 2), 3),
        "avg_pool3d-divisor": lambda: F.avg_pool3d(lib.ones(1, 1, 2, 2, 2), 2, divisor_override=0),
        "max_unpool2d-output-size": lambda: F.max_unpool2d(
            lib.ones(1, 1, 2, 2), lib.zeros(1, 1, 2, 2, dtype=i64), 2, output_size=[1, 4, 4, 1, 1]
        ),
        "max_unpool2d-int32": lambda: F.max_unpool2d(
            lib.ones(1, 1, 2, 2), lib.zeros(1, 1, 2, 2, dtype=lib.int32), 2
        ),
        "interpolate-mode": lambda: F.interpolate(lib.ones(1, 1, 4), size=2, mode="cubic"),
        "interpolate-size-length": lambda: F.interpolate(lib.ones(1, 1, 4), size=(2, 2)),
        "interpolate-scale-length": lambda: F.interpolate(
            lib.ones(1, 1, 4), scale_factor=(2.0, 2.0)
        ),
        "interpolate-zero-size": lambda: F.interpolate(lib.ones(1, 1, 4), scale_factor=0.1),
        "interpolate-int": lambda: F.interpolate(lib.ones(1, 1, 4, dtype=i64), size=2),
        # nn/_activations.py, _distance.py, _grid_sample.py
        "hardtanh-bounds": lambda: F.hardtanh(lib.ones(2), 1.0, -1.0),
        "softshrink-negative": lambda: F.softshrink(lib.ones(2), -0.5),
        "glu-0d": lambda: F.glu(lib.ones(())),
        "prelu-number": lambda: F.prelu(lib.ones(2), 0.25),
        "prelu-2d-weight": lambda: F.prelu(lib.ones(2, 2), lib.ones(2, 1)),
        "cosine_similarity-shapes": lambda: F.cosine_similarity(lib.ones(2, 3), lib.ones(3, 3)),
        "pdist-negative-p": lambda: F.pdist(lib.ones(3, 2), p=-1.0),
        "affine_grid-zero-size": lambda: F.affine_grid(
            lib.ones(1, 2, 3), [1, 1, 0, 2], align_corners=False
        ),
        "affine_grid-batch": lambda: F.affine_grid(
            lib.ones(2, 2, 3), [1, 1, 2, 2], align_corners=False
        ),
        "grid_sample-dtypes": lambda: F.grid_sample(
            lib.ones(1, 1, 2, 2), lib.zeros(1, 2, 2, 2, dtype=lib.float64), align_corners=False
        ),
        # ops/decomp.py, ldl.py, lu.py, solve*.py, householder.py
        "eigh-uplo": lambda: lib.linalg.eigh(lib.eye(2), UPLO="X"),
        "lstsq-rows": lambda: lib.linalg.lstsq(lib.ones(3, 2), lib.ones(2, 1)),
        "cholesky_ex-check": lambda: lib.linalg.cholesky_ex(-lib.eye(2), check_errors=True),
        "tensorinv-shape": lambda: lib.linalg.tensorinv(lib.ones(2, 3), ind=1),
        "ldl_factor_ex-check": lambda: lib.linalg.ldl_factor_ex(lib.zeros(2, 2), check_errors=True),
        "ldl_solve-rows": lambda: lib.linalg.ldl_solve(
            *lib.linalg.ldl_factor(lib.eye(2)), lib.ones(3, 1)
        ),
        "ldl_solve-batch": lambda: lib.linalg.ldl_solve(
            lib.eye(2).expand(2, 2, 2), lib.ones(2, 2, dtype=lib.int32), lib.ones(3, 2, 1)
        ),
        "lu_unpack-float-pivots": lambda: lib.lu_unpack(lib.eye(2), lib.ones(2)),
        "lu_solve-not-square": lambda: lib.linalg.lu_solve(
            lib.ones(2, 3), lib.ones(2, dtype=lib.int32), lib.ones(2, 1)
        ),
        "lu_solve-1d-b": lambda: lib.linalg.lu_solve(
            lib.eye(2), lib.ones(2, dtype=lib.int32), lib.ones(2)
        ),
        "solve-batch": lambda: lib.linalg.solve(lib.eye(2).expand(2, 2, 2), lib.ones(3, 2, 1)),
        "solve_triangular-rows": lambda: lib.linalg.solve_triangular(
            lib.eye(2), lib.ones(3, 1), upper=True
        ),
        "solve_triangular-batch": lambda: lib.linalg.solve_triangular(
            lib.eye(2).expand(2, 2, 2), lib.ones(3, 2, 1), upper=True
        ),
        "cholesky_inverse-singular": lambda: lib.cholesky_inverse(lib.zeros(2, 2)),
        "cholesky_solve-batch": lambda: lib.cholesky_solve(
            lib.ones(3, 2, 1), lib.eye(2).expand(2, 2, 2)
        ),
        "householder-tau-shape": lambda: lib.linalg.householder_product(
            lib.ones(3, 2), lib.ones(2, 2)
        ),
        "householder-tau-long": lambda: lib.linalg.householder_product(lib.ones(3, 2), lib.ones(3)),
        "ormqr-rows": lambda: lib.ormqr(lib.ones(3, 2), lib.ones(2), lib.ones(2, 2)),
        # ops/reduce_more.py, strided.py, einsum.py, products.py, norm_ops.py, ...
        "nanmean-int": lambda: lib.nanmean(lib.tensor([1, 2])),
        "aminmax-empty": lambda: lib.aminmax(lib.ones(0)),
        "as_strided-negative-size": lambda: lib.as_strided(lib.ones(4), (-1,), (1,)),
        "as_strided-negative-offset": lambda: lib.as_strided(lib.ones(4), (2,), (1,), -1),
        "einsum-two-arrows": lambda: lib.einsum("i->i->i", lib.ones(2)),
        "einsum-bad-ellipsis": lambda: lib.einsum("i..j", lib.ones(2, 2)),
        "einsum-bad-output-ellipsis": lambda: lib.einsum("i->i..", lib.ones(2)),
        "inner-sizes": lambda: lib.inner(lib.ones(2), lib.ones(3)),
        "tensordot-dims": lambda: lib.tensordot(lib.ones(2, 2), lib.ones(2, 2), ([0, 1], [0])),
        "cross-no-3": lambda: lib.cross(lib.ones(2, 2), lib.ones(2, 2)),
        "linalg.cross-broadcast": lambda: lib.linalg.cross(lib.ones(2, 3), lib.ones(4, 3)),
        "renorm-maxnorm": lambda: lib.renorm(lib.ones(2, 2), 2, 0, -1.0),
        "renorm-int": lambda: lib.renorm(lib.ones(2, 2, dtype=i64), 2, 0, 1.0),
        "diagonal_scatter-dims": lambda: lib.diagonal_scatter(lib.ones(2, 2), lib.ones(2), 0, 1, 1),
        "slice_scatter-step": lambda: lib.slice_scatter(lib.ones(4), lib.ones(2), 0, 0, 4, 0),
        "diag_embed-dims": lambda: lib.diag_embed(lib.ones(2), 0, 1, 1),
        # nn/module.py, container.py, layers_ext.py, rnn.py, transformer.py
        "register_buffer-int-name": lambda: lib.nn.Module().register_buffer(1, lib.ones(1)),
        "register_buffer-existing": lambda: _with_attribute(lib.nn.Linear(2, 2)).register_buffer(
            "foo", None
        ),
        "register_buffer-number": lambda: lib.nn.Module().register_buffer("b", 3),
        "add_module-number": lambda: lib.nn.Module().add_module("m", 3),
        "get_submodule-missing": lambda: lib.nn.Sequential(lib.nn.ReLU()).get_submodule("1"),
        "get_buffer-missing": lambda: lib.nn.Linear(2, 2).get_buffer("running"),
        "train-string": lambda: lib.nn.Linear(2, 2).train("yes"),
        "Sequential.insert-number": lambda: lib.nn.Sequential().insert(0, 3),
        "Sequential.insert-range": lambda: lib.nn.Sequential(lib.nn.ReLU()).insert(
            3, lib.nn.Tanh()
        ),
        "Sequential-add-list": lambda: lib.nn.Sequential() + [lib.nn.ReLU()],
        "Sequential-iadd-list": lambda: lib.nn.Sequential().__iadd__([lib.nn.ReLU()]),
        "Unflatten-int": lambda: lib.nn.Unflatten(1, 3),
        "EmbeddingBag-padding": lambda: lib.nn.EmbeddingBag(3, 2, padding_idx=3),
        "RNN-hidden": lambda: lib.nn.RNN(2, 0),
        "RNN-layers": lambda: lib.nn.RNN(2, 3, num_layers=0),
        "LSTM-proj": lambda: lib.nn.LSTM(2, 3, proj_size=-1),
        "GRU-hx-dtype": lambda: lib.nn.GRU(2, 3)(
            lib.ones(4, 1, 2), lib.zeros(1, 1, 3, dtype=lib.float64)
        ),
        "RNNCell-3d": lambda: lib.nn.RNNCell(2, 3)(lib.ones(1, 1, 2)),
        "RNNCell-hx-dims": lambda: lib.nn.RNNCell(2, 3)(lib.ones(1, 2), lib.zeros(3)),
        "Transformer-batch": lambda: lib.nn.Transformer(4, 2, 1, 1, 8, 0.0)(
            lib.ones(3, 2, 4), lib.ones(3, 1, 4)
        ),
        "Transformer-batch-first": lambda: lib.nn.Transformer(4, 2, 1, 1, 8, 0.0, batch_first=True)(
            lib.ones(2, 3, 4), lib.ones(1, 3, 4)
        ),
        "Transformer-features": lambda: lib.nn.Transformer(4, 2, 1, 1, 8, 0.0)(
            lib.ones(3, 2, 4), lib.ones(3, 2, 5)
        ),
        # ops/arithmetic.py, inplace.py
        "add-string": lambda: lib.add(lib.ones(2), "a"),
        "div-floor-shapes": lambda: lib.div(lib.ones(2), lib.ones(3), rounding_mode="floor"),
        "lt-shapes": lambda: lib.lt(lib.ones(2), lib.ones(3)),
        "add_-int-self-grad-operand": lambda: lib.zeros(2, dtype=i64).add_(
            lib.ones(2, requires_grad=True)
        ),
        "setitem-shape": lambda: lib.zeros(2, 3).__setitem__(0, lib.ones(2)),
        "setitem-graph-shape": lambda: (lib.ones(2, 3, requires_grad=True) * 1).__setitem__(
            0, lib.ones(2)
        ),
        # nn/_attention.py
        "sdpa-int-mask": lambda: F.scaled_dot_product_attention(
            lib.ones(1, 2, 4), lib.ones(1, 2, 4), lib.ones(1, 2, 4), lib.zeros(2, 2, dtype=i64)
        ),
        "sdpa-mask-dtype-grad": lambda: F.scaled_dot_product_attention(
            lib.ones(1, 2, 4),
            lib.ones(1, 2, 4),
            lib.ones(1, 2, 4),
            lib.zeros(2, 2, dtype=lib.float64, requires_grad=True),
        ),
        "sdpa-list-mask": lambda: F.scaled_dot_product_attention(
            lib.ones(1, 2, 4), lib.ones(1, 2, 4), lib.ones(1, 2, 4), [[True, False], [True, True]]
        ),
        "sdpa-float64-mask": lambda: F.scaled_dot_product_attention(
            lib.ones(1, 2, 4),
            lib.ones(1, 2, 4),
            lib.ones(1, 2, 4),
            lib.zeros(2, 2, dtype=lib.float64),
        ),
        "sdpa-list-query": lambda: F.scaled_dot_product_attention(
            [[1.0]], lib.ones(1, 1), lib.ones(1, 1)
        ),
        "sdpa-int": lambda: F.scaled_dot_product_attention(
            lib.ones(1, 2, 4, dtype=i64), lib.ones(1, 2, 4, dtype=i64), lib.ones(1, 2, 4, dtype=i64)
        ),
        "sdpa-dropout": lambda: F.scaled_dot_product_attention(
            lib.ones(1, 2, 4), lib.ones(1, 2, 4), lib.ones(1, 2, 4), dropout_p=1.5
        ),
        # nn/_pool_fractional.py, _pool_more.py
        "fractional-ratio": lambda: F.fractional_max_pool2d(
            lib.ones(1, 1, 4, 4), 2, output_ratio=(1.5, 0.5)
        ),
        "fractional-samples": lambda: F.fractional_max_pool2d(
            lib.ones(1, 1, 4, 4), 2, output_size=2, _random_samples=lib.ones(1, 1, 3) / 2
        ),
        "max_pool1d-kernel-pair": lambda: F.max_pool1d(lib.ones(1, 1, 4), (2, 2)),
        "max_pool1d-4d": lambda: F.max_pool1d(lib.ones(1, 1, 1, 4), 2),
        "adaptive_max_pool2d-size-length": lambda: F.adaptive_max_pool2d(
            lib.ones(1, 1, 4, 4), (2, 2, 2)
        ),
        "adaptive_avg_pool2d-negative": lambda: F.adaptive_avg_pool2d(
            lib.ones(1, 1, 4, 4), (-1, 2)
        ),
        # nn/init.py, utils/legacy_norms.py
        "calculate_gain-slope": lambda: lib.nn.init.calculate_gain("leaky_relu", "x"),
        "calculate_gain-name": lambda: lib.nn.init.calculate_gain("swish"),
        "kaiming-mode": lambda: lib.nn.init.kaiming_uniform_(lib.ones(2, 2), mode="fan_avg"),
        "remove_weight_norm-none": lambda: lib.nn.utils.remove_weight_norm(lib.nn.Linear(2, 2)),
        "remove_spectral_norm-none": lambda: lib.nn.utils.remove_spectral_norm(lib.nn.Linear(2, 2)),
        "spectral_norm-twice": lambda: lib.nn.utils.spectral_norm(
            lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2))
        ),
        "spectral_norm-iterations": lambda: lib.nn.utils.spectral_norm(
            lib.nn.Linear(2, 2), n_power_iterations=0
        ),
        # nn/_rnn_ops.py, normalization_ext.py, _fold.py, conv.py, embedding.py, ...
        "rnn_tanh_cell-weight": lambda: lib.rnn_tanh_cell(
            lib.ones(1, 2), lib.ones(1, 3), lib.ones(3, 4), lib.ones(3, 3)
        ),
        "rnn_tanh_cell-hidden": lambda: lib.rnn_tanh_cell(
            lib.ones(1, 2), lib.ones(1, 4), lib.ones(3, 2), lib.ones(3, 3)
        ),
        "rnn_tanh_cell-dtypes": lambda: lib.rnn_tanh_cell(
            lib.ones(1, 2), lib.ones(1, 3, dtype=lib.float64), lib.ones(3, 2), lib.ones(3, 3)
        ),
        "GroupNorm-groups": lambda: lib.nn.GroupNorm(3, 4),
        "InstanceNorm2d-2d": lambda: lib.nn.InstanceNorm2d(2)(lib.ones(2, 2)),
        "unfold-5d": lambda: F.unfold(lib.ones(1, 1, 1, 4, 4), 2),
        "unfold-too-small": lambda: F.unfold(lib.ones(1, 1, 2, 2), 3),
        "fold-4d": lambda: F.fold(lib.ones(1, 1, 4, 1), (3, 3), 2),
        "Conv2d-groups": lambda: lib.nn.Conv2d(3, 4, 3, groups=2),
        "Conv2d-padding-string": lambda: lib.nn.Conv2d(2, 2, 3, padding="full"),
        "Embedding-padding": lambda: lib.nn.Embedding(3, 2, padding_idx=3),
        "pack_padded-2d-lengths": lambda: lib.nn.utils.rnn.pack_padded_sequence(
            lib.ones(3, 2, 1), [[2, 1]]
        ),
        "pack_padded-count": lambda: lib.nn.utils.rnn.pack_padded_sequence(
            lib.ones(3, 2, 1), lib.tensor([2, 1, 1])
        ),
        "pack_padded-zero": lambda: lib.nn.utils.rnn.pack_padded_sequence(
            lib.ones(3, 2, 1), lib.tensor([2, 0])
        ),
        "pca_lowrank-niter": lambda: lib.pca_lowrank(lib.ones(3, 3), niter=-1),
        "chebyshev-shapes": lambda: lib.special.chebyshev_polynomial_t(lib.ones(2), lib.ones(3)),
        "maximum-shapes": lambda: lib.maximum(lib.ones(2), lib.ones(3)),
        "fill_diagonal_-1d": lambda: lib.ones(3).fill_diagonal_(0.0),
        "fill_diagonal_-3d": lambda: lib.ones(2, 2, 3).fill_diagonal_(0.0),
        "split_with_sizes-int": lambda: lib.split_with_sizes(lib.ones(4), 2),
        "elu-positional": lambda: F.elu(lib.ones(2), 1.0, False, 3),
        "FractionalMaxPool2d-none": lambda: lib.nn.FractionalMaxPool2d(2),
        "FractionalMaxPool2d-both": lambda: lib.nn.FractionalMaxPool2d(
            2, output_size=2, output_ratio=0.5
        ),
        "conv_transpose3d-output-padding": lambda: F.conv_transpose3d(
            lib.ones(1, 1, 2, 2, 2), lib.ones(1, 1, 2, 2, 2), output_padding=1
        ),
        "conv_transpose3d-too-small": lambda: F.conv_transpose3d(
            lib.ones(1, 1, 1, 1, 1), lib.ones(1, 1, 1, 1, 1), padding=1
        ),
        "Softmax2d-2d": lambda: lib.nn.Softmax2d()(lib.ones(2, 2)),
        "MultiheadAttention-heads": lambda: lib.nn.MultiheadAttention(4, 0),
        "native_group_norm-groups": lambda: lib.native_group_norm(
            lib.ones(2, 3, 4), None, None, 2, 3, 4, 2, 1e-5
        ),
        "broadcast_shapes": lambda: lib.broadcast_shapes((2,), (3,)),
        "as_tensor-object": lambda: lib.flip(object(), (0,)),
        "reshape-float-size": lambda: lib.ones(4).reshape(2.0, 2),
        "slice-step": lambda: lib.ops.aten.slice(lib.ones(4), 0, 0, 4, 0),
        "dropout2d-p": lambda: F.dropout2d(lib.ones(1, 2, 2, 2), 1.5),
        # ops/_table.py (binary rows), nn/functional.py, _conv_more.py, misc
        "atan2-numbers": lambda: lib.atan2(1.0, 2.0),
        "atan2-shapes": lambda: lib.atan2(lib.ones(2), lib.ones(3)),
        "conv2d-list-input": lambda: F.conv2d([[1.0]], k),
        "conv1d-stride-pair": lambda: F.conv1d(lib.ones(1, 1, 4), lib.ones(1, 1, 2), stride=(1, 1)),
        "conv3d-too-small": lambda: F.conv3d(lib.ones(1, 1, 2, 2, 2), lib.ones(1, 1, 3, 3, 3)),
        "conv_transpose2d-too-small": lambda: F.conv_transpose2d(
            lib.ones(1, 1, 1, 1), lib.ones(1, 1, 1, 1), padding=1
        ),
        "huber-weight-shape": lambda: F.huber_loss(
            lib.ones(2, 3), lib.ones(2, 3), weight=lib.ones(3)
        ),
        "roll-shifts-count": lambda: lib.roll(lib.ones(2, 3), (1, 2), (0, 1, 1)),
        "channel_shuffle-list": lambda: F.channel_shuffle([[1.0]], 1),
    }


_ERROR_CASES = sorted(_errors(tg))

_TORCH_WORDS = "torch's own message names the argument, not the op; ours keeps its words"
# Note [Checked messages] in tests/_message_check.py: the op's other spellings, and the
# checks a row is excused from, with the reason
_MESSAGES = {
    "RNN-hidden": {"waive": {"op": _TORCH_WORDS}},
    "RNN-layers": {"waive": {"op": _TORCH_WORDS}},
    "add_-int-self-grad-operand": {
        "waive": {"dtypes": "torch fails on the cast of the result; ours names the int64 input"}
    },
    "as_tensor-object": {"names": ("flip",)},
    "broadcast_shapes": {
        "waive": {
            "op": "torch's broadcast wording ('The size of tensor a ...')",
            "numbers": "the dim it fails at, counted from the left",
        }
    },
    "cross_entropy-0d": {
        "waive": {
            "ranks": "torch fails on the target's dtype first",
            "dtypes": "torch fails on the target's dtype first",
        }
    },
    "cross_entropy-prob-shape": {"waive": {"ranks": "torch fails on the target's rank first"}},
    "ctc-4d": {"waive": {"ranks": "torch's ranks are those of its internal 5-D view"}},
    "fold-4d": {"waive": {"op": "torch's Python-level fold text"}},
    "unfold-5d": {"waive": {"op": "torch's Python-level unfold text"}},
    "fractional-ratio": {"waive": {"shapes": "(0, 1) is an interval"}},
    "hash_tensor-mode": {"waive": {"numbers": "0 is the one mode supported"}},
    "index_select-2d-index": {"waive": {"ranks": "torch says 'a vector' in words"}},
    "ldl_factor_ex-check": {"waive": {"numbers": "D[0, 0]: the failing block's index"}},
    "lerp-shapes": {"waive": {"shapes": "[] is the shape of the weight, a Python number"}},
    "mha-4d-query": {"names": ("query",)},
    "mha-bias-k-only": {"names": ("bias_k",)},
    "mha-separate-none": {"names": ("multi_head_attention_forward",)},
    "mha-4d-mask": {"names": ("attn_mask",)},
    "sdpa-int": {"names": ("scaled_dot_product_attention",)},
    "sdpa-int-mask": {
        "names": ("scaled_dot_product_attention",),
        "waive": {"dtypes": "torch also names the query's dtype, which is not the offending one"},
    },
    "setitem-graph-shape": {"names": ("index_put",)},
    "triplet_distance-margin": {"names": ("triplet_margin_with_distance_loss",)},
    "pack_padded-2d-lengths": {"waive": {"ranks": "ours prints the nested lengths themselves"}},
}


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
@pytest.mark.parametrize("case", _ERROR_CASES)
def test_bad_input_raises_torchs_exception_type(torch_mod, case):
    with pytest.raises(Exception) as theirs:
        _errors(torch_mod)[case]()
    with pytest.raises(Exception) as ours:
        _errors(tg)[case]()
    want = theirs.type
    # torch's LinAlgError (torch._C._LinAlgError) and tapegrad's are both RuntimeErrors
    same_name = ours.type.__name__.lstrip("_") == want.__name__.lstrip("_")
    assert issubclass(ours.type, want) or same_name, (
        ours.type,
        want,
        str(ours.value),
        str(theirs.value),
    )
    check_message(case, ours.value, theirs.value, **_MESSAGES.get(case, {}))


def test_unsupported_options_raise_not_implemented_and_bad_options_type_error():
    # torch supports static_k/static_v (tapegrad does not: it says so) and fails on an
    # options object of the wrong type with an AttributeError (tapegrad names the type)
    with pytest.raises(NotImplementedError, match="static_k"):
        _mha(tg, static_k=tg.ones(4, 3, 2))
    with pytest.raises(TypeError, match="LinearCrossEntropyOptions or None, got int"):
        _lce(tg, tg.ones(2, 3), tg.ones(4, 3), tg.tensor([0, 1]), options=3)
    # torch fails on these with an AttributeError / IndexError deep inside, or only at
    # the first forward; tapegrad says what is wrong, when the module is built
    with pytest.raises(RuntimeError, match="hx must be a tuple"):
        tg.nn.LSTM(2, 3)(tg.ones(4, 1, 2), tg.zeros(1, 1, 3))
    with pytest.raises(RuntimeError, match="hx must be a Tensor"):
        tg.nn.GRU(2, 3)(tg.ones(4, 1, 2), (tg.zeros(1, 1, 3),) * 2)
    with pytest.raises(ValueError, match="nonlinearity"):
        tg.nn.RNNCell(2, 3, nonlinearity="gelu")
    # torch accepts these when the module is built and fails at the first forward
    with pytest.raises(ValueError, match="padding strings"):
        tg.nn.ConvTranspose2d(2, 2, 3, padding="same")
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        tg.nn.L1Loss(reduction="avg")
    # no meta device in tapegrad; a NaN clip value would make every gradient NaN
    with pytest.raises(NotImplementedError, match="device 'meta'"):
        tg.nn.Linear(2, 2, device="meta")
    p = tg.nn.Parameter(tg.ones(2))
    p.grad = tg.ones(2)
    with pytest.raises(ValueError, match="NaN"):
        tg.nn.utils.clip_grad_value_([p], float("nan"))
    with pytest.raises(NotImplementedError, match="antialias"):
        tg.nn.functional.interpolate(tg.ones(1, 1, 4, 4), size=2, mode="bilinear", antialias=True)
    with pytest.raises(NotImplementedError, match="max_norm"):
        tg.nn.functional.embedding_bag(tg.tensor([[0, 1]]), tg.ones(3, 2), max_norm=1.0)
