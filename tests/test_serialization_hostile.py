"""tg.load on forged headers (Note [Hostile files]); save/load with file objects and torch's
keywords; what tg.save refuses."""

import io
import json
import os
import tracemalloc
from collections import Counter, OrderedDict

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.serialization import FormatError

from .test_serialization import _assert_same, _forge


def _entry(offset=0, nbytes=16, shape=(4,), dtype="float32", t="tensor"):
    return {"t": t, "dtype": dtype, "shape": list(shape), "offset": offset, "nbytes": nbytes}


def _load(data):
    return tg.load(io.BytesIO(data))


def test_entries_aliasing_one_payload_are_refused_before_any_allocation():
    # The reported attack (20,000 entries of 1 MB on one 1 MB payload asked for 19.5 GiB),
    # at 2,000 entries to keep the test fast.
    payload = bytes(1 << 20)
    root = {"t": "list", "v": [_entry(0, 1 << 20, (1 << 18,)) for _ in range(2_000)]}
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match=r"root\[1\]: bytes overlap those of root\[0\]"):
            _load(_forge(root, payload))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20  # the header's JSON, not 2,000 copies of the payload


def test_partly_overlapping_entries_are_refused():
    root = {"t": "dict", "k": ["a", "b"], "v": [_entry(0, 16), _entry(8, 16)]}
    with pytest.raises(FormatError, match=r"root\['b'\]: bytes overlap those of root\['a'\]"):
        _load(_forge(root, bytes(64)))


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("shape", "[1e400]"),
        ("shape", "[2.5]"),
        ("shape", "[true]"),
        ("shape", '["4"]'),
        ("shape", "[-4]"),
        ("shape", "4"),
        ("shape", "[" + ",".join(["1"] * 65) + "]"),
        ("shape", "[0, 4611686018427387904, 4611686018427387904]"),
        ("shape", "[99999999999999999999999]"),
        ("nbytes", "1e400"),
        ("nbytes", "16.0"),
        ("nbytes", "-16"),
        ("offset", "-64"),
        ("offset", "2.5"),
        ("offset", "1e400"),
        ("offset", "18446744073709551616"),
        ("dtype", '"object"'),
        ("dtype", '["float32"]'),
    ],
)
def test_forged_numbers_give_format_error_naming_the_entry(field, text):
    entry = _entry()
    header = json.dumps({"t": "dict", "k": ["w"], "v": [entry]})
    header = header.replace(f'"{field}": {json.dumps(entry[field])}', f'"{field}": {text}', 1)
    root = json.loads(header)
    with pytest.raises(FormatError, match=r"corrupt header \(root\['w'\]"):
        _load(_forge(root, bytes(64)))


def test_forged_payload_size_is_refused():
    with pytest.raises(FormatError, match="payload_bytes"):
        data = _forge(1).replace(b'"payload_bytes": 0', b'"payload_bytes": 0.0')
        _load(_forge_raw_header(data))


def _forge_raw_header(data):
    """Recompute the header checksum after a textual edit of the header."""
    import struct
    import zlib

    from tapegrad import serialization

    n = len(serialization.MAGIC)
    _, length, _ = struct.unpack("<IQI", data[n : n + 16])
    length += len(data) - len(_forge(1))
    header = data[n + 16 : n + 16 + length]
    return data[:n] + struct.pack("<IQI", 1, length, zlib.crc32(header)) + data[n + 16 :]


def test_an_oversized_header_is_refused_before_parsing(monkeypatch):
    from tapegrad import serialization

    data = _forge({"t": "list", "v": [{"t": "list", "v": []}] * 1000})
    assert tg.load(io.BytesIO(data))[0] == []
    monkeypatch.setattr(serialization, "MAX_HEADER_BYTES", 1000)
    with pytest.raises(FormatError, match="longer than MAX_HEADER_BYTES=1000"):
        tg.load(io.BytesIO(data))


