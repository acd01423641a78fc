"""Rows for the complex-number ops (issue 10), on real float64 inputs, their results read
back as real tensors; complex128 inputs are checked in tests/test_complex_autograd.py."""

from . import OpCase

POS = (0.3, 2.0)

CASES = [
    OpCase("complex", lambda m, a, b: m.view_as_real(m.complex(a, b)), ((2, 3), (3,))),
    OpCase("polar", lambda m, a, b: m.view_as_real(m.polar(a, b)), ((2, 3), (2, 3)), POS),
    OpCase("imag", lambda m, a, b: m.imag(m.complex(a, b) * (1 - 2j)), ((3,), (3,))),
    OpCase("view_as_real", lambda m, a: m.view_as_real(m.complex(a, a * a)), ((2, 3),)),
    OpCase(
        "view_as_complex",
        lambda m, a: m.view_as_real(m.view_as_complex(a) * (2 + 1j)),
        ((3, 2),),
    ),
]


def _eig_abs(m, a):
    L, V = m.linalg.eig(a)
    return m.view_as_real(L), V.abs()


CASES += [
    OpCase("linalg_eig", _eig_abs, ((3, 3),), name="phase_invariant"),
]


CASES += [
    OpCase(
        "stft",
        lambda m, x, w: m.view_as_real(m.stft(x, 6, hop_length=2, window=w, return_complex=True)),
        ((2, 12), (6,)),
    ),
]

CASES += [
    OpCase(
        "istft",  # a positive window (w² + 0.5): istft divides by its overlap-added square
        lambda m, re, im, w: m.istft(m.complex(re, im), 6, 2, window=w * w + 0.5),
        ((4, 5), (4, 5), (6,)),
    ),
]
