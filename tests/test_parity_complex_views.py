"""``z.real`` / ``z.imag`` are writable views of a complex ``z``, as in PyTorch 2.13.

They were read-only copies of the memory (writing raised). Each case runs under both
libraries: values after the write, version counters, and gradients through the write.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

_Z = np.array([1 + 2j, 3 - 1j, -0.5 + 0.25j])

_WRITES = {
    "real_mul_": lambda z: z.real.mul_(3),
    "imag_mul_": lambda z: z.imag.mul_(3),
    "real_setitem": lambda z: z.real.__setitem__(0, 5.0),
    "imag_setitem": lambda z: z.imag.__setitem__(slice(1, None), 7.0),
    "real_of_slice": lambda z: z[1:].real.add_(1.0),
    "imag_slice": lambda z: z.imag[::2].zero_(),
    "real_fill_": lambda z: z.real.fill_(-2.0),
    "real_relu_": lambda z: z.real.relu_(),
    "imag_copy_": lambda z: z.imag.copy_(z.real),
}


@pytest.mark.parametrize("name", sorted(_WRITES))
def test_writes_through_real_and_imag_change_the_tensor_like_torch(torch_mod, name):
    def run(lib):
        z = lib.tensor(_Z)
        _WRITES[name](z)
        return z.numpy(), z._version

    (ours, vo), (theirs, vt) = run(tg), run(torch_mod)
    np.testing.assert_array_equal(ours, theirs)
    assert vo == vt


@pytest.mark.parametrize("name", sorted(_WRITES))
def test_gradient_through_a_write_into_real_or_imag_matches_torch(torch_mod, name):
    def run(lib):
        a = lib.tensor(_Z, requires_grad=True)
        z = a * lib.tensor([1.0 + 1j, 2.0, 0.5j])
        _WRITES[name](z)
        (z.abs() ** 2).sum().backward()
        return z.detach().numpy(), a.grad.numpy()

    for ours, theirs in zip(run(tg), run(torch_mod), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_real_and_imag_are_views_sharing_the_version_counter(torch_mod):
    for lib in (tg, torch_mod):
        z = lib.tensor(_Z)
        r, i = z.real, z.imag
        assert r._base is z and i._base is z
        i.mul_(2)
        assert z._version == r._version == i._version == 1
        np.testing.assert_array_equal(r.numpy(), _Z.real)
        z.mul_(2)  # and the views see writes into z
        np.testing.assert_array_equal(r.numpy(), 2 * _Z.real)
        assert lib.tensor([1.0, 2.0]).real._base is None  # a real tensor's real is itself


def test_write_into_real_of_a_leaf_that_requires_grad_raises_like_torch(torch_mod):
    for lib in (tg, torch_mod):
        a = lib.tensor(_Z, requires_grad=True)
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
            a.real.mul_(2)


def test_real_view_taken_before_its_base_changed_reads_the_new_values(torch_mod):
    def run(lib):
        a = lib.tensor(_Z, requires_grad=True)
        z = a * 2
        r = z.real
        z.real[1:].mul_(3)  # through another view: r reads the new values
        z.imag.add_(r)
        (r * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        return r.detach().numpy(), a.grad.numpy()

    for ours, theirs in zip(run(tg), run(torch_mod), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_a_value_that_requires_grad_written_into_imag_makes_the_base_require_grad(torch_mod):
    def run(lib):
        z = lib.zeros(3, dtype=lib.complex128)
        w = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        z.imag.copy_(w * 2)
        assert z.requires_grad
        (z.abs() ** 2).sum().backward()
        return z.detach().numpy(), w.grad.numpy()

    for ours, theirs in zip(run(tg), run(torch_mod), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
