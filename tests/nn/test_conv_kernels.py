"""The conv2d kernels of issue 16: the grid and tap-row im2col (Notes [Grid im2col],
[Tap-row im2col]), the bias carried
through the GEMM, the output gradient made channels-last once, and small GEMMs on one
BLAS thread (Note [Small GEMMs on one thread]), against PyTorch and under tg.jit.cache."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F
from tapegrad import _blas_threads
from tapegrad.autograd import gradcheck, gradgradcheck
from tapegrad.nn import _conv_grid, _conv_kept, _conv_ops, _conv_taps

rng = np.random.default_rng(0)

GRID_CASES = [
    # (N, C, O, kernel, padding, dilation, bias, (H, W))
    (64, 1, 16, 3, 1, 1, True, (8, 8)),  # the digits CNN's first convolution
    (1, 1, 4, 3, 1, 2, True, (13, 11)),  # batch 1, odd sizes, dilation
    (3, 2, 4, (3, 2), "same", 1, False, (5, 6)),  # even kernel: asymmetric 'same' padding
    (2, 1, 3, 2, "same", 1, True, (5, 5)),
    (2, 1, 3, 3, "valid", 1, True, (8, 7)),
    (2, 3, 2, 1, 0, 1, True, (4, 5)),  # 1x1 kernel, unpadded input
    (2, 1, 5, (1, 5), (0, 2), (1, 2), True, (6, 21)),
    (3, 1, 4, 3, 1, 2, True, (9, 8)),  # dilation 2 (tap rows: one channel)
    (3, 1, 12, 3, 1, 2, False, (9, 8)),  # O > kh·kw: the forward's tap rows kept, no bias
]


def _spy(monkeypatch, module, name):
    calls = []
    original = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


def _conv_both(torch, x, w, b, g, **kw):
    """(tapegrad, torch) results and x/w/b gradients for output gradient ``g``."""
    out = []
    for lib in (tg, torch):
        xt = lib.tensor(x, requires_grad=True)
        wt = lib.tensor(w, requires_grad=True)
        bt = None if b is None else lib.tensor(b, requires_grad=True)
        y = lib.nn.functional.conv2d(xt, wt, bt, **kw)
        y.backward(lib.tensor(g))
        grads = [t.grad.numpy() for t in (xt, wt, bt) if t is not None]
        out.append((y.detach().numpy(), grads, y.dtype))
    return out


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", GRID_CASES, ids=[str(c) for c in GRID_CASES])
def test_grid_convolution_matches_torch(case, dtype, torch_mod, monkeypatch):
    n, c, o, k, p, d, bias, hw = case
    k2 = (k, k) if isinstance(k, int) else k
    # one input channel: the tap-row columns (Note [Tap-row im2col]); a few: the grid
    # with O > kh·kw the forward's tap rows are kept for the weight gradient
    kept = "kept_weight_grad" if o > k2[0] * k2[1] else "tap_rows_weight_grad"
    module, names = (
        (_conv_taps, ("tap_rows_conv", kept))
        if c == 1
        else (_conv_grid, ("grid_conv", "grid_weight_grad"))
    )
    fwd = _spy(monkeypatch, module, names[0])
    if c == 1 and bias and kept == "kept_weight_grad":  # the bias's row of ones kept too
        wgrad = _spy(monkeypatch, _conv_kept, "weight_and_bias_grad")
    else:
        wgrad = _spy(monkeypatch, module, names[1])
    x = rng.standard_normal((n, c) + hw).astype(dtype)
    w = rng.standard_normal((o, c) + k2).astype(dtype)
    b = rng.standard_normal(o).astype(dtype) if bias else None
    ref_shape = torch_mod.nn.functional.conv2d(
        torch_mod.tensor(x), torch_mod.tensor(w), padding=p, dilation=d
    ).shape
    g = rng.standard_normal(tuple(ref_shape)).astype(dtype)
    (y, grads, ydt), (yr, grads_r, _) = _conv_both(torch_mod, x, w, b, g, padding=p, dilation=d)
    assert fwd and wgrad, f"the case should take the {module.__name__} path"
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-10}
    assert y.shape == yr.shape and ydt == (tg.float32 if dtype == np.float32 else tg.float64)
    np.testing.assert_allclose(y, yr, **tol)
    for ours, theirs in zip(grads, grads_r, strict=True):
        np.testing.assert_allclose(ours, theirs, **tol)


def test_grid_path_is_not_taken_where_it_wastes():
    geom = _conv_ops.Geometry((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    assert _conv_grid.use_grid((2, 1, 8, 8), (3, 3), (8, 8), geom)
    assert not _conv_grid.use_grid((2, 16, 8, 8), (3, 3), (8, 8), geom)  # long channel runs
    assert not _conv_grid.use_grid((2, 1, 2, 2), (3, 3), (2, 2), geom)  # 16 cells for 4 outputs
    strided = _conv_ops.Geometry((2, 2), ((1, 1), (1, 1)), (1, 1), 1)
    assert not _conv_grid.use_grid((2, 1, 8, 8), (3, 3), (4, 4), strided)
    grouped = _conv_ops.Geometry((1, 1), ((1, 1), (1, 1)), (1, 1), 2)
    assert not _conv_grid.use_grid((2, 2, 8, 8), (3, 3), (8, 8), grouped)


def test_grid_convolution_gradgradcheck():
    x = tg.randn(2, 1, 5, 4, dtype=tg.float64, requires_grad=True)
    w = tg.randn(3, 1, 3, 3, dtype=tg.float64, requires_grad=True)
    b = tg.randn(3, dtype=tg.float64, requires_grad=True)

    def f(x, w, b):
        return F.conv2d(x, w, b, padding=1, dilation=(2, 1))

    assert gradcheck(f, (x, w, b), atol=1e-6, rtol=1e-5)
    assert gradgradcheck(f, (x, w, b), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("groups", [1, 2])
def test_bias_through_the_gemm_with_groups_and_blocks(groups, torch_mod, monkeypatch):
    """The im2col path's column of ones, one sample per block (Note [Convolution memory])."""
    monkeypatch.setattr(_conv_ops, "_BLOCK_BYTES", 1)
    x = rng.standard_normal((3, 4, 7, 6)).astype(np.float32)
    w = rng.standard_normal((6, 4 // groups, 3, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    g = rng.standard_normal((3, 6, 7, 3)).astype(np.float32)
    ours, theirs = _conv_both(torch_mod, x, w, b, g, stride=(1, 2), padding=1, groups=groups)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4, atol=1e-4)
    for a, r in zip(ours[1], theirs[1], strict=True):
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("stride", [(2, 1), (3, 2)])
def test_tap_rows_with_stride_match_torch(stride, torch_mod, monkeypatch):
    """One input channel, strided (no grid there): the tap-row path, bias included."""
    fwd = _spy(monkeypatch, _conv_taps, "tap_rows_conv")
    x = rng.standard_normal((3, 1, 9, 7)).astype(np.float32)
    w = rng.standard_normal((5, 1, 3, 2)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    shape = torch_mod.nn.functional.conv2d(
        torch_mod.tensor(x), torch_mod.tensor(w), stride=stride, padding=1
    ).shape
    g = rng.standard_normal(tuple(shape)).astype(np.float32)
    ours, theirs = _conv_both(torch_mod, x, w, b, g, stride=stride, padding=1)
    assert fwd
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4, atol=1e-4)
    for a, r in zip(ours[1], theirs[1], strict=True):
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(2, 16, 4, 4), (2, 1, 8, 8)])
def test_broadcast_output_gradient(shape, torch_mod):
    """sum().backward() hands conv a broadcast (zero-stride) gradient: it is made dense and
    channels-last once, and every gradient still matches."""
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((8, shape[1], 3, 3)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    res = []
    for lib in (tg, torch_mod):
        ts = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        lib.nn.functional.conv2d(*ts, padding=1).sum().backward()
        res.append([t.grad.numpy() for t in ts])
    for a, r in zip(*res, strict=True):
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-3)