def test_zero_sized_entries_may_share_an_offset():
    root = {"t": "list", "v": [_entry(0, 0, (0, 3)), _entry(0, 0, (2, 0)), _entry(0, 8, (2,))]}
    a, b, c = _load(_forge(root, np.array([1, 2], np.float32).tobytes()))
    assert a.shape == (0, 3) and b.shape == (2, 0)
    np.testing.assert_array_equal(c.numpy(), [1.0, 2.0])


def test_load_peaks_at_about_the_file_size(tmp_path):
    state = {f"w{i}": tg.randn(256, 1024) for i in range(8)}  # 8 MiB
    tg.save(state, tmp_path / "m.tg")
    size = os.path.getsize(tmp_path / "m.tg")
    tracemalloc.start()
    try:
        loaded = tg.load(tmp_path / "m.tg")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.1 * size + (2 << 20), (peak, size)
    _assert_same(loaded, state)


# -- file objects and PyTorch's keywords -----------------------------------------------------


def test_bytesio_round_trip_from_the_current_position():
    obj = {"w": tg.ones(3), "n": [1, None, "x"], "t": (1.5, tg.arange(2))}
    buffer = io.BytesIO()
    buffer.write(b"prefix")
    tg.save(obj, buffer)
    buffer.seek(6)
    _assert_same(tg.load(buffer), obj)


def test_open_binary_files_round_trip(tmp_path):
    obj = {"w": tg.randn(2, 3), "meta": {"epoch": 3, "name": "net", "none": None}}
    with open(tmp_path / "f.tg", "wb") as out:
        tg.save(obj, out)
        assert not out.closed
    with open(tmp_path / "f.tg", "rb") as stream:
        _assert_same(tg.load(stream), obj)


def test_text_mode_files_are_refused(tmp_path):
    with open(tmp_path / "f", "w") as out, pytest.raises(TypeError, match="binary mode"):
        tg.save({"a": 1}, out)
    with open(tmp_path / "f") as stream, pytest.raises(TypeError, match="binary mode"):
        tg.load(stream)


def test_a_non_seekable_stream_loads():
    buffer = io.BytesIO()
    tg.save({"w": tg.arange(4)}, buffer)

    class Pipe(io.RawIOBase):
        def __init__(self, data):
            self._data = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self._data.readinto(b)

    loaded = tg.load(io.BufferedReader(Pipe(buffer.getvalue())))
    np.testing.assert_array_equal(loaded["w"].numpy(), np.arange(4))


def test_a_stream_with_trailing_bytes_is_refused():
    buffer = io.BytesIO()
    tg.save({"w": 1}, buffer)
    buffer.write(b"junk")
    buffer.seek(0)
    with pytest.raises(FormatError, match=r"<BytesIO>: trailing bytes"):
        tg.load(buffer)


@pytest.mark.parametrize(
    "map_location",
    [None, "cpu", "cpu:0", {"cuda:0": "cpu"}, lambda storage, loc: storage],
    ids=["none", "cpu", "cpu0", "dict", "callable"],
)
def test_map_location_to_cpu_is_accepted(map_location):
    buffer = io.BytesIO()
    tg.save({"w": tg.ones(2)}, buffer)
    buffer.seek(0)
    loaded = tg.load(buffer, map_location=map_location, weights_only=True)
    assert loaded["w"].device == "cpu"


def test_map_location_as_torch_device(torch_mod):
    buffer = io.BytesIO()
    tg.save({"w": tg.ones(2)}, buffer)
    buffer.seek(0)
    assert tg.load(buffer, map_location=torch_mod.device("cpu"))["w"].shape == (2,)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"map_location": 3}, TypeError, "map_location=3"),
        ({"map_location": "tpu"}, ValueError, "unknown device"),
        ({"map_location": lambda s, loc: 1}, TypeError, "returned int"),
        ({"weights_only": "yes"}, TypeError, "weights_only"),
        ({"mmap": 1}, TypeError, "mmap"),
        ({"pickle_module": __import__("pickle")}, TypeError, "pickle_module"),
        ({"encoding": "latin1"}, TypeError, "encoding"),
    ],
)
def test_bad_load_arguments_are_named(kwargs, error, match):
    buffer = io.BytesIO()
    tg.save({"w": tg.ones(2)}, buffer)
    buffer.seek(0)
    with pytest.raises(error, match=match):
        tg.load(buffer, **kwargs)


