"""tg.save / tg.load: round trips, atomic writes, and refusal of corrupt or foreign files."""

import json
import os
import pathlib
import pickle
import struct
import zlib
from collections import OrderedDict

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import serialization
from tapegrad.serialization import FormatError


def _nested():
    return {
        "f32": tg.randn(3, 4),
        "f64": tg.tensor([1.5, -2.25], dtype=tg.float64),
        "i64": tg.arange(5),
        "bool": tg.tensor([True, False, True]),
        "f16": tg.tensor([0.5, 1.0], dtype=tg.float16),
        "scalar": tg.tensor(3.0),
        "empty": tg.zeros(0, 3),
        "transposed": tg.randn(3, 2).T,
        "numpy": np.arange(6, dtype=np.uint8).reshape(2, 3),
        "complex": np.array([1 + 2j], dtype=np.complex64),
        "np_scalar": np.float32(2.5),
        "list": [1, 2.5, "text ✓", None, True, [tg.ones(2)]],
        "tuple": (0.9, 0.999),
        "int_keys": {0: {"step": 3}, 1: {}},
        "tuple_key": {("a", 1): "x"},
        "ordered": OrderedDict([("z", 1), ("a", 2)]),
        "specials": [float("inf"), float("-inf"), 2**70, -0.0],
    }


def _assert_same(a, b, where="obj"):
    assert type(a) is type(b), f"{where}: {type(a)} != {type(b)}"
    if isinstance(a, tg.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=where)
    elif isinstance(a, (np.ndarray, np.generic)):
        assert a.dtype == b.dtype and np.shape(a) == np.shape(b), where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, dict):
        assert list(a.keys()) == list(b.keys()), where
        for k in a:
            _assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b or (a != a and b != b), where
        if isinstance(a, float):
            assert np.copysign(1, a) == np.copysign(1, b), where


def test_round_trip_of_nested_values(tmp_path):
    obj = _nested()
    tg.save(obj, tmp_path / "nested.tg")
    _assert_same(tg.load(tmp_path / "nested.tg"), obj)


def test_nan_round_trips(tmp_path):
    tg.save({"nan": float("nan"), "t": tg.tensor([float("nan")])}, str(tmp_path / "n"))
    loaded = tg.load(str(tmp_path / "n"))
    assert loaded["nan"] != loaded["nan"] and np.isnan(loaded["t"].numpy()[0])


def test_loaded_tensors_are_plain_leaves_that_own_their_memory(tmp_path):
    w = tg.randn(2, 2, requires_grad=True)
    y = w * 2
    tg.save({"w": w, "y": y}, tmp_path / "f")
    loaded = tg.load(tmp_path / "f")
    for t in loaded.values():
        assert t.is_leaf and not t.requires_grad and t.grad_fn is None
        assert t._data.flags.owndata and t._data.flags.writeable
    np.testing.assert_array_equal(loaded["y"].numpy(), y.detach().numpy() * 1)


def test_a_shared_tensor_is_stored_once_and_loads_as_one_object(tmp_path):
    big = tg.zeros(1000)
    tg.save({"a": big, "b": big}, tmp_path / "shared")
    tg.save({"a": big, "b": tg.zeros(1000)}, tmp_path / "separate")
    loaded = tg.load(tmp_path / "shared")
    assert loaded["a"] is loaded["b"]
    shared_size = os.path.getsize(tmp_path / "shared")
    assert shared_size < os.path.getsize(tmp_path / "separate") - 3000


def test_optimizer_state_dict_round_trips(tmp_path):
    w = tg.randn(3, requires_grad=True)
    opt = tg.optim.Adam([w], lr=0.1, amsgrad=True)
    (w * w).sum().backward()
    opt.step()
    tg.save(opt.state_dict(), pathlib.Path(tmp_path) / "opt")
    loaded = tg.load(pathlib.Path(tmp_path) / "opt")
    _assert_same(loaded, opt.state_dict())
    assert loaded["param_groups"][0]["betas"] == (0.9, 0.999)


