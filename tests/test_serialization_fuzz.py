"""Fuzzing tg.load (issue 13): truncated, flipped and extended files give FormatError
or an identical round trip; forged headers (valid checksums) give FormatError or a
well-formed object whose arrays fit in the file and share no memory; loading never
runs code."""

import builtins
import io
import json
import pickle
import struct
import zlib

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import serialization
from tapegrad.serialization import FormatError

from .test_serialization import _assert_same

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))

STATE = {
    "w": tg.tensor(np.arange(12, dtype=np.float32).reshape(3, 4)),
    "b": tg.tensor([1, -2, 3]),
    "opt": {"step": 3, "betas": (0.9, 0.999), "groups": [{"lr": 0.1, "params": [0, 1]}]},
    "mask": np.array([True, False]),
    "name": "net",
}
GOOD = io.BytesIO()
tg.save(STATE, GOOD)
GOOD = GOOD.getvalue()
_PREFIX_END = len(serialization.MAGIC) + 16


def _header_of(data):
    _, length, _ = struct.unpack("<IQI", data[len(serialization.MAGIC) : _PREFIX_END])
    return json.loads(data[_PREFIX_END : _PREFIX_END + length])


def _with_header(meta, data=GOOD):
    """``data`` with its header replaced by ``meta`` (checksum and padding recomputed)."""
    old = _header_of(data)
    old_len = len(json.dumps(old).encode())
    start = _PREFIX_END + old_len
    payload_and_trailer = data[-(-start // 64) * 64 :]
    header = json.dumps(meta).encode()
    head = serialization.MAGIC + struct.pack("<IQI", 1, len(header), zlib.crc32(header))
    pad = bytes(-(-(len(head) + len(header)) // 64) * 64 - len(head) - len(header))
    return head + header + pad + payload_and_trailer


class _CodeRan(AssertionError):
    pass


def _load_guarded(data, monkeypatch):
    """tg.load with pickle, eval, exec and __import__ of new modules made to fail loudly."""

    def forbidden(*args, **kwargs):
        raise _CodeRan("tg.load tried to run code")

    with monkeypatch.context() as m:
        for name in ("load", "loads", "Unpickler"):
            m.setattr(pickle, name, forbidden)
        m.setattr(builtins, "eval", forbidden)
        m.setattr(builtins, "exec", forbidden)
        m.setattr(builtins, "compile", forbidden)
        return tg.load(io.BytesIO(data))


def _check(data, monkeypatch, forged=False):
    """ "rejected", "same", or for a forged header that is well formed, "valid"."""
    try:
        loaded = _load_guarded(data, monkeypatch)
    except FormatError:
        return "rejected"
    if not forged:
        _assert_same(loaded, STATE)
        return "same"
    arrays = list(_arrays(loaded))
    unique = list({id(a): a for a in arrays}.values())
    assert sum(a.nbytes for a in unique) <= len(data)
    for i, a in enumerate(unique):
        assert a.dtype.name in serialization.DTYPES
        assert not any(np.shares_memory(a, b) for b in unique[:i])
    return "valid"


def _arrays(x):
    if isinstance(x, tg.Tensor):
        yield x.numpy()
    elif isinstance(x, (np.ndarray, np.generic)):
        yield np.asarray(x)
    elif isinstance(x, dict):
        for k, v in x.items():
            assert isinstance(k, (str, int, float, tuple, type(None)))
            yield from _arrays(v)
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _arrays(v)
    else:
        assert x is None or isinstance(x, (bool, int, float, str)), type(x)


def test_the_unmodified_file_round_trips(monkeypatch):
    assert _check(GOOD, monkeypatch) == "same"
    assert _check(_with_header(_header_of(GOOD)), monkeypatch) == "same"


@FUZZ
@given(cut=st.integers(0, len(GOOD) - 1))
def test_truncated(cut, monkeypatch):
    assert _check(GOOD[:cut], monkeypatch) == "rejected"


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, len(GOOD) - 1), st.integers(1, 255)), min_size=1))
def test_flipped(flips, monkeypatch):
    data = bytearray(GOOD)
    for i, bits in flips:
        data[i] ^= bits
    assert _check(bytes(data), monkeypatch) == ("same" if bytes(data) == GOOD else "rejected")


@FUZZ
@given(extra=st.binary(min_size=1, max_size=200), at=st.integers(0, len(GOOD)))
def test_extended(extra, at, monkeypatch):
    assert _check(GOOD[:at] + extra + GOOD[at:], monkeypatch) == "rejected"


_NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.sampled_from([0, 1, 2.5, 1e400, -1, True, None, "8", [], 2**63, 2**64]),
)
_ENTRY_FIELDS = ["dtype", "shape", "offset", "nbytes", "t", "id"]


def _entries(meta):
    """Every dict of the header that is an array entry, a ref or a container (to forge)."""
    out, stack = [], [meta["root"]]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            out.append(v)
            stack.extend(v.get("v", []))
            stack.extend(v.get("k", []))
        elif isinstance(v, list):
            stack.extend(v)
    return out


@FUZZ
@given(data=st.data())
def test_forged_headers(data, monkeypatch):
    """Checksums valid, header content hostile: fields replaced, entries duplicated or moved."""
    meta = _header_of(GOOD)
    entries = _entries(meta)
    for _ in range(data.draw(st.integers(1, 4))):
        target = data.draw(st.sampled_from(entries))
        action = data.draw(st.sampled_from(["number", "shape", "alias", "dtype", "drop", "size"]))
        if action == "number":
            field = data.draw(st.sampled_from(_ENTRY_FIELDS))
            target[field] = data.draw(_NUMBERS)
        elif action == "shape":
            target["shape"] = data.draw(st.lists(_NUMBERS, max_size=4))
        elif action == "alias":
            arrays = [e for e in entries if "offset" in e]
            source = data.draw(st.sampled_from(arrays))
            target.update(
                {k: source[k] for k in ("t", "dtype", "shape", "offset", "nbytes") if k in source}
            )
        elif action == "dtype":
            target["dtype"] = data.draw(st.sampled_from(["float64", "int8", "object", "V8", "<f4"]))
        elif action == "drop" and target:
            target.pop(data.draw(st.sampled_from(sorted(target))))
        else:
            meta["payload_bytes"] = data.draw(_NUMBERS)
    forged = _with_header(meta)
    assert _check(forged, monkeypatch, forged=True) in ("rejected", "valid")


def test_fuzzing_reaches_every_outcome(monkeypatch):
    """The forging helpers produce files that load (header unchanged) and files that do not."""
    meta = _header_of(GOOD)
    meta["root"]["v"][0]["shape"] = [12]  # well formed, another shape
    assert _check(_with_header(meta), monkeypatch, forged=True) == "valid"
    meta["root"]["v"][0]["shape"] = [13]
    assert _check(_with_header(meta), monkeypatch, forged=True) == "rejected"
    meta = _header_of(GOOD)
    w, b = meta["root"]["v"][:2]
    b.update(offset=w["offset"])
    with pytest.raises(FormatError, match=r"root\[.[wb].\]: bytes overlap those of root\[.[wb].\]"):
        tg.load(io.BytesIO(_with_header(meta)))
