"""Values, dtypes and gradients of ops/ and nn/ paths no other test executed (found with a
line map of the whole suite), compared with torch or a definition."""

import numpy as np
import pytest

import tapegrad as tg

from ._uncovered_common import _A, _same, _vg

_REDUCTIONS = {
    "sum": lambda lib, x, **k: lib.sum(x, **k),
    "mean": lambda lib, x, **k: lib.mean(x, **k),
    "prod": lambda lib, x, **k: lib.prod(x, **k),
    "var": lambda lib, x, **k: lib.var(x, **k),
    "std": lambda lib, x, **k: lib.std(x, **k),
    "logsumexp": lambda lib, x, **k: lib.logsumexp(x, **k),
    "min": lambda lib, x, **k: lib.min(x, **k)[0],
    "amax": lambda lib, x, **k: lib.amax(x, **k),
    "amin": lambda lib, x, **k: lib.amin(x, **k),
}


@pytest.mark.parametrize("name", sorted(_REDUCTIONS) + ["argmax", "argmin"])
def test_numpy_style_axis_and_keepdims_match_torch(torch_mod, name):
    for kw in (dict(axis=1, keepdims=True), dict(axis=0), dict(dim=1, keepdims=False)):
        if name in ("argmax", "argmin"):
            res = [getattr(lib, name)(lib.tensor(_A), **kw) for lib in (tg, torch_mod)]
            _same(*res)
            continue
        f = _REDUCTIONS[name]
        ours = _vg(tg, _A, lambda x, f=f, kw=kw: f(tg, x, **kw))
        theirs = _vg(torch_mod, _A, lambda x, f=f, kw=kw: f(torch_mod, x, **kw))
        for a, b in zip(ours, theirs):
            _same(a, b, rtol=1e-12)


