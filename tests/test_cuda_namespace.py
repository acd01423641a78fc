"""tg.cuda without a GPU answers as torch 2.13's CPU build: the same values, the same error
types, the same deprecation warnings (Note [torch.cuda without CUDA])."""

import warnings

import pytest

import tapegrad as tg
from tapegrad import cuda

pytestmark = pytest.mark.skipif(cuda.is_available(), reason="checks the behaviour without a GPU")

ARGS = {
    "manual_seed": (1,),
    "manual_seed_all": (1,),
    "set_rng_state": (lambda m: m.zeros(8, dtype=m.uint8),),
    "set_rng_state_all": ([],),
    "set_device": (0,),
    "get_device_properties": (0,),
}


def _call(m, name):
    args = [a(m) if callable(a) else a for a in ARGS.get(name, ())]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        try:
            out = ("value", getattr(m.cuda, name)(*args))
        except Exception as err:  # noqa: BLE001 - the type is what is compared
            out = ("error", err)
    return out, [(w.category, str(w.message), w.filename) for w in record]


ROWS = [(kind, name) for kind, names in cuda._WITHOUT_CUDA.items() for name in names]


@pytest.mark.parametrize("kind,name", ROWS, ids=[n for _, n in ROWS])
def test_without_cuda_as_torchs_cpu_build(torch_mod, kind, name):
    (want_kind, want), want_warnings = _call(torch_mod, name)
    (got_kind, got), got_warnings = _call(tg, name)
    assert got_kind == want_kind == ("value" if kind == "value" else "error")
    if kind == "value":
        assert got == want and type(got) is type(want)
    elif kind == "not_compiled":
        assert type(want) is AssertionError
        assert isinstance(got, AssertionError) and isinstance(got, RuntimeError)
        assert str(got).startswith(str(want)) and f"torch.cuda.{name}(" in str(got)
    else:
        assert type(want) is AttributeError and type(got) is AttributeError
        assert "torch.cuda." in str(got) and "is_available()" in str(got)
    assert [(c, m) for c, m, _ in got_warnings] == [(c, m) for c, m, _ in want_warnings]
    assert all(f == __file__ for _, _, f in got_warnings)


def test_every_row_is_a_function_and_torch_has_it(torch_mod):
    names = [n for names in cuda._WITHOUT_CUDA.values() for n in names]
    assert len(names) == len(set(names))
    assert [n for n in names if not hasattr(torch_mod.cuda, n)] == []
    assert sorted(names) == sorted(cuda.__all__)


def test_set_device_and_memory_queries_take_torchs_arguments(torch_mod):
    for m in (torch_mod, tg):
        assert m.cuda.set_device(-1) is None
        assert m.cuda.memory_allocated("cuda:0") == m.cuda.memory_allocated(0) == 0
        with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu"):
            m.cuda.set_device("cpu")
        with pytest.raises(AttributeError):
            m.cuda.set_device("cuda:0")