def test_unsupported_values_raise_type_error_naming_the_place(tmp_path):
    path = tmp_path / "f"
    with pytest.raises(TypeError, match=r"obj\['model'\]\['fn'\].*function"):
        tg.save({"model": {"fn": lambda: 0}}, path)
    with pytest.raises(TypeError, match="key of type"):
        tg.save({frozenset(): 1}, path)
    with pytest.raises(TypeError, match="dtype"):
        tg.save(np.array(["a"], dtype=object), path)
    assert not path.exists()
    assert os.listdir(tmp_path) == []


# -- atomic writes ---------------------------------------------------------------------------


def _fail(*args, **kwargs):
    raise OSError("simulated crash")


def _fail_on_call(n, real):
    """``real``, except that call number ``n`` raises (a crash in the middle of writing)."""
    calls = []

    def wrapper(*args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            _fail()
        return real(*args, **kwargs)

    return wrapper


@pytest.mark.parametrize("where", ["replace", "fsync", "mid-payload"])
def test_a_failed_save_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch, where):
    path = tmp_path / "model.tg"
    tg.save({"version": 1, "w": tg.ones(3), "b": tg.ones(2)}, path)
    before = path.read_bytes()
    if where == "mid-payload":
        # crc32 runs on the header, then on each padding and array chunk as it is written.
        monkeypatch.setattr(serialization.zlib, "crc32", _fail_on_call(4, zlib.crc32))
    else:
        monkeypatch.setattr(os, where, _fail)
    with pytest.raises(OSError, match="simulated crash"):
        tg.save({"version": 2, "w": tg.zeros(3), "b": tg.zeros(2)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.tg"]
    assert tg.load(path)["version"] == 1


def test_save_replaces_an_existing_file(tmp_path):
    path = tmp_path / "m"
    tg.save({"v": 1}, path)
    tg.save({"v": 2}, path)
    assert tg.load(path) == {"v": 2}
    assert os.listdir(tmp_path) == ["m"]


# -- corrupt, truncated and foreign files ----------------------------------------------------


def _saved_bytes(tmp_path):
    path = tmp_path / "good"
    tg.save({"w": tg.tensor([1.0, 2.0, 3.0]), "step": 7, "name": "net"}, path)
    return path.read_bytes()


def _load_bytes(tmp_path, data, name="bad"):
    path = tmp_path / name
    path.write_bytes(data)
    return tg.load(path)


def test_every_truncation_is_detected(tmp_path):
    data = _saved_bytes(tmp_path)
    for cut in range(len(data)):
        with pytest.raises(FormatError) as info:
            _load_bytes(tmp_path, data[:cut])
        assert str(tmp_path / "bad") in str(info.value)


def test_trailing_bytes_are_detected(tmp_path):
    with pytest.raises(FormatError, match="trailing bytes"):
        _load_bytes(tmp_path, _saved_bytes(tmp_path) + b"\0")


def test_every_flipped_byte_is_detected(tmp_path):
    data = _saved_bytes(tmp_path)
    for i in range(len(data)):
        corrupt = bytearray(data)
        corrupt[i] ^= 0x10
        with pytest.raises(FormatError):
            _load_bytes(tmp_path, bytes(corrupt))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"hello, this is a text file\n", "not a tapegrad file"),
        (b"PK\x03\x04" + bytes(40), "zip archive"),
        (b"\x93NUMPY\x01\x00" + bytes(40), "not a tapegrad file"),
        (pickle.dumps({"w": [1.0, 2.0]}), "pickle"),
    ],
    ids=["empty", "text", "zip", "npy", "pickle"],
)
def test_foreign_files_raise_a_clear_error(tmp_path, content, message):
    with pytest.raises(FormatError, match=message) as info:
        _load_bytes(tmp_path, content)
    assert isinstance(info.value, ValueError)
    assert info.value.path == str(tmp_path / "bad")


