"""The rest of torch's top level added for ``import tapegrad as torch`` (brief ns19): dtype,
finfo/iinfo, constants, asarray/frombuffer/dlpack/range, settings, typename, vmap, binomial,
and the Tensor methods data_ptr, untyped_storage/storage, is_neg, is_shared, as_subclass,
apply_/map_/map2_. Each compared with torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg

FLOATS = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
INTS = ["uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"]
FINFO = ["bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"]


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_matches_torch(torch_mod, name):
    ours, theirs = tg.finfo(getattr(tg, name)), torch_mod.finfo(getattr(torch_mod, name))
    for attr in FINFO:
        got, want = getattr(ours, attr), getattr(theirs, attr)
        assert got == want and type(got) is type(want), f"{name}.{attr}: {got!r} != {want!r}"
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name", INTS)
def test_iinfo_matches_torch(torch_mod, name):
    ours, theirs = tg.iinfo(getattr(tg, name)), torch_mod.iinfo(getattr(torch_mod, name))
    for attr in ("bits", "min", "max", "dtype"):
        got, want = getattr(ours, attr), getattr(theirs, attr)
        assert got == want and type(got) is type(want), f"{name}.{attr}: {got!r} != {want!r}"
    assert repr(ours) == repr(theirs)


def test_finfo_default_dtype_and_bad_types(torch_mod):
    assert tg.finfo().dtype == torch_mod.finfo().dtype == "float32"
    tg.set_default_dtype(tg.float64)
    try:
        assert tg.finfo().dtype == "float64"
    finally:
        tg.set_default_dtype(tg.float32)
    for call in (
        lambda m: m.finfo(m.int32),
        lambda m: m.finfo(m.bool),
        lambda m: m.finfo("float32"),
        lambda m: m.iinfo(m.float32),
        lambda m: m.iinfo(m.bool),
        lambda m: m.iinfo("int32"),
    ):
        with pytest.raises(TypeError) as theirs:
            call(torch_mod)
        with pytest.raises(TypeError) as ours:
            call(tg)
        assert str(ours.value) == str(theirs.value)
    assert tg.finfo(tg.float32) == tg.finfo(tg.float32) != tg.finfo(tg.float64)


@pytest.mark.parametrize("name", [*FLOATS, *INTS, "bool"])
def test_dtypes_are_instances_of_dtype(name):
    d = getattr(tg, name)
    assert isinstance(d, tg.dtype)
    assert isinstance(tg.zeros(2, dtype=d).dtype, tg.dtype)


@pytest.mark.parametrize("name", ["uint16", "uint32", "uint64"])
def test_unsigned_dtypes(torch_mod, name):
    x = tg.tensor([1, 2, 3], dtype=getattr(tg, name))
    y = torch_mod.tensor([1, 2, 3], dtype=getattr(torch_mod, name))
    assert x.dtype.name == str(y.dtype).split(".")[1] == name
    assert x.is_signed() is y.is_signed() is False


def test_constants(torch_mod):
    for name in ("pi", "e", "inf"):
        assert getattr(tg, name) == getattr(torch_mod, name)
    assert np.isnan(tg.nan) and tg.newaxis is torch_mod.newaxis is None
    assert tg.ones(3)[:, tg.newaxis].shape == (3, 1)


# -- asarray ----------------------------------------------------------------------------------


def _asarray_case(lib, source, kwargs):
    """(result, source written after the call): whether the result saw the write."""
    obj = source(lib)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = lib.asarray(obj, **kwargs)
    if isinstance(obj, np.ndarray):
        obj[0] = 42
    elif isinstance(obj, bytearray):
        obj[:4] = np.float32(42).tobytes()
    elif hasattr(obj, "requires_grad"):
        with lib.no_grad():
            obj[0] = 42
    return out


SOURCES = {
    "ndarray f64": lambda lib: np.arange(4.0),
    "ndarray i32": lambda lib: np.arange(4, dtype=np.int32),
    "strided ndarray": lambda lib: np.arange(8.0)[::2],
    "tensor": lambda lib: lib.arange(4.0),
    "bytearray": lambda lib: bytearray(np.arange(4, dtype=np.float32).tobytes()),
    "list": lambda lib: [1.0, 2.0, 3.0],
    "int list": lambda lib: [1, 2, 3],
    "numpy scalar": lambda lib: np.float64(2.5),
    "python float": lambda lib: 2.5,
}
ASARRAY = [
    (source, kwargs)
    for source in SOURCES
    for kwargs in ({}, {"copy": True}, {"dtype": "float32"}, {"dtype": "float64", "copy": False})
]


@pytest.mark.parametrize(("source", "kwargs"), ASARRAY, ids=[f"{s}-{k}" for s, k in ASARRAY])
def test_asarray_shares_or_copies_like_torch(torch_mod, source, kwargs):
    make = SOURCES[source]
    outcomes = []
    for lib in (torch_mod, tg):
        kw = dict(kwargs)
        if "dtype" in kw:
            kw["dtype"] = getattr(lib, kw["dtype"])
        try:
            out = _asarray_case(lib, make, kw)
        except Exception as exc:  # noqa: BLE001 - the type is compared
            outcomes.append(type(exc))
        else:
            outcomes.append((np.asarray(out.detach().numpy()).tolist(), out.dtype))
    theirs, ours = outcomes
    if isinstance(theirs, type):
        assert ours is theirs
        return
    assert ours[0] == theirs[0]  # the values, including whether the write showed through
    assert ours[1].name == str(theirs[1]).split(".")[1]


@pytest.mark.filterwarnings("ignore:torch.asarray. unspecified requires_grad")
def test_asarray_of_a_tensor_is_the_tensor(torch_mod):
    for lib in (torch_mod, tg):
        x = lib.ones(3)
        assert lib.asarray(x) is x
        assert lib.asarray(x, requires_grad=True) is x and x.requires_grad
        with pytest.warns(UserWarning, match="unspecified requires_grad"):
            assert lib.asarray(x) is x
        y = lib.asarray(x, copy=True)
        assert y is not x and y.requires_grad and not y.is_leaf  # a clone, in the graph
        z = lib.asarray(x, dtype=lib.float64)
        assert z.dtype == lib.float64 and z.requires_grad and not z.is_leaf  # a .to(), in the graph
        assert not lib.asarray(x, dtype=lib.float64, requires_grad=False).requires_grad
        with pytest.raises(ValueError, match="can't alias tensor with dtype 'Float'"):
            lib.asarray(x, dtype=lib.float64, copy=False)
        with pytest.raises(RuntimeError):
            lib.asarray([1, 2], requires_grad=True)


# -- frombuffer, dlpack, range ----------------------------------------------------------------

FROMBUFFER = [
    (bytearray(8), {"dtype": "float32"}),
    (bytearray(range(8)), {"dtype": "int16", "count": 2, "offset": 2}),
    (bytearray(range(8)), {"dtype": "int8", "offset": 7}),
    (bytearray(3), {"dtype": "int16"}),  # not a multiple of 2 bytes
    (bytearray(4), {"dtype": "int8", "offset": 4}),
    (bytearray(4), {"dtype": "int8", "count": 0}),
    (bytearray(4), {"dtype": "int8", "count": 5}),
    (bytearray(), {"dtype": "int8"}),
]


@pytest.mark.parametrize(("buffer", "kwargs"), FROMBUFFER)
def test_frombuffer_matches_torch(torch_mod, buffer, kwargs):
    results = []
    for lib in (torch_mod, tg):
        kw = dict(kwargs, dtype=getattr(lib, kwargs["dtype"]))
        buf = bytearray(buffer)
        try:
            out = lib.frombuffer(buf, **kw)
        except ValueError as exc:
            results.append(str(exc))
            continue
        if len(buf):
            buf[-1] = 99  # shared memory: the tensor sees the write
        results.append(out.numpy().tolist())
    assert results[0] == results[1]


def test_frombuffer_read_only_warns_and_requires_grad(torch_mod):
    for lib in (torch_mod, tg):
        with pytest.warns(UserWarning, match="not writable"):
            assert lib.frombuffer(b"\x00\x00\x80\x3f", dtype=lib.float32).tolist() == [1.0]
        assert lib.frombuffer(bytearray(8), dtype=lib.float32, requires_grad=True).requires_grad


def test_dlpack_round_trips_share_memory(torch_mod):
    a = np.arange(3.0)
    t = tg.from_dlpack(a)
    a[0] = 7.0
    assert t.tolist() == [7.0, 1.0, 2.0]
    x = tg.arange(3.0)
    y = tg.from_dlpack(tg.to_dlpack(x))
    y[1] = 5.0
    assert x.tolist() == [0.0, 5.0, 2.0]
    th = torch_mod.from_dlpack(x)  # tapegrad tensors are DLPack producers
    th[2] = 9.0
    assert x.tolist() == [0.0, 5.0, 9.0]
    back = tg.from_dlpack(torch_mod.arange(3.0))
    assert back.dtype == tg.float32 and back.tolist() == [0.0, 1.0, 2.0]
    # torch.tensor/as_tensor read __dlpack__ first (before it: "len() of a 0-d tensor"),
    # and a tensor that requires grad must convert too
    assert torch_mod.tensor(tg.ones(2, requires_grad=True)).tolist() == [1.0, 1.0]
    assert torch_mod.as_tensor(tg.arange(4).reshape(2, 2).t()).tolist() == [[0, 2], [1, 3]]


RANGES = [(1, 4), (0, 1, 0.25), (0, 1, 0.3), (5, 1, -2), (1, 2.5), (0, 1, 0.1), (1, 4, 0), (4, 1)]


# NOTE: torch.range(0, 1, 0.25, dtype=torch.int64) kills torch with SIGFPE (the step cast to 0)
RANGE_CASES = [(args, dtype) for args in RANGES for dtype in (None, "float64")] + [
    (args, "int64") for args in RANGES if all(isinstance(a, int) for a in args) and args[2:] != (0,)
]


@pytest.mark.parametrize(("args", "dtype"), RANGE_CASES)
def test_range_matches_torch(torch_mod, args, dtype):
    results = []
    for lib in (torch_mod, tg):
        kw = {} if dtype is None else {"dtype": getattr(lib, dtype)}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out = lib.range(*args, **kw)
            except RuntimeError as exc:
                results.append(str(exc))
                continue
        assert any("torch.range is deprecated" in str(w.message) for w in caught)
        results.append((out.tolist(), str(out.dtype).split(".")[-1]))
    assert results[0] == results[1]
    with pytest.raises(TypeError):
        tg.range(4)


# -- functions and settings -------------------------------------------------------------------


def test_typename_matches_torch(torch_mod):
    for make in (lambda m: m.zeros(2), lambda m: m.zeros(2, dtype=m.int64), lambda m: 3,
                 lambda m: np.zeros(2), lambda m: "s"):  # fmt: skip
        assert tg.typename(make(tg)) == torch_mod.typename(make(torch_mod))
    assert tg.typename(tg.nn.Linear(1, 1)).endswith(".Linear")


def test_vmap_is_func_vmap():
    assert tg.vmap is tg.func.vmap
    assert tg.vmap(tg.dot)(tg.ones(3, 2), tg.ones(3, 2)).tolist() == [2.0, 2.0, 2.0]


def test_binomial(torch_mod):
    tg.manual_seed(0)
    count, prob = tg.full((4000,), 10.0, dtype=tg.float64), tg.full((4000,), 0.3, tg.float64)
    draws = tg.binomial(count, prob)
    assert draws.dtype == tg.float64 and 2.8 < draws.mean().item() < 3.2
    assert ((draws >= 0) & (draws <= 10)).all()
    assert (draws.numpy() == np.round(draws.numpy())).all()
    assert tg.binomial(tg.tensor([5.0]), tg.tensor([0.0])).tolist() == [0.0]
    assert tg.binomial(tg.tensor([5.0]), tg.tensor([1.0])).tolist() == [5.0]
    for lib, err in ((torch_mod, ValueError), (tg, ValueError)):
        with pytest.raises(err, match="floating-point dtypes for count"):
            lib.binomial(lib.tensor([10, 5]), lib.tensor([0.5, 0.1]))
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError):
            lib.binomial(lib.tensor([10.0]), lib.tensor([0.5], dtype=lib.float64))


def test_default_device(torch_mod):
    assert tg.get_default_device() == tg.device("cpu")
    assert repr(tg.get_default_device()) == repr(torch_mod.get_default_device())
    for value in ("cpu", tg.device("cpu"), None):
        tg.set_default_device(value)
        assert tg.get_default_device().type == "cpu"
    with pytest.raises(RuntimeError, match="cannot change that default"):
        tg.set_default_device("meta")


SETTINGS = [  # (setter, getter, values): set in both libraries, read back the same
    ("set_warn_always", "is_warn_always_enabled", (True, False)),
    ("set_anomaly_enabled", "is_anomaly_enabled", (True, False)),
    ("set_deterministic_debug_mode", "get_deterministic_debug_mode", (1, 2, 0)),
    ("set_deterministic_debug_mode", "is_deterministic_algorithms_warn_only_enabled", ("warn",)),
    ("set_deterministic_debug_mode", "are_deterministic_algorithms_enabled", ("error", "default")),
]


@pytest.fixture
def reset_settings(torch_mod):
    """Process-wide flags back off however a test ends: torch left deterministic changes
    the error type of later tests' torch calls (put: RuntimeError, not IndexError)."""
    yield
    for lib in (torch_mod, tg):
        lib.use_deterministic_algorithms(False)
        lib.set_anomaly_enabled(False)
        lib.set_warn_always(False)