def test_weights_only_false_still_never_runs_code(tmp_path):
    tg.save({"w": tg.ones(1)}, tmp_path / "f")
    assert tg.load(tmp_path / "f", weights_only=False)["w"].shape == (1,)


def test_save_accepts_and_ignores_pickle_arguments(tmp_path):
    import pickle

    tg.save({"a": 1}, tmp_path / "f", pickle_module=pickle, pickle_protocol=4)
    assert tg.load(tmp_path / "f") == {"a": 1}


def test_serialization_module_as_torch_users_reach_it(tmp_path):
    assert tg.serialization.save is tg.save and tg.serialization.load is tg.load
    tg.serialization.save([1, 2], tmp_path / "f")
    assert tg.serialization.load(tmp_path / "f") == [1, 2]


# -- what cannot be saved ----------------------------------------------------------------------


def test_saving_a_module_points_to_state_dict(tmp_path):
    model = tg.nn.Sequential(tg.nn.Linear(2, 3))
    with pytest.raises(TypeError, match=r"Sequential.*obj\.state_dict\(\).*load_state_dict"):
        tg.save(model, tmp_path / "m")
    opt = tg.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(TypeError, match=r"obj\['opt'\], a SGD.*state_dict\(\)"):
        tg.save({"opt": opt}, tmp_path / "m")
    assert os.listdir(tmp_path) == []


def test_saving_other_objects_raises_type_error():
    with pytest.raises(TypeError, match=r"obj\[0\] of type object"):
        tg.save([object()], io.BytesIO())
    with pytest.raises(TypeError, match="of type set"):
        tg.save({1, 2}, io.BytesIO())


def test_training_checkpoint_round_trips(tmp_path):
    model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.ReLU(), tg.nn.Linear(4, 1))
    opt = tg.optim.AdamW(model.parameters(), lr=0.01)
    sched = tg.optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 4], gamma=0.5)
    for _ in range(3):
        opt.zero_grad()
        model(tg.randn(5, 3)).pow(2).mean().backward()
        opt.step()
        sched.step()
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "epoch": 3,
        "history": [(0, 1.25), (1, 0.5)],
        "note": None,
    }
    with open(tmp_path / "ckpt.pt", "wb") as out:
        tg.save(checkpoint, out)
    with open(tmp_path / "ckpt.pt", "rb") as stream:
        loaded = tg.load(stream, map_location="cpu", weights_only=True)
    assert loaded["epoch"] == 3 and loaded["history"] == [(0, 1.25), (1, 0.5)]
    assert isinstance(loaded["model"], OrderedDict)
    _assert_same(loaded["model"], checkpoint["model"])
    _assert_same(loaded["optimizer"], opt.state_dict())
    model2 = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.ReLU(), tg.nn.Linear(4, 1))
    model2.load_state_dict(loaded["model"])
    opt2 = tg.optim.AdamW(model2.parameters(), lr=0.01)
    opt2.load_state_dict(loaded["optimizer"])
    sched2 = tg.optim.lr_scheduler.MultiStepLR(opt2, milestones=[2, 4], gamma=0.5)
    sched2.load_state_dict(loaded["scheduler"])
    assert sched2.last_epoch == sched.last_epoch
    assert Counter(sched2.milestones) == Counter(sched.milestones)
    x = tg.randn(2, 3)
    np.testing.assert_array_equal(model2(x).detach().numpy(), model(x).detach().numpy())