def _values(lib):
    i64 = lib.int64
    idx3 = lib.tensor([2, 0])
    return {
        # ops/scan.py: prod with a dtype
        "prod-dtype-int": lambda: [lib.prod(lib.tensor([[2, 3], [4, 5]]), 1, dtype=lib.float64)],
        "prod-dtype-grad": lambda: _vg(
            lib, _A, lambda x: lib.prod(x, 0, dtype=lib.float64), dtype=lib.float32
        ),
        # ops/indexing.py: a Python bool in the key, ints around arrays, Ellipsis
        "getitem-bool": lambda: _vg(lib, _A, lambda x: x[True]),
        "getitem-int-bool": lambda: _vg(lib, _A, lambda x: x[1, False]),
        "getitem-array-ellipsis-int": lambda: _vg(
            lib, _A.reshape(3, 2, 2), lambda x: x[idx3, ..., 1]
        ),
        "getitem-array-slice-int-array": lambda: _vg(
            lib,
            np.arange(24.0).reshape(2, 3, 2, 2),
            lambda x: x[lib.tensor([1, 0]), :, 1, idx3 - 1],
        ),
        "getitem-mask-slice": lambda: _vg(lib, _A, lambda x: x[lib.tensor([True, False, True]), :]),
        "index_put-int-many": lambda: [
            lib.zeros(5, 2, dtype=i64).index_put(
                (lib.tensor(np.arange(200) % 5),), lib.ones(200, 2, dtype=i64), accumulate=True
            )
        ],
        "scatter-reduce-number": lambda: [
            lib.ones(2, 3).scatter(1, lib.tensor([[0, 0], [2, 1]]), 2.5, reduce="add"),
            lib.ones(2, 3).scatter(1, lib.tensor([[0, 0], [2, 1]]), 2.5, reduce="multiply"),
        ],
        # ops/index_ops.py
        "index_fill-tensor-dtype": lambda: _vg(
            lib, _A, lambda x: x.index_fill(1, idx3, lib.tensor(2.5, dtype=lib.float32))
        ),
        "scatter_reduce-src-larger": lambda: [
            lib.zeros(3, 2, dtype=lib.float64).scatter_reduce(
                1, lib.tensor([[1], [0], [1]]), lib.tensor(_A), r
            )
            for r in ("sum", "amax", "mean")
        ],
        "scatter_reduce-int-mean": lambda: [
            lib.tensor([[7, 8], [9, 10]]).scatter_reduce(
                0, lib.tensor([[0, 0], [0, 0]]), lib.tensor([[2, 3], [4, 6]]), "mean"
            )
        ],
        "scatter_reduce-int-amax": lambda: [
            lib.tensor([7, -8, 9], dtype=lib.int32).scatter_reduce(
                0,
                lib.tensor([0, 1, 1]),
                lib.tensor([2, -3, -4], dtype=lib.int32),
                r,
                include_self=False,
            )
            for r in ("amax", "amin")
        ],
        # ops/calculus.py
        "gradient-0d-spacing": lambda: list(
            lib.gradient(lib.tensor(_A), spacing=lib.tensor(0.5), dim=1)
        ),
        "atleast-empty": lambda: [
            len(lib.atleast_1d([])),
            len(lib.atleast_2d(())),
            len(lib.atleast_3d()),
        ],
        "trapezoid-x-1d": lambda: _vg(
            lib, _A, lambda y: lib.trapezoid(y, lib.tensor([0.0, 1.0, 3.0, 3.5]), dim=-1)
        ),
        "trapezoid-x-lower-ndim": lambda: _vg(
            lib, _A, lambda y: lib.trapezoid(y, lib.tensor([[0.0, 1.0, 3.0, 3.5]]), dim=1)
        ),
        "trapezoid-dx": lambda: [lib.trapezoid(lib.tensor(_A), dx=0.5)],
        "cumulative_trapezoid-dx": lambda: [lib.cumulative_trapezoid(lib.tensor(_A), dx=0.5)],
        # ops/shape_more.py
        "rot90-k": lambda: (
            [lib.rot90(lib.tensor(_A), k) for k in (2, 4, -2, 6)]
            + _vg(lib, _A, lambda x: lib.rot90(x, 2))
            + _vg(lib, _A, lambda x: lib.rot90(x, 4))
        ),
        "repeat_interleave-counts": lambda: [lib.repeat_interleave(lib.tensor([2, 0, 3]))],
        "repeat_interleave-0d": lambda: _vg(lib, 1.5, lambda x: lib.repeat_interleave(x, 3)),
        "block_diag-none": lambda: [lib.block_diag()],
        # ops/sorting.py
        "sort-0d": lambda: list(lib.sort(lib.tensor(2.0))) + list(lib.max(lib.tensor(2.0), 0)),
        "bincount-float32-weights": lambda: [
            lib.bincount(lib.tensor([0, 2, 2]), lib.tensor([0.5, 1.0, 2.0], dtype=lib.float32)),
            lib.bincount(lib.tensor([0, 2, 2]), lib.tensor([0.5, 1.0, 2.0])),
        ],
        # ops/decomp.py, lu.py, solve_more.py (integer inputs become float), ...
        "svd-full-no-grad": lambda: [
            t.abs() for t in lib.linalg.svd(lib.tensor(_A), full_matrices=True)
        ],
        "matrix_rank-tol": lambda: [
            lib.linalg.matrix_rank(lib.tensor(_A[:, :3]), tol=1e-3),
            lib.linalg.matrix_rank(lib.tensor([[1.0, 0.0], [0.0, 1e-4]]), tol=1e-3),
        ],
        "lu_solve-b-dtype": lambda: [
            lib.linalg.lu_solve(
                *lib.linalg.lu_factor(lib.tensor([[2.0, 1.0], [1.0, 3.0]])),
                lib.tensor([[1.0], [2.0]], dtype=lib.float32),
            )
        ],
        "nansum-int": lambda: [lib.nansum(lib.tensor([[1, 2], [3, 4]]), 1)],
        "dist-tensor-p": lambda: _vg(lib, _A, lambda x: lib.dist(x, lib.zeros(4), lib.tensor(3.0))),
        "trace-int": lambda: [lib.trace(lib.tensor([[1, 2], [3, 4]]))],
        "pairwise_distance-0d": lambda: _vg(
            lib, 1.5, lambda x: lib.nn.functional.pairwise_distance(x, lib.tensor(0.5))
        ),
        "cosine_similarity-broadcast": lambda: _vg(
            lib,
            _A[:1],
            lambda x: lib.nn.functional.cosine_similarity(x, lib.tensor(_A)),
        ),
        # ops/arithmetic.py: a number first, unary plus, reflected floor division, invert
        "add-number-first": lambda: _vg(lib, _A, lambda x: lib.add(2, x)),
        "mul-number-first": lambda: _vg(lib, _A, lambda x: lib.mul(2.5, x)),
        "pos": lambda: _vg(lib, _A, lambda x: +x),
        "rfloordiv-invert": lambda: [
            7 // lib.tensor([2, -3]),
            ~lib.tensor([1, 2]),
            ~lib.tensor([True]),
        ],
        # nn/_attention.py: a float32 mask for a float64 query (cast), and float16
        "sdpa-float32-mask": lambda: _vg(
            lib,
            _A[:2].reshape(1, 2, 4),
            lambda q: lib.nn.functional.scaled_dot_product_attention(
                q, q * 0.5, q, lib.tensor([[0.0, -1.0], [0.5, 0.0]], dtype=lib.float32)
            ),
        ),
        # nn/_pool_fractional.py, _pool_more.py
        "fractional_with_indices": lambda: (
            list(
                lib.nn.functional.fractional_max_pool2d_with_indices(
                    lib.tensor(np.arange(16.0).reshape(1, 1, 4, 4)),
                    2,
                    output_size=2,
                    _random_samples=lib.ones(1, 1, 2, dtype=lib.float64) / 2,
                )
            )
            + list(
                lib.nn.functional.fractional_max_pool3d_with_indices(
                    lib.tensor(np.arange(64.0).reshape(1, 1, 4, 4, 4)),
                    2,
                    output_size=2,
                    _random_samples=lib.ones(1, 1, 3, dtype=lib.float64) / 2,
                )
            )
        ),
        "adaptive_max_pool-same-size": lambda: (
            _vg(lib, _A.reshape(1, 3, 4), lambda x: lib.nn.functional.adaptive_max_pool1d(x, 4))
            + _vg(
                lib,
                _A.reshape(1, 1, 3, 4),
                lambda x: lib.nn.functional.adaptive_max_pool2d(x, (3, 2)),
            )
        ),
        # nn/init.py
        "calculate_gain": lambda: [
            lib.tensor(lib.nn.init.calculate_gain(n, p))
            for n, p in (("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None), ("tanh", None))
        ],
        # nn/utils/rnn.py: float lengths are truncated to int64, as torch
        "pack_padded-float-lengths": lambda: list(
            lib.nn.utils.rnn.pack_padded_sequence(
                lib.tensor(np.arange(6.0).reshape(3, 2, 1)), lib.tensor([2.7, 1.2])
            )[:2]
        ),
        # ops/clamp.py: a 0-d bound of a wider dtype does not widen the input (torch's
        # promotion), a dimensioned one does
        "clamp-0d-float64-bounds": lambda: (
            _vg(
                lib,
                _A,
                lambda x: lib.clamp(
                    x.float(),
                    lib.tensor(-1.0, dtype=lib.float64),
                    lib.tensor(2.0, dtype=lib.float64),
                ),
            )
            + [
                lib.clamp(lib.tensor([1.0, 2.0]), max=lib.tensor([1.5, 1.5], dtype=lib.float64)),
                lib.clamp(lib.tensor([1, 2]), lib.tensor(0.5)),
                lib.clamp(lib.tensor([1, 5], dtype=lib.int32), 0, 3),
                lib.clamp(lib.tensor([1, 2]), 1.5),
            ]
        ),
        "maximum-0d-float64": lambda: [
            lib.maximum(lib.tensor([1.0, 2.0]), lib.tensor(1.5, dtype=lib.float64)),
            lib.minimum(lib.tensor([1, 2]), lib.tensor(1.5, dtype=lib.float64)),
            lib.maximum(lib.tensor([1.0, 2.0]), lib.tensor([1.5, 0.5], dtype=lib.float64)),
        ],
        # ops/misc_math.py: a number base, integer ldexp, equal of different shapes
        "float_power-number": lambda: _vg(lib, [1.0, 2.5], lambda e: lib.float_power(2, e)),
        "ldexp-int": lambda: [lib.ldexp(lib.tensor([1, 2]), lib.tensor([1, 3]))],
        "equal": lambda: [
            lib.tensor(lib.equal(lib.ones(2), lib.ones(3))),
            lib.tensor(lib.equal(lib.ones(2), lib.ones(2))),
        ],
        # nn/_loss_ops.py: a batched upstream gradient of cross_entropy's scalar loss
        "cross_entropy-batched-grad": lambda: list(
            lib.autograd.grad(
                lib.nn.functional.cross_entropy(
                    x := lib.tensor(_A[:2], requires_grad=True), lib.tensor([0, 2])
                ),
                x,
                lib.tensor([1.0, -2.0], dtype=lib.float64),
                is_grads_batched=True,
            )
        ),
        # nn/_pool_ops.py: infinite upstream gradients stay at the maxima (not inf * 0)
        "max_pool2d-inf-grad": lambda: _max_pool_inf(lib),
        # nn/_norm_ops.py: an empty batch gives zero weight and bias gradients
        "layer_norm-empty": lambda: _layer_norm_empty(lib),
        # nn/_layers_functional.py
        "instance_norm-running-affine": lambda: _vg(
            lib,
            _A.reshape(1, 3, 4),
            lambda x: lib.nn.functional.instance_norm(
                x,
                lib.tensor([0.5, -1.0, 0.0], dtype=lib.float64),
                lib.tensor([2.0, 1.0, 0.5], dtype=lib.float64),
                lib.tensor([1.5, -1.0, 2.0], dtype=lib.float64),
                lib.tensor([0.1, 0.2, 0.3], dtype=lib.float64),
                use_input_stats=False,
            ),
        ),
        "local_response_norm-empty": lambda: [
            lib.nn.functional.local_response_norm(lib.ones(0, 3, 2), 2)
        ],
        "embedding_bag-negative-padding": lambda: [
            lib.nn.functional.embedding_bag(
                lib.tensor([[0, 2], [2, 2]]), lib.tensor(_A[:, :2]), mode="sum", padding_idx=-1
            )
        ],
        "embedding_bag-no-bags": lambda: [
            lib.nn.functional.embedding_bag(
                lib.tensor([], dtype=lib.int64), lib.tensor(_A), lib.tensor([], dtype=lib.int64)
            )
        ],
        # nn/functional.py: softmax's implicit dim (torch warns)
        "softmax-implicit-dim": lambda: [
            lib.nn.functional.softmax(lib.tensor(a)) for a in (_A[0], _A, _A.reshape(1, 3, 4))
        ],
        # nn/_losses_pointwise.py: gaussian_nll with a number for var, huber with a weight
        "gaussian_nll-number-var": lambda: _vg(
            lib, _A, lambda x: lib.nn.functional.gaussian_nll_loss(x, lib.zeros(3, 4), 0.5)
        ),
        "huber-weight": lambda: _vg(
            lib,
            _A,
            lambda x: lib.nn.functional.huber_loss(
                x,
                lib.zeros(3, 4, dtype=lib.float64),
                weight=lib.tensor(np.linspace(0.5, 2.0, 12).reshape(3, 4)),
            ),
        ),
        "conv3d-valid": lambda: _vg(
            lib,
            np.arange(16.0).reshape(1, 1, 2, 2, 4) / 10,
            lambda x: lib.nn.functional.conv3d(x, x[:, :, :1, :1, :2], padding="valid"),
        ),
    }


def _max_pool_inf(lib):
    x = lib.tensor(np.arange(32.0).reshape(1, 2, 4, 4) % 7, requires_grad=True)
    y = lib.nn.functional.max_pool2d(x, 2)
    g = np.array([[np.inf, 1.0], [2.0, -np.inf]])
    y.backward(lib.tensor(np.stack([g, -g])[None]))
    return [y, x.grad]


def _layer_norm_empty(lib):
    x = lib.zeros(0, 4, requires_grad=True)
    w = lib.ones(4, requires_grad=True)
    b = lib.zeros(4, requires_grad=True)
    y = lib.nn.functional.layer_norm(x, (4,), w, b)
    y.sum().backward()
    return [y, x.grad, w.grad, b.grad]


@pytest.mark.filterwarnings("ignore:Implicit dimension choice")
@pytest.mark.parametrize("case", sorted(_values(tg)))
def test_paths_match_torch(torch_mod, case):
    ours = _values(tg)[case]()
    theirs = _values(torch_mod)[case]()
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        _same(a, b, rtol=1e-6)


def test_scatter_reduce_of_a_larger_src_reads_its_leading_block():
    # the values match torch (test_paths_match_torch); torch's backward refuses this case
    # ("invalid gradient ... got [3, 1]"), so the gradient is checked by its definition:
    # d/dsrc is g gathered at index on src's leading index.shape block, 0 elsewhere
    x = tg.tensor(_A, requires_grad=True)
    index = np.array([[1], [0], [1]])
    out = tg.zeros(3, 2, dtype=tg.float64).scatter_reduce(1, tg.tensor(index), x, "sum")
    g = np.arange(1.0, 7.0).reshape(3, 2)
    out.backward(tg.tensor(g))
    want = np.zeros_like(_A)
    want[:, :1] = np.take_along_axis(g, index, 1)
    _same(x.grad, want)


def test_extensions_beyond_torch():
    # a number for x is dx (torch's overloads refuse a positional number)
    y = tg.tensor(_A)
    _same(tg.trapezoid(y, 0.5), tg.trapezoid(y, dx=0.5))
    _same(tg.cumulative_trapezoid(y, 0.5), tg.cumulative_trapezoid(y, dx=0.5))
    # coordinates of the wrong length: torch returns NaN, tapegrad says why
    with pytest.raises(RuntimeError, match="as many elements as dim 0"):
        tg.gradient(tg.ones(4), spacing=(tg.ones(3),))


_INTEGER_INPUTS = {
    "linalg.eigh": lambda lib, t: list(lib.linalg.eigh(t([[2, 1], [1, 2]]))),
    "linalg.eigvalsh": lambda lib, t: [lib.linalg.eigvalsh(t([[2, 1], [1, 3]]))],
    "linalg.slogdet": lambda lib, t: list(lib.linalg.slogdet(t([[2, 1], [1, 3]]))),
    "cholesky_inverse": lambda lib, t: [lib.cholesky_inverse(t([[2, 0], [1, 1]]))],
    "logcumsumexp": lambda lib, t: [lib.logcumsumexp(t([1, 2, 3]), 0)],
}


@pytest.mark.parametrize("name", sorted(_INTEGER_INPUTS))
def test_integer_inputs_compute_in_float32_as_torch_does_for_floats(torch_mod, name):
    # torch refuses integer inputs here; tapegrad computes in the default float dtype
    # (Note: tests/test_ops_math.py::test_integer_inputs_to_float_ops_give_float32)
    f = _INTEGER_INPUTS[name]
    ours = f(tg, lambda a: tg.tensor(a))
    theirs = f(torch_mod, lambda a: torch_mod.tensor(a, dtype=torch_mod.float32))
    for a, b in zip(ours, theirs):
        _same(a, b, rtol=1e-6, atol=1e-6)
    # a bool Vandermonde matrix is computed in int64 (torch refuses bool)
    _same(
        tg.linalg.vander(tg.tensor([True, False, True])),
        torch_mod.linalg.vander(torch_mod.tensor([1, 0, 1])),
    )


def test_singular_and_mis_sized_factors_raise_where_torch_returns_nan_or_ignores():
    # torch's cholesky_solve returns NaN for a factor with a zero on its diagonal
    with pytest.raises(tg.linalg.LinAlgError, match="zero on its diagonal"):
        tg.cholesky_solve(tg.ones(2, 1), tg.zeros(2, 2))
    # torch's lu_unpack ignores pivots past min(m, n)
    with pytest.raises(RuntimeError, match="must be min"):
        tg.lu_unpack(tg.eye(2), tg.ones(3, dtype=tg.int32))


def test_matmul_by_an_expanded_matrix_in_row_blocks_matches_torch(torch_mod):
    # a stack times one matrix expanded over the stack (stride 0, as an unbatched weight
    # under vmap) runs as one GEMM over the rows, in blocks of at most 2^18 / (k n) rows:
    # here 64 rows a block, 160 rows in all (a shorter last block), gradients included
    rng = np.random.default_rng(1)
    a = rng.standard_normal((20, 8, 64))
    w = rng.standard_normal((64, 64))
    res = []
    for lib in (tg, torch_mod):
        x = lib.tensor(a, requires_grad=True)
        wt = lib.tensor(w, requires_grad=True)
        y = lib.matmul(x, wt.expand(20, 64, 64))
        y.backward(lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape))))
        res.append((y, x.grad, wt.grad))
    for ours, theirs in zip(*res):
        _same(ours, theirs, rtol=1e-10, atol=1e-10)


