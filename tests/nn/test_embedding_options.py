"""Embedding's ``scale_grad_by_freq`` and ``max_norm``, ``Embedding.from_pretrained``,
``F.*_with_indices`` and BCE-with-logits' ``pos_weight`` requiring grad: against torch."""

import numpy as np
import pytest

import tapegrad as tg

IDX = np.array([[0, 2, 2, 5], [2, 1, 0, 2]])


def _embedding_grads(lib, weight, **kw):
    w = lib.tensor(weight, requires_grad=True)
    out = lib.nn.functional.embedding(lib.tensor(IDX), w, **kw)
    gy = np.arange(out.numel(), dtype=np.float64).reshape(tuple(out.shape)) / 7.0
    out.backward(lib.tensor(gy))
    return out.detach().numpy(), w.grad.numpy()


@pytest.mark.parametrize("padding_idx", [None, 2, -1, 0])
def test_scale_grad_by_freq_matches_torch(torch_mod, padding_idx):
    weight = np.random.default_rng(0).standard_normal((6, 3))
    kw = dict(padding_idx=padding_idx, scale_grad_by_freq=True)
    ours, theirs = _embedding_grads(tg, weight, **kw), _embedding_grads(torch_mod, weight, **kw)
    np.testing.assert_allclose(ours[0], theirs[0])
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)
    # the scaling is visible: index 2 occurs four times
    plain = _embedding_grads(tg, weight, padding_idx=padding_idx)[1]
    assert not np.allclose(plain, ours[1])


def test_embedding_module_scale_grad_by_freq(torch_mod):
    ours = tg.nn.Embedding(6, 3, padding_idx=1, scale_grad_by_freq=True)
    theirs = torch_mod.nn.Embedding(6, 3, padding_idx=1, scale_grad_by_freq=True)
    assert repr(ours) == repr(theirs)
    ours.weight.data.copy_(tg.tensor(theirs.weight.detach().numpy()))
    ours(tg.tensor(IDX)).sum().backward()
    theirs(torch_mod.tensor(IDX)).sum().backward()
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_max_norm_renormalises_rows_in_place(torch_mod, norm_type):
    weight = np.random.default_rng(1).standard_normal((6, 3)) * 2
    res = []
    for lib in (tg, torch_mod):
        m = lib.nn.Embedding(6, 3, max_norm=1.5, norm_type=norm_type)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(weight, dtype=lib.float32))
        out = m(lib.tensor(IDX))
        out.sum().backward()
        res.append((repr(m), out.detach().numpy(), m.weight.detach().numpy(), m.weight.grad))
    assert res[0][0] == res[1][0]
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-6)
    np.testing.assert_allclose(res[0][2], res[1][2], rtol=1e-6)  # rows 3, 4 untouched
    np.testing.assert_allclose(res[0][3].numpy(), res[1][3].numpy())


def test_from_pretrained(torch_mod):
    weight = np.random.default_rng(2).standard_normal((4, 3)).astype(np.float32)
    for freeze in (True, False):
        ours = tg.nn.Embedding.from_pretrained(tg.tensor(weight), freeze=freeze, padding_idx=1)
        theirs = torch_mod.nn.Embedding.from_pretrained(
            torch_mod.tensor(weight), freeze=freeze, padding_idx=1
        )
        assert repr(ours) == repr(theirs)
        assert ours.weight.requires_grad == theirs.weight.requires_grad == (not freeze)
        np.testing.assert_array_equal(ours.weight.detach().numpy(), theirs.weight.detach().numpy())
    with pytest.raises(AssertionError, match="2-dimensional"):
        tg.nn.Embedding.from_pretrained(tg.ones(3))
    with pytest.raises(AssertionError, match="Shape of weight does not match"):
        tg.nn.Embedding(4, 3, _weight=tg.ones(2, 3))
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        tg.nn.functional.embedding(tg.tensor([0]), tg.ones(3, 2), padding_idx=3)


@pytest.mark.parametrize(
    "name, shape, args",
    [
        ("max_pool1d", (2, 3, 9), (3, 2)),
        ("max_pool2d", (2, 3, 7, 6), (2,)),
        ("max_pool3d", (1, 2, 4, 5, 4), (2, 1, 1)),
        ("adaptive_max_pool1d", (2, 3, 9), (4,)),
        ("adaptive_max_pool2d", (2, 3, 7, 6), ((3, 2),)),
        ("adaptive_max_pool3d", (1, 2, 4, 5, 4), (2,)),
    ],
)
def test_with_indices_names(torch_mod, name, shape, args):
    x = np.random.default_rng(3).standard_normal(shape)
    fn = name + "_with_indices"
    for return_indices in (False, True):  # ignored, as torch ignores it
        out, idx = getattr(tg.nn.functional, fn)(tg.tensor(x), *args, return_indices=return_indices)
        ref, ridx = getattr(torch_mod.nn.functional, fn)(torch_mod.tensor(x), *args)
        np.testing.assert_array_equal(out.numpy(), ref.numpy())
        np.testing.assert_array_equal(idx.numpy(), ridx.numpy())
        assert idx.dtype == tg.int64


def test_bce_with_logits_pos_weight_requiring_grad(torch_mod):
    """torch has no derivative for pos_weight: a RuntimeError under grad mode, a value
    under no_grad; tapegrad matches both (it raised NotImplementedError before)."""
    x, y, p = np.random.default_rng(4).random((3, 4, 3))
    for lib in (tg, torch_mod):
        pw = lib.tensor(p, requires_grad=True)
        with pytest.raises(RuntimeError, match="not differentiable with respect to argument"):
            lib.nn.functional.binary_cross_entropy_with_logits(
                lib.tensor(x, requires_grad=True), lib.tensor(y), pos_weight=pw
            )
    vals = []
    for lib in (tg, torch_mod):
        with lib.no_grad():
            vals.append(
                lib.nn.functional.binary_cross_entropy_with_logits(
                    lib.tensor(x), lib.tensor(y), pos_weight=lib.tensor(p, requires_grad=True)
                ).item()
            )
    assert vals[0] == pytest.approx(vals[1], rel=1e-12)
