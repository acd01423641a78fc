"""Small convolutions keep their forward's columns for the weight gradient (Notes [Kept
im2col columns], [Tap-row im2col]): the same gradients as the rebuilt columns and as
PyTorch, split over two cores or not, and never where the rules say no."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F
from tapegrad import _parallel
from tapegrad.nn import _conv_kept, _conv_ops, _conv_taps

rng = np.random.default_rng(7)

CASES = [
    # (N, C, O, kernel, stride, padding, bias, (H, W))
    (64, 16, 32, 3, 1, 1, True, (4, 4)),  # the digits CNN's second convolution
    (5, 4, 6, (3, 2), 2, (1, 0), False, (7, 6)),  # strided, no bias
    (3, 3, 4, 3, 1, 0, True, (6, 5)),
    (4, 1, 16, 3, 1, 1, True, (8, 8)),  # one channel: the tap rows are kept
]


def _spy(monkeypatch, module, name):
    calls = []
    original = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


def _run(lib, x, w, b, g, stride, padding):
    xt = lib.tensor(x, requires_grad=True)
    wt = lib.tensor(w, requires_grad=True)
    bt = None if b is None else lib.tensor(b, requires_grad=True)
    y = lib.nn.functional.conv2d(xt, wt, bt, stride=stride, padding=padding)
    y.backward(lib.tensor(g))
    return [y.detach().numpy()] + [t.grad.numpy() for t in (xt, wt, bt) if t is not None]


def _data(case, torch_mod):
    n, c, o, k, s, p, bias, hw = case
    k2 = (k, k) if isinstance(k, int) else k
    x = rng.standard_normal((n, c) + hw).astype(np.float32)
    w = rng.standard_normal((o, c) + k2).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32) if bias else None
    shape = torch_mod.nn.functional.conv2d(
        torch_mod.tensor(x), torch_mod.tensor(w), stride=s, padding=p
    ).shape
    g = rng.standard_normal(tuple(shape)).astype(np.float32)
    return x, w, b, g, s, p


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_kept_columns_match_rebuilt_and_torch(case, split, torch_mod, monkeypatch):
    x, w, b, g, s, p = _data(case, torch_mod)
    monkeypatch.setattr(_conv_kept, "KEEP_BYTES", 0)  # nothing kept: the columns rebuilt
    rebuilt = _run(tg, x, w, b, g, s, p)
    monkeypatch.undo()
    if split:
        monkeypatch.setattr(_conv_ops, "PAIR_MNK", 0)
        monkeypatch.setattr(_parallel, "may_split", lambda: True)
    one_channel = case[1] == 1
    module, name = (
        (_conv_taps, "kept_weight_grad") if one_channel else (_conv_kept, "kept_weight_grad")
    )
    if b is not None:  # the bias gradient from the kept ones, in the same GEMM
        module, name = _conv_kept, "weight_and_bias_grad"
    used = _spy(monkeypatch, module, name)
    kept = _run(tg, x, w, b, g, s, p)
    assert used, "the forward's columns should have been used"
    ref = _run(torch_mod, x, w, b, g, s, p)
    for a, r, t in zip(kept, rebuilt, ref, strict=True):
        scale = np.abs(t).max()  # float32 sums over P rows, in different orders
        np.testing.assert_allclose(a, r, rtol=1e-5, atol=1e-6 * scale)
        np.testing.assert_allclose(a, t, rtol=1e-4, atol=1e-6 * scale)


def test_columns_are_kept_only_where_the_rules_allow():
    geom = _conv_ops.Geometry((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    x = np.zeros((64, 16, 4, 4), np.float32)
    assert _conv_kept.keeps(x, (32, 16, 3, 3), (4, 4), geom)
    big = np.zeros((64, 64, 16, 16), np.float32)  # 64·256·577·4 bytes: rebuilt in blocks
    assert not _conv_kept.keeps(big, (32, 64, 3, 3), (16, 16), geom)
    grouped = geom._replace(groups=2)
    assert not _conv_kept.keeps(x, (32, 8, 3, 3), (4, 4), grouped)
    one = np.zeros((64, 1, 8, 8), np.float32)
    assert _conv_kept.keeps(one, (16, 1, 3, 3), (8, 8), geom)  # tap rows, O > kh·kw
    assert not _conv_kept.keeps(one, (4, 1, 3, 3), (8, 8), geom)  # columns larger than output


def test_nothing_kept_without_grad_or_for_the_input_only(monkeypatch):
    used = _spy(monkeypatch, _conv_kept, "columns_conv")
    x = tg.randn(8, 16, 4, 4, requires_grad=True)
    w = tg.randn(32, 16, 3, 3)
    F.conv2d(x, w, padding=1).sum().backward()  # the weight needs no gradient
    with tg.no_grad():
        F.conv2d(x, w.requires_grad_(), padding=1)
    assert not used
    F.conv2d(x, w, padding=1).sum().backward()
    assert used


def test_second_order_and_backward_twice_with_kept_columns(torch_mod):
    x, w, b, g, s, p = _data(CASES[2], torch_mod)
    res = []
    for lib in (tg, torch_mod):
        xt = lib.tensor(x.astype(np.float64), requires_grad=True)
        wt = lib.tensor(w.astype(np.float64), requires_grad=True)
        y = lib.nn.functional.conv2d(xt, wt, padding=p)
        first = lib.autograd.grad(y, wt, lib.tensor(g.astype(np.float64)), retain_graph=True)[0]
        again = lib.autograd.grad(y, wt, lib.tensor(g.astype(np.float64)), create_graph=True)[0]
        (gx,) = lib.autograd.grad((again * again).sum(), xt)
        res.append([first.detach().numpy(), again.detach().numpy(), gx.numpy()])
    for a, r in zip(*res, strict=True):
        np.testing.assert_allclose(a, r, rtol=1e-10, atol=1e-10)


def test_input_changed_in_place_after_the_forward_raises():
    x = tg.randn(4, 16, 4, 4)
    w = tg.randn(8, 16, 3, 3, requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    with tg.no_grad():
        x.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()
