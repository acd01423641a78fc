"""torch.compiler, torch.cpu, torch.mps/xpu/mtia and torch's top-level autocast state
(brief n20), each compared with torch's CPU build: values, types, errors, warnings."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _device_stubs


def outcome(fn):
    """``("value", v)`` with dtypes as their names, or ``("raise", type name, message)``."""
    try:
        v = fn()
    except Exception as e:  # noqa: BLE001 - the error is the outcome compared
        return ("raise", type(e).__name__, str(e))
    if isinstance(v, np.dtype) or type(v).__name__ == "dtype":
        v = str(v).removeprefix("torch.")
    return ("value", v)


def in_thread(fn):
    """``fn()`` in a fresh thread, with its warnings: autocast state is per thread, so a
    test's settings die with it (in torch and here)."""
    box = {}

    def run():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            box["out"] = fn()
        box["warnings"] = [  # torch's C++ warnings add where they were raised
            (w.category.__name__, str(w.message).split(" (Triggered internally")[0]) for w in caught
        ]

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return box["out"], box["warnings"]


# -- torch.compiler -------------------------------------------------------------------------


def _f(x):
    return x + 1


@pytest.mark.parametrize("name", ["is_compiling", "is_dynamo_compiling", "is_exporting"])
def test_compiler_queries_as_torch_eager(torch_mod, name):
    assert getattr(tg.compiler, name)() is getattr(torch_mod.compiler, name)() is False


# torch 2.13's answers, recorded: each of these calls loads Dynamo in torch (6-8 s)
COMPILER = {
    "disable": (lambda: tg.compiler.disable(_f)(1), ("value", 2)),
    "disable_decorator": (lambda: tg.compiler.disable(recursive=False)(_f)(1), ("value", 2)),
    "disable_reason": (lambda: tg.compiler.disable(_f, reason="x")(1), ("value", 2)),
    "allow_in_graph": (lambda: tg.compiler.allow_in_graph(_f) is _f, ("value", True)),
    "assume_constant_result": (
        lambda: tg.compiler.assume_constant_result(_f) is _f,
        ("value", True),
    ),
    "wrap_numpy": (lambda: tg.compiler.wrap_numpy(_f)(1), ("value", 2)),
    "substitute_in_graph": (lambda: tg.compiler.substitute_in_graph(_f)(_f)(2), ("value", 3)),
    "substitute_bad": (
        lambda: tg.compiler.substitute_in_graph(3),
        ("raise", "TypeError", "substitute_in_graph expects a function but got <class 'int'>"),
    ),
    "default_backend": (lambda: tg.compiler.get_default_backend(), ("value", "inductor")),
    "set_stance": (lambda: tg.compiler.set_stance("force_eager")(_f)(1), ("value", 2)),
    "set_stance_any": (lambda: tg.compiler.set_stance("bogus").stance, ("value", "bogus")),
    "reset": (lambda: tg.compiler.reset(), ("value", None)),
    "cudagraph_mark_step_begin": (lambda: tg.compiler.cudagraph_mark_step_begin(), ("value", None)),
}


@pytest.mark.parametrize("name", COMPILER)
def test_compiler_answers_as_torch_eager(name):
    case, want = COMPILER[name]
    assert outcome(case) == want


def test_compiler_backends_and_names(torch_mod):
    assert set(tg.compiler.list_backends()) <= {"cudagraphs", "inductor", "openxla", "tvm"}
    tg.compiler.set_default_backend("eager")
    assert tg.compiler.get_default_backend() == "eager"
    tg.compiler.set_default_backend(None)
    assert tg.compiler.get_default_backend() == "inductor"
    with tg.compiler.set_stance("force_eager"):
        assert _f(1) == 2
    missing = set(tg.compiler.__all__) - set(dir(torch_mod.compiler))
    assert not missing
    assert tg.compiler.nested_compile_region(_f) is _f
    # torch.compile compiles (seconds, and Dynamo fails on this test's frames): not compared
    assert tg.compiler.compile is tg.compile and tg.compile(_f) is _f


# -- torch.cpu and the device modules of absent backends ------------------------------------

