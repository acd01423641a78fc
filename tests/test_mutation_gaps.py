"""Checks that the mutation sample of seed 1802 (docs/testing.md) found missing, each against
torch: defaults, error messages of paths no test ran, and a vector right-hand side."""

import numpy as np
import pytest

import tapegrad as tg

rng = np.random.default_rng(1802)


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type and text are what is compared
        return type(e), str(e)
    return None


@pytest.mark.parametrize("cls", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("batched", [True, False])
def test_rnn_hidden_state_rank_error_is_torchs(cls, batched, torch_mod):
    # The message said "For batched 2-D input" (torch: 3-D), and LSTM named h_0 alone.
    inp = np.zeros((3, 2, 4) if batched else (3, 4), np.float32)
    h = np.zeros((2, 5) if batched else (1, 2, 5), np.float32)

    def run(lib):
        lib.manual_seed(0)
        m = getattr(lib.nn, cls)(4, 5)
        state = (lib.tensor(h), lib.tensor(h)) if cls == "LSTM" else lib.tensor(h)
        return lambda: m(lib.tensor(inp), state)

    ours, theirs = _error(run(tg)), _error(run(torch_mod))
    assert theirs is not None
    assert ours == theirs


def test_hinge_embedding_loss_default_margin_matches_torch(torch_mod):
    x = rng.standard_normal(40)
    y = np.where(rng.random(40) < 0.5, 1.0, -1.0)
    ours = tg.nn.HingeEmbeddingLoss()(tg.tensor(x), tg.tensor(y))
    theirs = torch_mod.nn.HingeEmbeddingLoss()(torch_mod.tensor(x), torch_mod.tensor(y))
    np.testing.assert_allclose(float(ours), float(theirs), rtol=1e-12)


@pytest.mark.parametrize(
    "kwargs", [{}, {"weight": True}, {"ignore_index": 1}, {"weight": True, "ignore_index": 2}]
)
def test_nll_loss_mean_value_and_gradient_match_torch(kwargs, torch_mod):
    lp = rng.standard_normal((7, 4))
    t = np.array([0, 1, 2, 3, 1, 2, 0])
    w = rng.random(4) + 0.5

    def run(lib):
        x = lib.tensor(lp, requires_grad=True)
        kw = {k: (lib.tensor(w) if k == "weight" else v) for k, v in kwargs.items()}
        loss = lib.nn.functional.nll_loss(x, lib.tensor(t), reduction="mean", **kw)
        loss.backward()
        return float(loss), x.grad.numpy()

    (lo, go), (lt, gt) = run(tg), run(torch_mod)
    np.testing.assert_allclose(lo, lt, rtol=1e-12)
    np.testing.assert_allclose(go, gt, rtol=1e-12)


@pytest.mark.parametrize("driver", [None, "gelsd"])
def test_lstsq_with_a_vector_right_hand_side_matches_torch(driver, torch_mod):
    a, b = rng.standard_normal((5, 3)), rng.standard_normal(5)
    ours = tg.linalg.lstsq(tg.tensor(a), tg.tensor(b), driver=driver).solution
    theirs = torch_mod.linalg.lstsq(torch_mod.tensor(a), torch_mod.tensor(b), driver=driver)
    assert tuple(ours.shape) == tuple(theirs.solution.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.solution.numpy(), rtol=1e-10, atol=1e-12)


def test_ldl_solve_refuses_pivots_of_the_wrong_shape(torch_mod):
    a = rng.standard_normal((2, 3, 3))
    ld, piv = torch_mod.linalg.ldl_factor(torch_mod.tensor(a + a.mT))
    b = rng.standard_normal((2, 3, 2))
    with pytest.raises(RuntimeError, match="pivots"):
        torch_mod.linalg.ldl_solve(ld, piv[:, :2], torch_mod.tensor(b))
    want = r"pivots \[2, 2\] must have the shape LD.shape\[:-1\] = \[2, 3\]"
    with pytest.raises(RuntimeError, match=want):
        tg.linalg.ldl_solve(tg.tensor(ld.numpy()), tg.tensor(piv[:, :2].numpy()), tg.tensor(b))
    ours = tg.linalg.ldl_solve(tg.tensor(ld.numpy()), tg.tensor(piv.numpy()), tg.tensor(b))
    theirs = torch_mod.linalg.ldl_solve(ld, piv, torch_mod.tensor(b))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10)


