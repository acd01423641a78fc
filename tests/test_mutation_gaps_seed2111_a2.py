"""Tests for more survivors of the official seed-2111 mutation sample (list a2): each is seen
to fail on its mutant.

Covers ops/arithmetic.py:182 (path), ops/complex_ops.py:282 and ops/elementwise.py:213 (path).
ops/arithmetic.py:407 ``STATE.enabled and input._rg`` -> ``(STATE.enabled or input._rg)`` is
equivalent: the extra cases it sends to ``_scaled`` (grad mode off, or an input that does not
require grad) reach make_result, which records nothing then (``not STATE.enabled``: return;
one input that does not require grad and a None: return) and wraps the array as
``Tensor._wrap`` does, so the result is the same plain tensor.
"""

import numpy as np

import tapegrad as tg


def test_an_array_rule_gradient_that_fits_is_passed_on_without_fit(monkeypatch):
    """arithmetic.py:182 [const] ``meta[0]`` -> ``meta[1]`` (path): ``g.shape == meta[1]``
    compares a shape with a dtype, never equal, so every array gradient of add/sub/mul/div
    went through ``_fit`` (a Tensor wrap and two checks more) though it already fits."""
    from tapegrad.ops import arithmetic

    calls = []
    fit = arithmetic._fit

    def spy(g, meta):
        calls.append(meta)
        return fit(g, meta)

    monkeypatch.setattr(arithmetic, "_fit", spy)
    a = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = tg.tensor([[0.5, -1.0], [2.0, 3.0]], requires_grad=True)
    (a * b + a - b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), b.detach().numpy() + 1.0)
    np.testing.assert_array_equal(b.grad.numpy(), a.detach().numpy() - 1.0)
    assert calls == []
    c = tg.tensor([1.0, -2.0], requires_grad=True)  # broadcast: this one needs _fit
    (a * c).sum().backward()
    assert calls == [((2,), np.dtype(np.float32))]
    np.testing.assert_array_equal(c.grad.numpy(), a.detach().numpy().sum(0))


def test_complex_abs_gradient_at_zero_has_torchs_signed_zeros(torch_mod):
    """complex_ops.py:282 [binop] ``z.abs() + zero`` -> ``(z.abs() - zero)``: sgn_of divided
    by -1 where z = 0, so abs's gradient there came out as 0-0j (g > 0) or 0+0j (g < 0),
    the signs of the zeros flipped against torch's."""
    z0 = np.array([0j, 1 + 1j, 0j, -2 + 0j])
    w0 = np.array([1.0, -2.0, -3.0, 4.0])
    grads = []
    for lib in (torch_mod, tg):
        z = lib.tensor(z0, requires_grad=True)
        (z.abs() * lib.tensor(w0)).sum().backward()
        grads.append(np.asarray(z.grad.detach().numpy()))
    want, got = grads
    assert got.dtype == want.dtype == np.complex128
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)
    np.testing.assert_array_equal(np.signbit(got.real), np.signbit(want.real))
    np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(want.imag))


def test_relu_caches_zeros_up_to_two_to_the_16_elements_only():
    """elementwise.py:213 [const] ``1 << 16`` -> ``1 << 17`` (path; and ``1`` -> ``2``, the
    same bound): relu of an input over 2^16 elements compares with a fresh zeros array,
    not one kept in _ZEROS (Note [relu against a zeros array])."""
    from tapegrad.ops import elementwise

    elementwise._ZEROS.clear()
    for n, kept in ((1 << 16, True), ((1 << 16) + 1, False)):
        x = tg.tensor(np.linspace(-1.0, 1.0, n, dtype=np.float32))
        np.testing.assert_array_equal(tg.relu(x).numpy(), np.maximum(x.numpy(), 0))
        assert ((x.shape, x._data.strides, x._data.dtype) in elementwise._ZEROS) is kept
    elementwise._ZEROS.clear()