CPU = {
    "is_available": lambda m: m.cpu.is_available(),
    "is_initialized": lambda m: m.cpu.is_initialized(),
    "device_count": lambda m: m.cpu.device_count(),
    "current_device": lambda m: m.cpu.current_device(),
    "set_device": lambda m: m.cpu.set_device("cpu"),
    "synchronize": lambda m: m.cpu.synchronize(),
    "event": lambda m: (m.cpu.Event().query(), m.cpu.Event().record(), m.cpu.Event().wait()),
    "stream_methods": lambda m: (m.cpu.Stream().wait_stream(None), m.cpu.Stream().record_event()),
    "device_module": lambda m: m.get_device_module("cpu").__name__.split(".")[-1],
    "device_module_none": lambda m: m.get_device_module().__name__.split(".")[-1],
    "device_module_dev": lambda m: m.get_device_module(m.device("cpu")).device_count(),
    "device_module_cuda": lambda m: m.get_device_module("cuda").device_count(),
    "device_module_mps": lambda m: m.get_device_module("mps").is_available(),
    "device_module_bad_type": lambda m: m.get_device_module(3),
    "device_module_foo": lambda m: m.get_device_module("foo"),
    "device_module_meta": lambda m: m.get_device_module("meta"),
}


@pytest.mark.parametrize("name", CPU)
def test_cpu_module_as_torch(torch_mod, name):
    case = CPU[name]
    assert outcome(lambda: case(tg)) == outcome(lambda: case(torch_mod))


def test_cpu_streams_nest_as_torch(torch_mod):
    for m in (tg, torch_mod):
        default, s = m.cpu.current_stream(), m.cpu.Stream()
        with m.cpu.stream(s) as entered:
            assert entered is None and m.cpu.current_stream() is s
            with m.cpu.stream(None):
                assert m.cpu.current_stream() is s
        assert m.cpu.current_stream() is default


def test_cpu_amp_spellings_warn_and_set_the_cpu_state(torch_mod):
    def run(m):
        with m.cpu.amp.autocast(dtype=m.float16):
            inside = (m.is_autocast_enabled("cpu"), m.get_autocast_dtype("cpu"))
        scaler = m.cpu.amp.GradScaler()
        return [outcome(lambda: v) for v in inside] + [scaler.is_enabled(), scaler.get_scale()]

    assert in_thread(lambda: run(tg)) == in_thread(lambda: run(torch_mod))
    assert "tapegrad.cpu.amp" in __import__("sys").modules


STUBS = [(mod, fn) for mod, rows in _device_stubs._ROWS.items() for fn in rows]


@pytest.mark.parametrize(("mod", "fn"), STUBS, ids=[f"{m}.{f}" for m, f in STUBS])
def test_absent_backend_modules_answer_as_torch_cpu_build(torch_mod, mod, fn):
    args = {"manual_seed": (1,), "manual_seed_all": (1,), "set_rng_state": (tg.get_rng_state(),),
            "set_per_process_memory_fraction": (0.5,)}.get(fn, ())  # fmt: skip
    ours = outcome(lambda: getattr(getattr(tg, mod), fn)(*args))
    theirs = outcome(lambda: getattr(getattr(torch_mod, mod), fn)(*args))
    assert ours == theirs


# -- autocast state ----------------------------------------------------------------------------