@pytest.mark.usefixtures("reset_settings")
@pytest.mark.parametrize(("setter", "getter", "values"), SETTINGS)
def test_settings_round_trip_like_torch(torch_mod, setter, getter, values):
    for value in values:
        for lib in (torch_mod, tg):
            getattr(lib, setter)(value)
        want = getattr(torch_mod, getter)()
        assert getattr(tg, getter)() == want and type(getattr(tg, getter)()) is type(want)
        if isinstance(value, bool):
            assert want is value


@pytest.mark.usefixtures("reset_settings")
def test_deterministic_debug_mode_errors(torch_mod):
    for bad, err in ((3, RuntimeError), ("loud", RuntimeError), (1.0, TypeError)):
        for lib in (torch_mod, tg):
            with pytest.raises(err, match="debug_mode"):
                lib.set_deterministic_debug_mode(bad)


@pytest.mark.usefixtures("reset_settings")
def test_anomaly_and_determinism_flags(torch_mod):
    tg.set_anomaly_enabled(True, check_nan=False)
    try:
        assert tg.autograd.is_anomaly_enabled() and not tg.is_anomaly_check_nan_enabled()
    finally:
        tg.set_anomaly_enabled(False)
    assert tg.is_anomaly_check_nan_enabled() is torch_mod.is_anomaly_check_nan_enabled()
    assert tg.set_flush_denormal(False) is False
    tg.use_deterministic_algorithms(True, warn_only=True)
    try:
        assert tg.is_deterministic_algorithms_warn_only_enabled()
    finally:
        tg.use_deterministic_algorithms(False)
    assert tg.is_deterministic_algorithms_warn_only_enabled() is False


