"""Functions that tables and builders generate carry their public names: ``tg.view_copy.__name__``
is ``"view_copy"`` as torch's is, not the builder's closure name (``op``) or ``<lambda>``, so that
reprs, tracebacks, ``functools.wraps`` and ``inspect`` show what the user called. (Aliases may
keep the name of the function they alias: ``tg.arccos.__name__`` is ``"acos"``.)"""

import inspect

import pytest

import tapegrad as tg
from tapegrad.ops.copy_variants import COPIES

# the names closures and lambdas get inside the builders
GENERIC = {"<lambda>", "op", "fn", "f", "g", "func", "wrapper", "wrapped", "method", "impl", "run"}
NAMESPACES = {
    "tg": tg,
    "Tensor": tg.Tensor,
    "nn.functional": tg.nn.functional,
    "nn.init": tg.nn.init,
    "linalg": tg.linalg,
    "special": tg.special,
    "fft": tg.fft,
}


@pytest.mark.parametrize("namespace", list(NAMESPACES))
def test_public_functions_are_not_named_after_a_builders_closure(namespace):
    ns = NAMESPACES[namespace]
    bad = []
    for name in dir(ns):
        obj = getattr(ns, name, None)
        if name.startswith("_") or not callable(obj) or inspect.isclass(obj):
            continue
        own = getattr(obj, "__name__", None)
        if own != name and (own is None or own in GENERIC):
            bad.append(f"{name}: {own}")
    assert not bad, f"{namespace}: " + ", ".join(bad)


def test_copy_variants_are_named_like_torchs(torch_mod):
    copies = [n for n in COPIES if hasattr(torch_mod, n)]
    assert len(copies) > 10
    for name in copies:
        assert getattr(tg, name).__name__ == getattr(torch_mod, name).__name__ == name
        assert getattr(tg, name).__qualname__ == name