def _autocast_script(m):
    """One thread's session with the autocast state, as a list of outcomes."""
    steps = [
        lambda: m.is_autocast_enabled(),
        lambda: m.is_autocast_enabled("cpu"),
        lambda: m.is_autocast_enabled("cuda:0"),
        *(lambda d=d: m.get_autocast_dtype(d) for d in ("cpu", "cuda", "xla", "mps", "hpu")),
        lambda: m.set_autocast_enabled("cpu", True),
        lambda: m.is_autocast_enabled("cpu"),
        lambda: m.set_autocast_dtype(device_type="cpu", dtype=m.float16),
        lambda: m.get_autocast_dtype("cpu"),
        lambda: m.set_autocast_enabled(device_type="cpu", enabled=False),
        lambda: m.is_autocast_enabled(device_type="cpu"),
        lambda: m.set_autocast_enabled(enabled=True),  # no device: CUDA's
        lambda: m.set_autocast_enabled(False),
        lambda: m.set_autocast_enabled(True),
        lambda: (m.is_autocast_enabled(), m.is_autocast_enabled("cuda")),
        lambda: m.set_autocast_enabled(False),
        lambda: [m.autocast_increment_nesting() for _ in range(2)],
        lambda: [m.autocast_decrement_nesting() for _ in range(3)],
        lambda: m.is_autocast_cache_enabled(),
        lambda: m.set_autocast_cache_enabled(False),
        lambda: m.is_autocast_cache_enabled(),
        lambda: m.clear_autocast_cache(),
        # deprecated spellings (DeprecationWarning each)
        lambda: (m.is_autocast_cpu_enabled(), m.is_autocast_ipu_enabled()),
        lambda: m.is_autocast_xla_enabled(),
        lambda: [m.get_autocast_cpu_dtype(), m.get_autocast_gpu_dtype()],
        lambda: [m.get_autocast_ipu_dtype(), m.get_autocast_xla_dtype()],
        lambda: m.set_autocast_cpu_enabled(True),
        lambda: m.is_autocast_enabled("cpu"),
        lambda: m.set_autocast_cpu_dtype(m.bfloat16),
        lambda: m.set_autocast_gpu_dtype(m.bfloat16),
        lambda: (m.get_autocast_dtype("cpu"), m.get_autocast_dtype("cuda")),
        lambda: (m.set_autocast_ipu_enabled(True), m.set_autocast_xla_dtype(m.float16)),
        lambda: (m.is_autocast_enabled("ipu"), m.get_autocast_dtype("xla")),
        lambda: m.set_autocast_ipu_dtype(m.bfloat16),
        lambda: m.set_autocast_xla_enabled(True),
        lambda: m.set_autocast_cpu_enabled(False),
    ]
    out = []
    for step in steps:
        o = outcome(step)
        if o[0] == "value" and isinstance(o[1], (tuple, list)):
            o = ("value", [outcome(lambda v=v: v) for v in o[1]])
        out.append(o)
    return out


def test_autocast_state_session_as_torch(torch_mod):
    assert in_thread(lambda: _autocast_script(tg)) == in_thread(lambda: _autocast_script(torch_mod))


def test_autocast_blocks_show_in_the_state_as_torch(torch_mod):
    def run(m):
        out = []
        with m.autocast("cpu"):
            out.append((m.is_autocast_enabled("cpu"), outcome(lambda: m.get_autocast_dtype("cpu"))))
            with m.autocast("cpu", enabled=False):
                out.append(m.is_autocast_enabled("cpu"))
            m.set_autocast_dtype("cpu", m.float16)
        out.append((m.is_autocast_enabled("cpu"), outcome(lambda: m.get_autocast_dtype("cpu"))))
        m.set_autocast_dtype("cpu", m.float16)
        with m.autocast("cpu"):  # no dtype: the one set before
            out.append(outcome(lambda: m.get_autocast_dtype("cpu")))
        with m.autocast("cuda"):  # no GPU: disabled, with a warning
            out.append(m.is_autocast_enabled("cuda"))
        return out

    ours, theirs = in_thread(lambda: run(tg)), in_thread(lambda: run(torch_mod))
    assert ours[0] == theirs[0] and len(ours[1]) == len(theirs[1]) == 1


ERRORS = {
    "get_no_device": lambda m: m.get_autocast_dtype(),
    "get_int": lambda m: m.get_autocast_dtype(3),
    "is_device_object": lambda m: m.is_autocast_enabled(m.device("cpu")),
    "is_foo": lambda m: m.is_autocast_enabled("foo"),
    "is_meta": lambda m: m.is_autocast_enabled("meta"),
    "set_enabled_int": lambda m: m.set_autocast_enabled(1),
    "set_enabled_cpu_int": lambda m: m.set_autocast_enabled("cpu", 1),
    "set_dtype_dtype_first": lambda m: m.set_autocast_dtype(m.float16),
    "set_dtype_str": lambda m: m.set_autocast_dtype("cpu", "x"),
    "set_cpu_dtype_int": lambda m: m.set_autocast_cpu_dtype(3),
    "set_cpu_enabled_int": lambda m: m.set_autocast_cpu_enabled(1),
    "cache_int": lambda m: m.set_autocast_cache_enabled(1),
}


@pytest.mark.parametrize("name", ERRORS)
def test_autocast_state_errors_as_torch(torch_mod, name):
    case = ERRORS[name]
    ours = in_thread(lambda: outcome(lambda: case(tg)))[0]
    theirs = in_thread(lambda: outcome(lambda: case(torch_mod)))[0]
    assert ours[:2] == theirs[:2] == ("raise", ours[1])
    if name != "get_no_device":  # torch's parser words this one its own way
        assert ours == theirs
