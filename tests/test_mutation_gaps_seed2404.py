"""Survivors of the mutation sample seed 2404 (docs/mutation-run-seed2404.md), each killed
by a test of the behaviour it changed."""

import numpy as np
import pytest
import torch

import tapegrad as tg


@pytest.mark.parametrize("shape", [(0, 3), (0, 3, 4)])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_of_an_empty_batch_of_probability_targets_is_nan(shape, smoothing):
    """torch: the mean over no samples is NaN (and the gradient empty)."""
    out = []
    for mod in (torch, tg):
        x = mod.zeros(shape, requires_grad=True)
        loss = mod.nn.functional.cross_entropy(x, mod.zeros(shape), label_smoothing=smoothing)
        loss.backward()
        out.append((loss.item(), tuple(x.grad.shape)))
    assert np.isnan(out[1][0]) and np.isnan(out[0][0])
    assert out[0][1] == out[1][1]


@pytest.mark.parametrize(
    "size, stride, offset",
    [((3,), (2,), 0), ((2, 2), (1, 3), 0), ((2,), (1,), 3)],
)
def test_as_strided_scatter_out_of_the_storage_raises_like_torch(size, stride, offset):
    for mod in (torch, tg):
        with pytest.raises(RuntimeError, match="out of bounds for storage of size 16"):
            mod.as_strided_scatter(mod.zeros(4), mod.ones(size), size, stride, offset)


@pytest.mark.parametrize("spatial", [(3,), (2, 3)])
def test_instance_norm_updates_running_stats_like_torch(spatial):
    """The running variance takes the unbiased variance over each instance's elements."""
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((2, 3) + spatial)
    stats = []
    for mod in (torch, tg):
        mean, var = mod.zeros(3, dtype=mod.float64), mod.ones(3, dtype=mod.float64)
        y = mod.nn.functional.instance_norm(
            mod.tensor(xs), running_mean=mean, running_var=var, use_input_stats=True, momentum=0.3
        )
        stats.append([t.numpy() for t in (mean, var, y)])
    for mine, theirs in zip(stats[1], stats[0], strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-14)


def test_an_empty_profiler_average_has_zero_cpu_time_like_torch():
    from torch.autograd.profiler_util import FunctionEventAvg as TorchAvg

    from tapegrad.autograd.profiler_util import FunctionEventAvg

    mine, theirs = FunctionEventAvg(), TorchAvg()
    assert mine.count == theirs.count == 0
    assert mine.cpu_time == theirs.cpu_time == 0.0
    assert mine.cpu_time_str == theirs.cpu_time_str


def test_weight_norm_normalises_over_dim_0_by_default_like_torch():
    """``weight_norm(module)``: g has one entry per output row, as torch's default dim=0."""
    shapes, weights = [], []
    for mod in (torch, tg):
        lin = mod.nn.Linear(3, 2)
        with mod.no_grad():
            lin.weight.copy_(mod.tensor([[3.0, 4.0, 0.0], [1.0, 2.0, 2.0]]))
        m = mod.nn.utils.parametrizations.weight_norm(lin)
        shapes.append(tuple(m.parametrizations.weight.original0.shape))
        weights.append(m.weight.detach().numpy())
    assert shapes[1] == shapes[0] == (2, 1)
    np.testing.assert_allclose(weights[1], weights[0], rtol=1e-6)


def test_attention_splits_only_a_batch_of_at_least_two(monkeypatch):
    """The split kernel shares the leading (batch) dim out: one batch entry with several
    heads is not split (the same values either way, so the path is checked)."""
    from tapegrad.nn import _attention_split

    monkeypatch.setattr(_attention_split, "STEP", [False])
    monkeypatch.setattr(_attention_split, "num_threads", lambda: 2)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 4, 128, 8)) for _ in range(3))
    assert _attention_split.forward(q, k, v, None, 0.5, None) is None
    q2, k2, v2 = (a.reshape(4, 1, 128, 8) for a in (q, k, v))
    assert _attention_split.forward(q2, k2, v2, None, 0.5, None) is not None


def test_isin_with_repeated_elements_matches_torch():
    """isin assumes nothing unique by default: repeated elements are not 'found' by each
    other (NumPy's sort path with assume_unique=True would say they are)."""
    a = np.array([2.0, 2.0, 7.0] * 20)
    b = np.arange(100.0) + 0.5
    mine = tg.isin(tg.tensor(a), tg.tensor(b)).numpy()
    np.testing.assert_array_equal(mine, torch.isin(torch.tensor(a), torch.tensor(b)).numpy())


def test_histogram_and_solve_triangular_shape_errors_match_torch():
    for mod in (torch, tg):
        with pytest.raises(RuntimeError, match="one dimension, but got 2 dimensions in the bins"):
            mod.histogram(mod.ones(3), mod.ones(2, 2))
    with pytest.raises(RuntimeError, match="B must be a matrix"):
        tg.linalg.solve_triangular(tg.eye(3), tg.ones(3), upper=True)
    with pytest.raises(RuntimeError, match="B must have at least 2 dimensions"):
        torch.linalg.solve_triangular(torch.eye(3), torch.ones(3), upper=True)


@pytest.mark.parametrize("cell", ["RNNCell", "LSTMCell", "GRUCell"])
def test_recurrent_cells_draw_weights_from_minus_to_plus_one_over_sqrt_hidden(cell):
    """torch: every parameter uniform on (-1/sqrt(H), 1/sqrt(H))."""
    tg.manual_seed(0)
    m = getattr(tg.nn, cell)(50, 100)
    w = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    bound = 1.0 / np.sqrt(100)
    assert w.min() < -0.9 * bound and w.max() > 0.9 * bound and np.abs(w).max() <= bound


def test_legacy_weight_norm_sets_the_weight_at_once_like_torch():
    outs = []
    for mod in (torch, tg):
        lin = mod.nn.Linear(3, 2)
        with mod.no_grad():
            lin.weight.copy_(mod.tensor([[3.0, 4.0, 0.0], [1.0, 2.0, 2.0]]))
        with pytest.warns(FutureWarning):
            m = mod.nn.utils.weight_norm(lin)
        outs.append(m.weight.detach().numpy())  # before any forward
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-6)


def test_copy_into_a_recorded_tensor_cuts_the_old_values_gradient_like_torch():
    grads = []
    for mod in (torch, tg):
        x = mod.ones(3, requires_grad=True)
        y = mod.full((3,), 2.0, requires_grad=True)
        a = x * 1
        a.copy_(y)
        (a * mod.tensor([1.0, 2.0, 3.0])).sum().backward()
        grads.append((x.grad.numpy(), y.grad.numpy(), a.detach().numpy()))
    for mine, theirs in zip(grads[1], grads[0], strict=True):
        np.testing.assert_array_equal(mine, theirs)
