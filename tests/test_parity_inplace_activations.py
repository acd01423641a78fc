"""``inplace=True`` of the activations and dropouts overwrites the input, as in PyTorch 2.13.

It used to be accepted and ignored: ``F.relu(x, inplace=True)`` raised a TypeError, and
``nn.ReLU(inplace=True)(x)``, ``F.elu(x, inplace=True)``, ``nn.Dropout(inplace=True)``...
returned a new tensor and left ``x`` unchanged (a silent difference for code that relies
on the overwrite). Each case is run under both libraries and compared: the value, that the
input itself is returned, the version counter, the leaf error, gradients through a non-leaf
and through a view, and the "modified by an inplace operation" errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

_X = np.array([[-1.0, 2.0, -3.0], [0.5, -0.05, 3.0]])

# name -> (fn(lib, x, inplace), deterministic)
_CASES = {
    "relu": (lambda m, x, ip: m.nn.functional.relu(x, inplace=ip), True),
    "relu_positional": (lambda m, x, ip: m.nn.functional.relu(x, ip), True),
    "relu6": (lambda m, x, ip: m.nn.functional.relu6(x, inplace=ip), True),
    "hardtanh": (lambda m, x, ip: m.nn.functional.hardtanh(x, -0.5, 0.5, inplace=ip), True),
    "elu": (lambda m, x, ip: m.nn.functional.elu(x, 0.7, inplace=ip), True),
    "selu": (lambda m, x, ip: m.nn.functional.selu(x, inplace=ip), True),
    "celu": (lambda m, x, ip: m.nn.functional.celu(x, 0.7, inplace=ip), True),
    "leaky_relu": (lambda m, x, ip: m.nn.functional.leaky_relu(x, 0.2, inplace=ip), True),
    "rrelu_eval": (lambda m, x, ip: m.nn.functional.rrelu(x, training=False, inplace=ip), True),
    "threshold": (lambda m, x, ip: m.nn.functional.threshold(x, 0.1, 20.0, inplace=ip), True),
    "hardsigmoid": (lambda m, x, ip: m.nn.functional.hardsigmoid(x, inplace=ip), True),
    "hardswish": (lambda m, x, ip: m.nn.functional.hardswish(x, inplace=ip), True),
    "silu": (lambda m, x, ip: m.nn.functional.silu(x, inplace=ip), True),
    "mish": (lambda m, x, ip: m.nn.functional.mish(x, inplace=ip), True),
    "dropout_p1": (lambda m, x, ip: m.nn.functional.dropout(x, 1.0, True, inplace=ip), True),
    "rrelu_train": (lambda m, x, ip: m.nn.functional.rrelu(x, training=True, inplace=ip), False),
    "dropout": (lambda m, x, ip: m.nn.functional.dropout(x, 0.5, True, inplace=ip), False),
    "dropout1d": (lambda m, x, ip: m.nn.functional.dropout1d(x, 0.5, True, inplace=ip), False),
    "dropout2d": (
        lambda m, x, ip: m.nn.functional.dropout2d(x.view(1, 2, 3, 1), 0.5, True, inplace=ip),
        False,
    ),
    "dropout3d": (
        lambda m, x, ip: m.nn.functional.dropout3d(x.view(1, 2, 3, 1, 1), 0.5, inplace=ip),
        False,
    ),
    "alpha_dropout": (
        lambda m, x, ip: m.nn.functional.alpha_dropout(x, 0.5, True, inplace=ip),
        False,
    ),
    "feature_alpha_dropout": (
        lambda m, x, ip: m.nn.functional.feature_alpha_dropout(
            x.view(1, 2, 3), 0.5, True, inplace=ip
        ),
        False,
    ),
}
_DETERMINISTIC = sorted(k for k, (_, det) in _CASES.items() if det)


def _run(lib, name, inplace, requires_grad=False):
    """(input, output) of the case on a fresh non-leaf copy of _X (a leaf when not
    requires_grad), seeded so that the random cases draw the same numbers twice."""
    lib.manual_seed(0)
    leaf = lib.tensor(_X, requires_grad=requires_grad)
    x = leaf * 1 if requires_grad else leaf
    return leaf, x, _CASES[name][0](lib, x, inplace)


@pytest.mark.parametrize("name", sorted(_CASES))
def test_inplace_overwrites_and_returns_the_input(name):
    _, x, out = _run(tg, name, True)
    _, _, expected = _run(tg, name, False)  # the same random numbers (same seed)
    np.testing.assert_array_equal(x.numpy().reshape(out.shape), expected.numpy())
    assert out is x or out._base is x
    assert x._version == 1  # torch bumps dropout1d 3 times, alpha_dropout twice: here once
    np.testing.assert_array_equal(out.numpy(), expected.numpy())


@pytest.mark.parametrize("name", _DETERMINISTIC)
def test_inplace_values_and_versions_match_torch(torch_mod, name):
    _, x, out = _run(tg, name, True)
    _, xt, out_t = _run(torch_mod, name, True)
    np.testing.assert_allclose(x.numpy(), xt.numpy(), rtol=1e-12)
    assert (out is x) == (out_t is xt)
    assert x._version == xt._version


@pytest.mark.parametrize("name", sorted(_CASES))
def test_inplace_on_a_leaf_that_requires_grad_raises_like_torch(torch_mod, name):
    def attempt(lib):
        x = lib.tensor(_X, requires_grad=True)
        _CASES[name][0](lib, x, True)

    with pytest.raises(RuntimeError) as theirs:
        attempt(torch_mod)
    with pytest.raises(RuntimeError) as ours:
        attempt(tg)
    assert str(theirs.value).split(" being used")[0] in str(ours.value)  # "a [view of a] leaf"


@pytest.mark.parametrize("name", _DETERMINISTIC)
def test_inplace_gradient_through_a_non_leaf_matches_torch(torch_mod, name):
    def run(lib):
        leaf, x, out = _run(lib, name, True, requires_grad=True)
        assert out.grad_fn is not None and x.grad_fn is not None
        w = lib.tensor(np.arange(6.0).reshape(2, 3))
        (x * w).sum().backward()
        return leaf.grad.numpy()

    # rtol: torch's hardsigmoid/hardswish/mish backward use float32 constants (1/6)
    np.testing.assert_allclose(run(tg), run(torch_mod), rtol=1e-7)


@pytest.mark.parametrize("name", sorted(set(_CASES) - set(_DETERMINISTIC)))
def test_inplace_gradient_of_the_random_ones_is_the_out_of_place_gradient(name):
    grads = []
    for inplace in (True, False):
        leaf, x, out = _run(tg, name, inplace, requires_grad=True)
        (out * tg.tensor(np.arange(6.0).reshape(out.shape))).sum().backward()
        grads.append(leaf.grad.numpy())
    np.testing.assert_array_equal(*grads)


@pytest.mark.parametrize("name", ["relu", "elu", "silu", "hardtanh", "dropout_p1"])
def test_inplace_through_a_view_of_a_non_leaf_matches_torch(torch_mod, name):
    def run(lib):
        leaf = lib.tensor(_X, requires_grad=True)
        h = leaf * 1
        _CASES[name][0](lib, h[:, 1:], True)
        (h * lib.tensor(np.arange(6.0).reshape(2, 3))).sum().backward()
        return h.detach().numpy(), leaf.grad.numpy()

    for ours, theirs in zip(run(tg), run(torch_mod), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_inplace_under_no_grad_may_change_a_leaf_like_torch(torch_mod):
    for lib in (tg, torch_mod):
        x = lib.tensor(_X, requires_grad=True)
        with lib.no_grad():
            assert lib.nn.functional.elu(x, inplace=True) is x
        assert x._version == 1 and x.requires_grad and x.grad_fn is None
        assert np.isclose(x.detach().numpy()[0, 0], np.expm1(-1.0))


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.nn.functional.dropout(x, 0.5, False, inplace=True),
        lambda m, x: m.nn.functional.dropout(x, 0.0, True, inplace=True),
        lambda m, x: m.nn.functional.alpha_dropout(x, 0.5, False, inplace=True),
        lambda m, x: m.nn.functional.dropout2d(x.view(1, 2, 3, 1), 0.5, False, inplace=True),
    ],
    ids=["eval", "p0", "alpha_eval", "dropout2d_eval"],
)
def test_inplace_dropout_in_eval_returns_the_leaf_untouched_like_torch(torch_mod, call):
    for lib in (tg, torch_mod):
        x = lib.tensor(_X, requires_grad=True)
        out = call(lib, x)
        assert (out is x or out._base is x) and x._version == 0
        np.testing.assert_array_equal(x.detach().numpy(), _X)


def test_saved_input_overwritten_by_an_inplace_activation_raises_like_torch(torch_mod):
    def attempt(lib):
        leaf = lib.tensor(_X, requires_grad=True)
        h = leaf * 1
        z = h.sin()  # saves h
        lib.nn.functional.relu(h, inplace=True)
        (z.sum() + h.sum()).backward()

    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        attempt(torch_mod)
    with pytest.raises(RuntimeError, match="modified by an in-place operation.*relu_"):
        attempt(tg)


@pytest.mark.parametrize("name", sorted(_CASES))
def test_output_saved_by_an_inplace_activation_is_version_checked_like_torch(torch_mod, name):
    # relu_, elu_, selu_, celu_, leaky_relu_, rrelu_ save self (their result): changing it
    # again in place before backward raises; the others saved nothing that changed.
    def attempt(lib):
        leaf, x, _ = _run(lib, name, True, requires_grad=True)
        x.mul_(2)
        x.sum().backward()
        return leaf.grad.numpy()

    try:
        theirs = attempt(torch_mod)
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e)
        with pytest.raises(RuntimeError, match="modified by an in-place operation"):
            attempt(tg)
    else:
        ours = attempt(tg)
        if _CASES[name][1]:
            np.testing.assert_allclose(ours, theirs, rtol=1e-7)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, h: m.nn.functional.leaky_relu(h, -0.2, inplace=True),
        lambda m, h: m.nn.functional.leaky_relu_(h, negative_slope=-0.2),
        lambda m, h: m.nn.functional.elu(h, -0.5, inplace=True),
        lambda m, h: m.nn.functional.celu(h, -0.5, inplace=True),
        lambda m, h: m.nn.functional.rrelu(h, -0.5, -0.1, training=False, inplace=True),
        lambda m, h: m.nn.LeakyReLU(-0.1, inplace=True)(h),
    ],
    ids=["leaky_relu", "leaky_relu_", "elu", "celu", "rrelu_eval", "LeakyReLU"],
)
def test_inplace_with_a_negative_slope_refuses_backward_like_torch(torch_mod, call):
    def attempt(lib):
        leaf = lib.tensor(_X, requires_grad=True)
        h = leaf * 1
        call(lib, h)  # the forward runs (and writes) in both
        np.testing.assert_array_equal(h.detach().numpy() == _X, _X > 0)
        h.sum().backward()

    with pytest.raises(RuntimeError) as theirs:
        attempt(torch_mod)
    with pytest.raises(RuntimeError) as ours:
        attempt(tg)
    assert str(ours.value) == str(theirs.value)


def test_negative_slope_with_random_slopes_in_training_is_differentiable_like_torch(torch_mod):
    for lib in (tg, torch_mod):
        leaf = lib.tensor(_X, requires_grad=True)
        h = leaf * 1
        lib.nn.functional.rrelu(h, -0.5, -0.1, training=True, inplace=True)
        h.sum().backward()
        assert (leaf.grad.numpy()[_X > 0] == 1).all()


_MODULES = {
    "ReLU": lambda nn: nn.ReLU(inplace=True),
    "ReLU6": lambda nn: nn.ReLU6(inplace=True),
    "Hardtanh": lambda nn: nn.Hardtanh(-0.5, 0.5, inplace=True),
    "ELU": lambda nn: nn.ELU(0.5, inplace=True),
    "SELU": lambda nn: nn.SELU(inplace=True),
    "CELU": lambda nn: nn.CELU(0.5, inplace=True),
    "LeakyReLU": lambda nn: nn.LeakyReLU(0.3, inplace=True),
    "RReLU": lambda nn: nn.RReLU(inplace=True).eval(),
    "Threshold": lambda nn: nn.Threshold(0.1, 20.0, inplace=True),
    "Hardsigmoid": lambda nn: nn.Hardsigmoid(inplace=True),
    "Hardswish": lambda nn: nn.Hardswish(inplace=True),
    "SiLU": lambda nn: nn.SiLU(inplace=True),
    "Mish": lambda nn: nn.Mish(inplace=True),
    "Dropout_p1": lambda nn: nn.Dropout(1.0, inplace=True),
    "Dropout_eval": lambda nn: nn.Dropout(0.5, inplace=True).eval(),
}


@pytest.mark.parametrize("name", sorted(_MODULES))
def test_modules_with_inplace_true_overwrite_like_torch(torch_mod, name):
    def run(lib):
        leaf = lib.tensor(_X, requires_grad=True)
        h = leaf * 1
        out = _MODULES[name](lib.nn)(h)
        (h * lib.tensor(np.arange(6.0).reshape(2, 3))).sum().backward()
        return out is h, h._version, h.detach().numpy(), leaf.grad.numpy()

    ours, theirs = run(tg), run(torch_mod)
    assert ours[:2] == theirs[:2]
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-12)
    np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-7)


@pytest.mark.parametrize("name", ["Dropout", "Dropout1d", "AlphaDropout", "RReLU"])
def test_random_modules_with_inplace_true_overwrite_their_input(name):
    tg.manual_seed(3)
    x = tg.tensor(_X)
    out = getattr(tg.nn, name)(inplace=True).train()(x)
    assert out is x and x._version == 1
    tg.manual_seed(3)
    np.testing.assert_array_equal(x.numpy(), getattr(tg.nn, name)().train()(tg.tensor(_X)).numpy())


def test_second_derivative_through_an_inplace_activation_matches_torch(torch_mod):
    def run(lib):
        leaf = lib.tensor(_X, requires_grad=True)
        h = leaf * leaf
        lib.nn.functional.silu(h, inplace=True)
        (g,) = lib.autograd.grad(h.sum(), leaf, create_graph=True)
        g.sum().backward()
        return g.detach().numpy(), leaf.grad.numpy()

    for ours, theirs in zip(run(tg), run(torch_mod), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_relu_keeps_torchs_errors_and_vmap():
    with pytest.raises(TypeError, match="expected Tensor"):
        tg.nn.functional.relu([1.0, -1.0])
    out = tg.func.vmap(tg.nn.functional.relu)(tg.tensor(_X))
    np.testing.assert_array_equal(out.numpy(), np.maximum(_X, 0))


def test_graph_cache_replays_a_step_with_inplace_modules_like_eager():
    def make():
        tg.manual_seed(0)
        nn = tg.nn
        m = nn.Sequential(
            nn.Linear(8, 16),
            nn.ReLU(inplace=True),
            nn.Linear(16, 16),
            nn.Hardtanh(-0.5, 0.5, inplace=True),
            nn.Linear(16, 16),
            nn.Dropout(0.3, inplace=True),
            nn.Linear(16, 4),
            nn.ELU(inplace=True),
        )
        return m, tg.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

    def step(m, opt, x, y):
        opt.zero_grad()
        loss = ((m(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    x, y = tg.randn(5, 8), tg.randn(5, 4)
    (m1, o1), (m2, o2) = make(), make()
    cached = tg.jit.cache(lambda x, y: step(m2, o2, x, y))
    tg.manual_seed(5)
    eager = [step(m1, o1, x, y).item() for _ in range(5)]
    tg.manual_seed(5)
    replayed = [cached(x, y).item() for _ in range(5)]
    assert cached.cache_info().hits >= 2
    np.testing.assert_allclose(replayed, eager, rtol=1e-6)
    for p1, p2 in zip(m1.parameters(), m2.parameters(), strict=True):
        np.testing.assert_allclose(p2.detach().numpy(), p1.detach().numpy(), rtol=1e-5, atol=1e-7)
