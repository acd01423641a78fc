"""vmap's cheap bookkeeping (issue 15): parameters lifted as stride-0 leaves straight on
their arrays, the generator snapshot behind randomness="error", BatchedTensor.numel."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad._vmap_grad import _expand_front

F = tg.func


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a,  # C-contiguous
        lambda a: a.T,  # F-contiguous
        lambda a: a[:, ::2],  # neither: broadcast_to
        lambda a: a[:0],  # empty
        lambda a: a[0, 0, ...],  # 0-d
    ],
)
def test_expand_front_is_a_read_only_stride0_view(make):
    a = make(np.arange(12.0).reshape(3, 4))
    v = _expand_front(a, (2, 5))
    assert v.shape == (2, 5) + a.shape
    assert v.strides[:2] == (0, 0)
    np.testing.assert_array_equal(v, np.broadcast_to(a, (2, 5) + a.shape))
    assert not v.flags.writeable
    if a.size:
        assert np.shares_memory(v, a)


def test_lifted_parameters_of_every_kind_give_per_sample_gradients():
    """Plain, transposed (F-contiguous), sliced and nested-vmap parameters."""
    rng = np.random.default_rng(0)
    x = tg.tensor(rng.standard_normal((3, 2, 4)))
    for w in (
        tg.tensor(rng.standard_normal((4, 5))),
        tg.tensor(rng.standard_normal((5, 4))).T,
        tg.tensor(rng.standard_normal((4, 10)))[:, ::2],
    ):

        def f(w, xb):
            return (xb @ w).sin().sum()

        per = F.vmap(F.grad(f), in_dims=(None, 0))(w, x)
        nested = F.vmap(F.vmap(F.grad(f), in_dims=(None, 0)), in_dims=(None, 0))(w, x)
        for b in range(3):
            want = F.grad(f)(w, x[b]).numpy()
            np.testing.assert_allclose(per[b].numpy(), want, rtol=1e-12)
            for c in range(2):
                one = F.grad(f)(w, x[b, c]).numpy()
                np.testing.assert_allclose(nested[b, c].numpy(), one, rtol=1e-12)


def test_error_mode_leaves_the_generator_where_it_was():
    x = tg.zeros(4, 3)
    tg.manual_seed(3)
    before = tg.get_rng_state()
    with pytest.raises(RuntimeError, match="randomness error mode"):
        F.vmap(lambda a: a + tg.rand(3))(x)
    assert tg.equal(tg.get_rng_state(), before)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        F.vmap(lambda a: (tg.manual_seed(5), a * 2)[1])(x)  # a reseed counts as randomness
    assert tg.equal(tg.get_rng_state(), before)
    assert tg.initial_seed() == 3
    F.vmap(lambda a: a * 2)(x)  # no draw: nothing to restore
    assert tg.equal(tg.get_rng_state(), before)


def test_batched_numel():
    seen = []
    F.vmap(lambda a: seen.append((a.numel(), a.nelement())) or a)(tg.zeros(4, 3, 5))
    assert seen == [(15, 15)]
    F.vmap(lambda a: seen.append(a.numel()) or a)(tg.zeros(4))
    assert seen[-1] == 1