def test_nll_loss_mean_over_nothing_is_nan_with_zero_gradient_like_torch(torch_mod):
    # reduction='mean' with every target ignored divides 0 by 0: torch gives NaN and a zero
    # gradient; dropping the NaN offset returned 0. (With every used class weighted 0, torch's
    # gradient is NaN at the targets and ours 0: a known difference, docs/testing.md.)
    lp = rng.standard_normal((3, 4))
    t = np.array([1, 1, 1])

    def run(lib):
        x = lib.tensor(lp, requires_grad=True)
        loss = lib.nn.functional.nll_loss(x, lib.tensor(t), ignore_index=1)
        loss.backward()
        return float(loss), x.grad.numpy()

    (lo, go), (lt, gt) = run(tg), run(torch_mod)
    assert np.isnan(lt) and np.isnan(lo)
    np.testing.assert_array_equal(go, gt)


def test_copy_into_a_recorded_tensor_overwrites_and_routes_gradients_like_torch(torch_mod):
    # copy_ while recording: values, the source's gradient and none for the overwritten
    # history (torch: zeros).
    def run(lib):
        a = lib.ones(3, requires_grad=True)
        s = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = a * 2
        b.copy_(s * 3)
        (b * lib.tensor([1.0, 10.0, 100.0])).sum().backward()
        old = np.zeros(3, np.float32) if a.grad is None else a.grad.numpy()  # torch: zeros
        return b.detach().numpy(), s.grad.numpy(), old

    for ours, theirs in zip(run(tg), run(torch_mod), strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_cholesky_ex_info_names_the_first_failing_minor_like_torch(torch_mod):
    # The leading minors' check compared eigenvalues with 0; a 1 there went unnoticed.
    mats = np.array(
        [[[2.0, 1.0], [1.0, 2.0]], [[0.5, 0.0], [0.0, 0.7]], [[1.0, 2.0], [2.0, 1.0]],
         [[0.5, 0.0], [0.0, -1.0]]]
    )  # fmt: skip
    ours = tg.linalg.cholesky_ex(tg.tensor(mats)).info.numpy()
    theirs = torch_mod.linalg.cholesky_ex(torch_mod.tensor(mats)).info.numpy()
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("groups", [2.0, True, np.int64(2), 2])
def test_channel_shuffle_groups_must_be_an_int_like_torch(groups, torch_mod):
    # int(groups) truncated a float silently; torch refuses floats and bools.
    x = rng.standard_normal((1, 4, 2, 2))
    ours = _error(lambda: tg.nn.functional.channel_shuffle(tg.tensor(x), groups))
    theirs = _error(lambda: torch_mod.nn.functional.channel_shuffle(torch_mod.tensor(x), groups))
    assert ours == theirs


def test_pad_packed_sequence_defaults_to_time_first_like_torch(torch_mod):
    # The tests passed batch_first everywhere; the default (False) was never used.
    x = rng.standard_normal((4, 3, 2))  # (T, B, *)
    lengths = [4, 2, 1]

    def run(lib):
        packed = lib.nn.utils.rnn.pack_padded_sequence(lib.tensor(x), lib.tensor(lengths))
        padded, lens = lib.nn.utils.rnn.pad_packed_sequence(packed)
        return padded.numpy(), lens.numpy()

    for ours, theirs in zip(run(tg), run(torch_mod), strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_matmul_of_a_parameter_and_of_an_array_matches_torch(torch_mod):
    # A Tensor subclass (Parameter) or a plain array as the first operand of the function
    # form; only a sparse COO tensor takes the sparse path.
    w, x = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    want = torch_mod.matmul(torch_mod.nn.Parameter(torch_mod.tensor(w)), torch_mod.tensor(x))
    ours = tg.matmul(tg.nn.Parameter(tg.tensor(w)), tg.tensor(x))
    np.testing.assert_allclose(ours.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    assert ours.requires_grad
    np.testing.assert_allclose(tg.matmul(w, tg.tensor(x)).numpy(), w @ x, rtol=1e-12)