# -- Tensor methods ---------------------------------------------------------------------------


def test_data_ptr_and_storage(torch_mod):
    for lib in (torch_mod, tg):
        base = lib.arange(6.0)
        view = base[2:]
        assert view.data_ptr() == base.data_ptr() + 2 * 4
        assert view.const_data_ptr() == view.data_ptr()
        assert lib.zeros(0).data_ptr() == 0
        s = view.untyped_storage()
        assert s.data_ptr() == base.data_ptr() and s.nbytes() == 24 and len(s) == 24
        assert s.tolist() == list(np.arange(6.0, dtype=np.float32).tobytes())
        assert lib.is_storage(s) and not lib.is_storage(view)
        with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
            typed = view.storage()
        assert typed.size() == 6 and typed[3] == 3.0 and typed.tolist() == list(range(6))
        assert base.is_neg() is base.is_shared() is False


class Marked(tg.Tensor):
    pass


def test_as_subclass_is_an_alias_in_the_graph(torch_mod):
    x = tg.ones(3, requires_grad=True)
    m = (x * 2).as_subclass(Marked)
    assert type(m) is Marked and m.grad_fn is not None and m.shape == (3,)
    (m * m).sum().backward()
    assert x.grad.tolist() == [8.0, 8.0, 8.0]
    y = tg.zeros(2)
    a = y.as_subclass(Marked)
    a.add_(1.0)
    assert y.tolist() == [1.0, 1.0] and a.data_ptr() == y.data_ptr()
    for lib in (torch_mod, tg):
        with pytest.raises(TypeError, match="does not inherit from Tensor"):
            lib.ones(2).as_subclass(int)