def _constant_caches():
    from tapegrad.nn import _attention, _fused, _norm_ops  # noqa: PLC0415
    from tapegrad.ops import _spatial_mean  # noqa: PLC0415

    f64 = np.dtype(np.float64)
    return {
        # cache, its bound, a getter of the constant for size n, the constant expected
        "causal": (
            _attention._CAUSAL,
            64,
            lambda n: _attention._causal_bias(n, 2, f64),
            lambda n: np.triu(np.full((n, 2), -np.inf), 1),
        ),
        "spatial_ones": (
            _spatial_mean._ONES,
            65,
            lambda n: _spatial_mean._ones(n, f64),
            lambda n: np.ones(n),
        ),
        "averager": (
            _norm_ops._AVERAGERS,
            257,
            lambda n: _norm_ops._averager(n, f64),
            lambda n: np.full((n, 1), 1.0 / n),
        ),
        "ones_row": (
            _fused._ONES_ROWS,
            65,
            lambda n: _fused._ones_row(n, f64),
            lambda n: np.ones((1, n)),
        ),
    }


@pytest.mark.parametrize("name", ["causal", "spatial_ones", "averager", "ones_row"])
def test_constant_caches_stay_bounded_and_read_only(name):
    cache, bound, get, want = _constant_caches()[name]
    for n in range(1, bound + 40):
        v = get(n)
        assert len(cache) <= bound
        assert not v.flags.writeable
        np.testing.assert_array_equal(v, want(n))
        assert get(n) is v  # the second call is a cache hit
    # the cache was emptied on the way (it holds fewer than the sizes asked)
    assert len(cache) < bound + 39
