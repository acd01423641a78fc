"""The in-place samplers ``cauchy_``, ``log_normal_``, ``geometric_``, ``exponential_``,
``uniform_``: their distributions (Kolmogorov-Smirnov and chi-square tests at a fixed seed),
generator= reproducibility, and PyTorch's argument checks."""

import numpy as np
import pytest
from scipy import stats

import tapegrad as tg

N = 20_000
ALPHA = 1e-3  # the fixed-seed tests fail only if a sampler's law is wrong


def _draw(method, *args, dtype=tg.float64):
    gen = tg.Generator().manual_seed(1234)
    return getattr(tg.empty(N, dtype=dtype), method)(*args, generator=gen).numpy()


@pytest.mark.parametrize(
    ("method", "args", "law"),
    [
        ("cauchy_", (1.5, 0.5), stats.cauchy(loc=1.5, scale=0.5)),
        ("log_normal_", (0.5, 0.75), stats.lognorm(s=0.75, scale=np.exp(0.5))),
        ("log_normal_", (), stats.lognorm(s=2.0, scale=np.exp(1.0))),  # torch's defaults
        ("exponential_", (2.5,), stats.expon(scale=1 / 2.5)),
        ("uniform_", (-3.0, 1.0), stats.uniform(loc=-3.0, scale=4.0)),
    ],
)
def test_continuous_samplers_follow_their_law(method, args, law):
    sample = _draw(method, *args)
    assert stats.kstest(sample, law.cdf).pvalue > ALPHA
    # and a wrong law is rejected by the same test (the test has power)
    assert stats.kstest(sample * 1.1 + 0.05, law.cdf).pvalue < ALPHA


@pytest.mark.parametrize("dtype", [tg.float64, tg.int64])
def test_geometric_counts_trials_to_the_first_success(dtype):
    p = 0.3
    sample = _draw("geometric_", p, dtype=dtype)
    assert sample.min() >= 1
    k = np.arange(1, 15)
    observed = np.array([(sample == i).sum() for i in k] + [(sample >= 15).sum()])
    expected = N * np.append(stats.geom(p).pmf(k), stats.geom(p).sf(14))
    assert stats.chisquare(observed, expected).pvalue > ALPHA
    assert abs(sample.mean() - 1 / p) < 0.1


def test_samplers_are_reproducible_and_in_place():
    x = tg.zeros(5, dtype=tg.float64)
    assert x.cauchy_(generator=tg.Generator().manual_seed(7)) is x
    again = tg.zeros(5, dtype=tg.float64).cauchy_(generator=tg.Generator().manual_seed(7))
    assert x.tolist() == again.tolist()
    tg.manual_seed(3)
    a = tg.zeros(4).log_normal_()
    tg.manual_seed(3)
    assert a.tolist() == tg.zeros(4).log_normal_().tolist()
    assert a.dtype == tg.float32


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda x: x.cauchy_(0, -1), "cauchy_ expects sigma > 0.0, but found sigma=-1"),
        (lambda x: x.log_normal_(0, 0), "log_normal_ expects std > 0.0, but found std=0"),
        (lambda x: x.geometric_(1.5), r"geometric_ expects p to be in \(0, 1\), but got p=1.5"),
        (lambda x: x.exponential_(0), "exponential_ expects lambda > 0.0, but found lambda=0"),
        (lambda x: x.uniform_(2, 1), r"expects to return a \[from, to\) range"),
    ],
)
def test_sampler_argument_errors_as_torch(call, message, torch_mod):
    with pytest.raises(RuntimeError, match=message):
        call(tg.zeros(3))
    with pytest.raises(RuntimeError, match=message):
        call(torch_mod.zeros(3))


def test_samplers_refuse_a_leaf_that_requires_grad():
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        tg.zeros(3, requires_grad=True).geometric_(0.5)