def test_a_torch_file_is_refused(tmp_path, torch_mod):
    torch_mod.save({"w": torch_mod.ones(2)}, tmp_path / "t.pt")
    with pytest.raises(FormatError, match="zip archive"):
        tg.load(tmp_path / "t.pt")


CALLS = []


def _side_effect(arg):
    CALLS.append(arg)
    return arg


class _Malicious:
    def __reduce__(self):
        return (_side_effect, ("code ran",))


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_a_pickle_is_refused_without_being_unpickled(tmp_path, monkeypatch, protocol):
    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps({"state": _Malicious()}, protocol=protocol))
    # The file really would run code if unpickled...
    CALLS.clear()
    pickle.loads(path.read_bytes())
    assert CALLS == ["code ran"]
    CALLS.clear()

    # ...and tg.load refuses it without touching pickle at all.
    def forbidden(*args, **kwargs):
        raise AssertionError("tg.load used pickle")

    for name in ("load", "loads", "Unpickler", "_Unpickler"):
        monkeypatch.setattr(pickle, name, forbidden)
    with pytest.raises(FormatError, match="pickle"):
        tg.load(path)
    assert CALLS == []


def _forge(root, payload=b"", version=serialization.VERSION):
    """A file with a valid checksummed layout around an arbitrary (hostile) header."""
    header = json.dumps({"root": root, "payload_bytes": len(payload)}).encode()
    head = serialization.MAGIC + struct.pack("<IQI", version, len(header), zlib.crc32(header))
    start = len(head) + len(header)
    pad = bytes(-(-start // 64) * 64 - start)
    return head + header + pad + payload + struct.pack("<I4s", zlib.crc32(payload), b"TGEN")


def test_forged_header_round_trips_as_a_sanity_check(tmp_path):
    root = {"t": "tensor", "dtype": "float32", "shape": [2], "offset": 0, "nbytes": 8}
    loaded = _load_bytes(tmp_path, _forge(root, np.array([1, 2], np.float32).tobytes()))
    np.testing.assert_array_equal(loaded.numpy(), [1.0, 2.0])


@pytest.mark.parametrize(
    "root",
    [
        {"t": "pickle", "v": "gASV"},
        {"t": "tensor", "dtype": "object", "shape": [1], "offset": 0, "nbytes": 8},
        {"t": "tensor", "dtype": "float32", "shape": [4], "offset": 0, "nbytes": 8},
        {"t": "tensor", "dtype": "float32", "shape": [2], "offset": 64, "nbytes": 8},
        {"t": "tensor", "dtype": "float32", "shape": [-2], "offset": 0, "nbytes": 8},
        {"t": "dict", "k": [{"t": "list", "v": []}], "v": [1]},
        {"t": "dict", "k": ["a", "b"], "v": [1]},
        {"t": "ref", "id": 5},
        {"t": "list", "v": [{"t": "ref", "id": -1}]},
        {"t": "tensor", "dtype": "uint8", "shape": [2**62, 2**62, 4], "offset": 0, "nbytes": 0},
        {"no_tag": 1},
        [1, 2],
    ],
    ids=[
        "unknown-tag", "object-dtype", "size-mismatch", "out-of-range", "negative-shape",
        "unhashable-key", "key-count", "dangling-ref", "negative-ref", "overflowing-shape",
        "missing-tag", "bare-list",
    ],
)  # fmt: skip
def test_hostile_headers_raise_format_error(tmp_path, root):
    with pytest.raises(FormatError, match="corrupt header"):
        _load_bytes(tmp_path, _forge(root, bytes(8)))


def test_unknown_version_is_reported(tmp_path):
    with pytest.raises(FormatError, match="version 99"):
        _load_bytes(tmp_path, _forge(1, version=99))


def test_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        tg.load(tmp_path / "missing")