def test_output_gradient_matrix_copies_only_when_needed():
    g = rng.standard_normal((2, 3, 4, 5))  # NCHW in memory: one copy into NHWC order
    gm = _conv_ops._out_grad_matrix(g)
    assert gm.shape == (2 * 4 * 5, 3) and gm.flags.c_contiguous
    np.testing.assert_array_equal(gm, g.transpose(0, 2, 3, 1).reshape(-1, 3))
    dense = np.ascontiguousarray(g.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    assert np.shares_memory(_conv_ops._out_grad_matrix(dense), dense)  # channels-last: a view


# -- Note [Small GEMMs on one thread] ------------------------------------------------------


class _FakeBlas:
    """get/set pair standing in for OpenBLAS's, recording what was set."""

    def __init__(self, n):
        self.n = n
        self.sets = []

    def get(self):
        return self.n

    def put(self, n):
        self.sets.append(n)
        self.n = n


@pytest.fixture
def fake_blas(monkeypatch):
    blas = _FakeBlas(2)
    monkeypatch.setitem(_blas_threads._STATE, "handles", [(blas.get, blas.put)])
    monkeypatch.setitem(_blas_threads._STATE, "depth", 0)
    return blas


def test_one_thread_limits_and_restores(fake_blas):
    with _blas_threads.one_thread(1000):
        assert fake_blas.n == 1
        with _blas_threads.one_thread(10):  # nested: the outer block restores
            assert fake_blas.n == 1
        assert fake_blas.n == 1
    assert fake_blas.n == 2 and fake_blas.sets == [1, 2]
    with _blas_threads.one_thread(_blas_threads.SMALL_MNK):  # large products keep every thread
        assert fake_blas.n == 2
    assert fake_blas.sets == [1, 2]


def test_one_thread_restores_after_an_error(fake_blas):
    with pytest.raises(ValueError), _blas_threads.one_thread(1):
        raise ValueError
    assert fake_blas.n == 2 and _blas_threads._STATE["depth"] == 0


def test_one_thread_leaves_a_single_thread_setting_alone(fake_blas):
    fake_blas.n = 1
    with _blas_threads.one_thread(1):
        pass
    assert fake_blas.sets == []


def test_conv_step_limits_threads_eagerly_and_in_replays(fake_blas):
    """The limit is logged into tg.jit recordings: replays run their GEMMs on one thread."""
    w = tg.randn(4, 1, 3, 3, requires_grad=True)
    seen = []
    original = fake_blas.put

    def put(n):
        seen.append(n)
        original(n)

    fake_blas.put = put
    _blas_threads._STATE["handles"] = [(fake_blas.get, put)]

    @tg.jit.cache
    def step(x):
        F.conv2d(x, w, padding=1).sum().backward()

    for _ in range(4):
        seen.clear()
        step(tg.randn(2, 1, 6, 6))
        assert seen and seen[0] == 1 and fake_blas.n == 2
    assert step.cache_info().hits >= 1


def test_real_openblas_is_found_and_restored():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not _blas_threads._handles():
        pytest.skip("no OpenBLAS found in this process (NumPy uses another BLAS)")

    def blas_threads():
        return [
            i["num_threads"]
            for i in threadpoolctl.threadpool_info()
            if i["internal_api"] == "openblas"
        ]

    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        with _blas_threads.one_thread(1):
            assert set(blas_threads()) == {1}
        assert blas_threads() == before


# -- a cached CNN step ---------------------------------------------------------------------


def test_cached_cnn_step_matches_eager():
    """Grid conv (C = 1), tiled max pool, im2col conv (C = 8), SGD: replays equal eager."""
    arrays = [
        rng.standard_normal(s).astype(np.float32) * 0.3
        for s in [(8, 1, 3, 3), (8,), (6, 8, 3, 3), (6,), (3, 6), (3,)]
    ]
    labels = tg.tensor([0, 1, 2, 1, 0])
    images = rng.standard_normal((5, 5, 1, 6, 6)).astype(np.float32)
    data = [(tg.tensor(x), labels) for x in images]

    def make():
        p = [tg.tensor(a.copy(), requires_grad=True) for a in arrays]
        opt = tg.optim.SGD(p, lr=0.1, momentum=0.9)

        def step(x, y):
            h = F.max_pool2d(F.relu(F.conv2d(x, p[0], p[1], padding=1)), 2)
            h = F.relu(F.conv2d(h, p[2], p[3], padding=1))
            loss = F.cross_entropy(F.linear(h.mean(dim=(2, 3)), p[4], p[5]), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss

        return step, p

    eager, pe = make()
    cached, pc = make()
    cached = tg.jit.cache(cached)
    for x, y in data:
        np.testing.assert_allclose(cached(x, y).item(), eager(x, y).item(), rtol=1e-5)
    for a, b in zip(pc, pe, strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert cached.cache_info().hits >= 2