CALLABLES = [  # (method, extra tensors, function)
    ("apply_", (), lambda v: v * 2 + 1),
    ("apply_", (), lambda v: 7.0 if isinstance(v, float) else -1.0),
    ("map_", (np.arange(3.0),), lambda u, v: u + v),
    ("map2_", (np.arange(3.0), np.full((2, 1), 5.0)), lambda u, v, w: u + v * w),
]


@pytest.mark.parametrize(("method", "others", "fn"), CALLABLES)
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_python_callables_match_torch(torch_mod, method, others, fn, dtype):
    outs = []
    for lib in (torch_mod, tg):
        base = lib.arange(6.0).reshape(3, 2).to(getattr(lib, dtype))
        x = base.t()  # (2, 3), a non-contiguous view: writes go through to base
        assert getattr(x, method)(*(lib.tensor(o).to(x.dtype) for o in others), fn) is x
        outs.append((base.tolist(), str(x.dtype).split(".")[-1]))
    assert outs[0] == outs[1]


def test_python_callables_refuse_grad_and_bad_shapes(torch_mod):
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="Can't call apply_"):
            lib.ones(3, requires_grad=True).apply_(lambda v: v)
        with pytest.raises(RuntimeError):
            lib.ones(3).map_(lib.ones(2), lambda u, v: u)
        with pytest.raises(TypeError, match="map2_: expected .* for argument 'y'"):
            lib.ones(3).map2_(lib.ones(3), lib.ones(3, dtype=lib.float64), lambda u, v, w: u)
