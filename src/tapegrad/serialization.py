"""``tg.save`` / ``tg.load``: state dicts on disk, without pickle.

Note [File format]
A file is, in order (integers little-endian)::

    MAGIC (8 bytes)  version (u32)  header length (u64)  header crc32 (u32)
    header: UTF-8 JSON {"root": <value>, "payload_bytes": <int>}
    zero padding up to a multiple of 64 bytes
    payload: the raw little-endian bytes of every array, each at a 64-byte-aligned offset
    payload crc32 (u32)  END (4 bytes)

A value in the JSON is a JSON null/bool/int/float/string for the same Python
value, or an object tagged by ``"t"``: ``list``, ``tuple``, ``dict`` (keys and
values as two lists, so int keys stay ints), ``odict``, ``tensor``,
``ndarray`` and ``npscalar`` (``dtype``, ``shape``, ``offset``, ``nbytes``), and
``ref`` (the same array object again). Loading parses JSON and copies bytes into
arrays of a fixed list of dtypes: it never unpickles and never runs code from
the file. Checksums and the exact expected size detect truncation and corruption.

Note [Hostile files] (checks in ``tapegrad/_file_checks.py``).
"""

from __future__ import annotations

import io
import json
import os
import struct
import sys
import zlib
from collections import OrderedDict

import numpy as np

from . import _backend
from ._atomic_file import atomic_write
from ._file_checks import DTYPES, Corrupt, check_layout, count, plan
from .tensor import Tensor

__all__ = ["save", "load", "FormatError"]

MAGIC = b"\x89TGRAD\r\n"  # high byte and CRLF catch 7-bit and newline-translating copies
END = b"TGEN"
VERSION = 1
_PREFIX = struct.Struct("<IQI")  # version, header length, header crc32
_TRAILER = struct.Struct("<I4s")  # payload crc32, END
_ALIGN = 64
# The JSON header decodes into Python objects at up to ~20x its size (a dict for "{}"),
# so its length is capped: 16 MiB holds ~100,000 array entries. Raise it for bigger state
# dicts (tapegrad.serialization.MAX_HEADER_BYTES = ...). See Note [Hostile files].
MAX_HEADER_BYTES = 16 << 20
_CHUNK = 1 << 20  # padding between arrays is read (and checksummed) in chunks of this size


class FormatError(ValueError):
    """A file that ``tg.load`` cannot read: not a tapegrad file, truncated, or corrupt."""

    def __init__(self, path, problem: str):
        self.path = path if isinstance(path, str) else os.fsdecode(os.fspath(path))
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


# -- save -------------------------------------------------------------------------------------


def save(obj, f, pickle_module=None, pickle_protocol=None, **_torch_only) -> None:
    """Write ``obj`` to ``f``: a path (str or os.PathLike), atomically, or a binary file.

    ``obj`` may nest dicts (any str/int/float/bool/None/tuple keys), lists and tuples
    of Tensors, NumPy arrays and scalars, and Python ints, floats, strings, bools and
    None: a model's, an optimizer's or an LR scheduler's ``state_dict()``, for instance.
    Tensors are saved by value (their ``requires_grad`` and graph are not kept); one
    array object met twice is stored once and loads as one object.

    A path is written under a temporary name next to it, flushed to disk and renamed
    over it, so it holds either its old content or the complete new one. Symlinks are
    followed, an existing file keeps its permissions, and temporaries left by a killed
    save are removed by the next save to the same path (Note [Atomic saves] in
    ``tapegrad/_atomic_file.py``). A file object (``open(p, "wb")``, ``io.BytesIO``) is
    written from its current position and left open. See Note [File format].

    Args:
        obj: the object to save.
        f: path, or an object with a ``write(bytes)`` method.
        pickle_module, pickle_protocol: accepted for PyTorch compatibility and ignored:
            tapegrad never pickles.

    Raises:
        TypeError: for a value of another type (the message gives its place in ``obj``);
            a whole ``nn.Module`` or optimizer is refused with a pointer to ``state_dict()``.

    >>> import os, tempfile, tapegrad as tg
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "w.tg")
    ...     tg.save({"w": tg.tensor([1.0, 2.0]), "step": 3}, path)
    ...     tg.load(path)
    {'w': tensor([1., 2.]), 'step': 3}
    """
    del pickle_module, pickle_protocol, _torch_only
    arrays: list = []
    root = _encode(obj, arrays, {}, "obj")
    offsets, payload_bytes = [], 0
    for entry, array in arrays:
        payload_bytes = _aligned(payload_bytes)
        entry["offset"] = payload_bytes
        offsets.append(payload_bytes)
        payload_bytes += array.nbytes
    header = json.dumps({"root": root, "payload_bytes": payload_bytes}).encode()

    def write(out):
        _write(out, header, arrays, offsets)

    if hasattr(f, "write"):
        if isinstance(f, io.TextIOBase):
            raise TypeError("tg.save: the file object must be opened in binary mode ('wb')")
        write(f)
        return
    path = os.fspath(f)
    atomic_write(path if isinstance(path, str) else os.fsdecode(path), write)


def _write(out, header: bytes, arrays: list, offsets: list) -> None:
    prefix = MAGIC + _PREFIX.pack(VERSION, len(header), zlib.crc32(header))
    start = len(prefix) + len(header)
    out.write(prefix)
    out.write(header)
    out.write(bytes(_aligned(start) - start))
    crc, written = 0, 0
    for (_, array), offset in zip(arrays, offsets, strict=True):
        pad = bytes(offset - written)
        crc = zlib.crc32(pad, crc)
        out.write(pad)
        raw = array.reshape(-1).view(np.uint8)
        crc = zlib.crc32(raw, crc)
        out.write(raw)
        written = offset + array.nbytes
    out.write(_TRAILER.pack(crc, END))


def _aligned(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


def _encode(value, arrays: list, memo: dict, where: str):
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, (Tensor, np.ndarray, np.generic)):
        return _encode_array(value, arrays, memo, where)
    if isinstance(value, (list, tuple)):
        items = [_encode(v, arrays, memo, f"{where}[{i}]") for i, v in enumerate(value)]
        return {"t": "tuple" if isinstance(value, tuple) else "list", "v": items}
    if isinstance(value, dict):
        keys, values = [], []
        for k, v in value.items():
            if not _is_key(k):
                raise TypeError(
                    f"tg.save: {where} has a key of type {type(k).__name__}; keys must be "
                    "str, int, float, bool, None or tuples of those"
                )
            keys.append(_encode(k, arrays, memo, where))
            values.append(_encode(v, arrays, memo, f"{where}[{k!r}]"))
        tag = "odict" if isinstance(value, OrderedDict) else "dict"
        return {"t": tag, "k": keys, "v": values}
    kind = type(value).__name__
    if callable(getattr(value, "state_dict", None)):
        raise TypeError(
            f"tg.save: cannot save {where}, a {kind} object: tapegrad saves data, never "
            f"Python objects (no pickle). Save its state instead, tg.save({where}.state_dict(), "
            f"f), and restore it into a new {kind} with load_state_dict(tg.load(f))"
        )
    raise TypeError(
        f"tg.save: cannot save {where} of type {kind}; supported are "
        "Tensors, NumPy arrays and scalars, dicts, lists, tuples, str, int, float, bool, None"
    )


def _is_key(k) -> bool:
    if isinstance(k, tuple):
        return all(_is_key(x) for x in k)
    return k is None or isinstance(k, (str, int, float))


def _encode_array(value, arrays: list, memo: dict, where: str):
    if id(value) in memo:
        return {"t": "ref", "id": memo[id(value)]}
    kind = "tensor" if isinstance(value, Tensor) else "ndarray"
    if isinstance(value, np.generic):
        kind = "npscalar"
    array = value._data if isinstance(value, Tensor) else value
    if _backend.device_of(array) != "cpu":
        array = array.get()
    array = np.asarray(array)
    if array.dtype.name not in DTYPES:
        raise TypeError(f"tg.save: {where} has unsupported dtype {array.dtype}")
    # NOTE: not np.ascontiguousarray, which turns a 0-d array into a 1-d one.
    array = np.asarray(array, dtype=array.dtype.newbyteorder("<"), order="C")
    entry = {"t": kind, "dtype": array.dtype.name, "shape": list(array.shape),
             "nbytes": array.nbytes}  # fmt: skip
    memo[id(value)] = len(arrays)
    arrays.append((entry, array))
    return entry


# -- load -------------------------------------------------------------------------------------


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **_kwargs):
    """Read an object written by :func:`save`.

    Tensors come back as new leaves (``requires_grad=False``) owning their memory; dicts,
    lists, tuples and plain values as they were saved (dict subclasses as ``dict``, an
    OrderedDict as OrderedDict). A hostile file cannot make ``load`` run code or allocate
    more than about its own size (Note [Hostile files]).

    Args:
        f: path (str or os.PathLike), or a binary file object (``open(p, "rb")``,
            ``io.BytesIO``) read from its current position.
        map_location: where tensors go, as in PyTorch: None, a device string or
            ``tg.device``-like object (``"cpu"``), a dict mapping saved locations to
            devices, or a callable ``fn(tensor, "cpu")`` returning the tensor to use.
        pickle_module: accepted for PyTorch compatibility; must be None (no pickle).
        weights_only: None, True or False, accepted for PyTorch compatibility: loading
            never runs code, whatever its value.
        mmap: None, True or False, accepted for PyTorch compatibility: arrays are always
            read straight into their final memory.

    Raises:
        FormatError: (a ValueError) naming the file and what is wrong, when it is not a
            tapegrad file (a pickle, a zip archive as written by ``torch.save``, text, an
            empty file), has an unsupported version, or is truncated, corrupt or forged.
        FileNotFoundError: when there is no such file.
        TypeError: for an argument of the wrong type.
    """
    if _kwargs:
        raise TypeError(f"tg.load: unexpected keyword arguments {sorted(_kwargs)}")
    for name, flag in (("weights_only", weights_only), ("mmap", mmap)):
        if flag is not None and not isinstance(flag, bool):
            raise TypeError(f"tg.load: {name} must be None, True or False, got {flag!r}")
    if pickle_module is not None:
        raise TypeError("tg.load: pickle_module must be None; tapegrad files are never unpickled")
    place = _placement(map_location)
    if hasattr(f, "read"):
        if isinstance(f, io.TextIOBase):
            raise TypeError("tg.load: the file object must be opened in binary mode ('rb')")
        name = getattr(f, "name", None)
        name = name if isinstance(name, str) else f"<{type(f).__name__}>"
        stream, size = _sized(f)
        result = _read(stream, size, name)
    else:
        name = os.fspath(f)
        with open(name, "rb") as stream:
            result = _read(stream, os.fstat(stream.fileno()).st_size, name)
    return result if place is None else _place(result, place)


def _sized(f):
    """``(stream, bytes left)`` for a file object; a non-seekable one is read into memory."""
    try:
        if f.seekable():
            here = f.tell()
            size = f.seek(0, io.SEEK_END) - here
            f.seek(here)
            return f, size
    except (AttributeError, OSError):
        pass
    data = f.read()
    return io.BytesIO(data), len(data)


def _read(stream, size: int, name: str):
    head = _read_exactly(stream, len(MAGIC) + _PREFIX.size)
    _check_magic(name, head)
    if len(head) < len(MAGIC) + _PREFIX.size:
        raise FormatError(name, "truncated file (the header is incomplete)")
    version, header_len, header_crc = _PREFIX.unpack(head[len(MAGIC) :])
    if version != VERSION:
        raise FormatError(
            name, f"unsupported format version {version} (this tapegrad reads {VERSION})"
        )
    start = len(head) + header_len
    if start > size:
        raise FormatError(name, "truncated file (the header is incomplete)")
    if header_len > MAX_HEADER_BYTES:
        raise FormatError(
            name,
            f"header of {header_len} bytes is longer than MAX_HEADER_BYTES={MAX_HEADER_BYTES} "
            "(raise tapegrad.serialization.MAX_HEADER_BYTES to load it if you trust the file)",
        )
    header = _read_exactly(stream, header_len)
    if len(header) != header_len:
        raise FormatError(name, "truncated file (the header is incomplete)")
    if zlib.crc32(header) != header_crc:
        raise FormatError(name, "corrupt file (header checksum mismatch)")
    try:
        meta = json.loads(header)
        if not isinstance(meta, dict) or set(meta) != {"root", "payload_bytes"}:
            raise Corrupt("the header is not {'root': ..., 'payload_bytes': ...}")
        payload_bytes = count(meta["payload_bytes"], "payload_bytes")
        root = meta["root"]
        entries: list = []
        plan(root, entries, "root")
        check_layout(entries, payload_bytes)
    except (ValueError, RecursionError) as exc:  # Corrupt, JSONDecodeError, UnicodeError
        raise FormatError(name, f"corrupt header ({exc})") from None
    payload_start = _aligned(start)
    expected = payload_start + payload_bytes + _TRAILER.size
    if size != expected:
        problem = "truncated file" if size < expected else "trailing bytes after the end"
        raise FormatError(name, f"{problem} ({size} bytes, expected {expected})")
    if _read_exactly(stream, payload_start - start).strip(b"\0"):
        raise FormatError(name, "corrupt file (non-zero padding after the header)")
    arrays, crc = _read_payload(stream, entries, payload_bytes, name)
    trailer = _read_exactly(stream, _TRAILER.size)
    if len(trailer) != _TRAILER.size:
        raise FormatError(name, "truncated file (the end marker is missing)")
    crc_stored, end = _TRAILER.unpack(trailer)
    if end != END:
        raise FormatError(name, "corrupt file (end marker missing)")
    if crc != crc_stored:
        raise FormatError(name, "corrupt file (payload checksum mismatch)")
    try:
        return _decode(root, iter(arrays))
    except (ValueError, TypeError, RecursionError) as exc:
        raise FormatError(name, f"corrupt header ({type(exc).__name__}: {exc})") from None


def _read_exactly(stream, n: int) -> bytes:
    """Up to ``n`` bytes (fewer only at the end of the file), read in bounded chunks."""
    parts, left = [], n
    while left > 0:
        part = stream.read(min(left, _CHUNK))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _check_magic(name: str, head: bytes) -> None:
    if head.startswith(MAGIC):
        return
    if not head:
        raise FormatError(name, "empty file, not a tapegrad file")
    if head[:1] == b"\x80":
        raise FormatError(
            name,
            "looks like a pickle file; tapegrad never unpickles (it runs code), "
            "save the object with tg.save",
        )
    if head.startswith(b"PK\x03\x04"):
        raise FormatError(
            name,
            "looks like a zip archive (torch.save's format); tapegrad files are written by tg.save",
        )
    if MAGIC.startswith(head):
        raise FormatError(name, "truncated file (the header is incomplete)")
    raise FormatError(name, f"not a tapegrad file (starts with {head[:8]!r})")


# -- reading the payload into the final arrays ---------------------------------------------


def _read_payload(stream, entries: list, payload_bytes: int, name: str):
    """The arrays of ``entries`` (in header order), each read in place; and the payload crc."""
    arrays = [None] * len(entries)
    order = sorted(range(len(entries)), key=lambda i: entries[i][1]["offset"])
    crc, pos = 0, 0
    for i in order:
        where, entry = entries[i]
        dtype = DTYPES[entry["dtype"]]
        array = np.empty(tuple(entry["shape"]), dtype)
        if not entry["nbytes"]:
            arrays[i] = array
            continue
        crc = _skip(stream, entry["offset"] - pos, crc, name)
        raw = array.reshape(-1).view(np.uint8)
        got = stream.readinto(raw) if hasattr(stream, "readinto") else _readinto(stream, raw)
        if got != raw.size:
            raise FormatError(name, f"truncated file (payload of {where} incomplete)")
        crc = zlib.crc32(raw, crc)
        if sys.byteorder == "big" and dtype.itemsize > 1:
            array.byteswap(inplace=True)  # the file is little-endian
        pos = entry["offset"] + entry["nbytes"]
        arrays[i] = array
    crc = _skip(stream, payload_bytes - pos, crc, name)
    return arrays, crc


def _readinto(stream, raw) -> int:
    data = _read_exactly(stream, raw.size)
    raw[: len(data)] = np.frombuffer(data, np.uint8)
    return len(data)


def _skip(stream, n: int, crc: int, name: str) -> int:
    """Read (and checksum) ``n`` bytes of padding, in bounded chunks."""
    while n > 0:
        part = stream.read(min(n, _CHUNK))
        if not part:
            raise FormatError(name, "truncated file (payload incomplete)")
        crc = zlib.crc32(part, crc)
        n -= len(part)
    return crc


def _decode(value, arrays):
    """Build the object of a checked header; ``arrays`` yields the arrays in header order."""
    loaded: list = []

    def build(value):
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        tag = value["t"]
        if tag == "list":
            return [build(v) for v in value["v"]]
        if tag == "tuple":
            return tuple(build(v) for v in value["v"])
        if tag in ("dict", "odict"):
            keys = [build(k) for k in value["k"]]
            items = zip(keys, [build(v) for v in value["v"]], strict=True)
            return OrderedDict(items) if tag == "odict" else dict(items)
        if tag == "ref":
            return loaded[value["id"]]
        array = next(arrays)
        result = array[()] if tag == "npscalar" else array
        if tag == "tensor":
            result = Tensor._wrap(array)
        loaded.append(result)
        return result

    return build(value)


# -- map_location -----------------------------------------------------------------------------


def _placement(map_location):
    """None (leave tensors where they load) or a function ``tensor -> tensor``."""
    if map_location is None:
        return None
    if isinstance(map_location, dict):
        targets = {_device_name(v, map_location) for v in map_location.values()}
        if targets <= {"cpu"}:
            return None
        raise ValueError(
            f"tg.load: map_location={map_location!r}: tapegrad files hold CPU arrays; "
            "only 'cpu' targets are supported in a dict"
        )
    if callable(map_location) and not isinstance(map_location, str):
        return lambda t: _checked(map_location(t, "cpu"), map_location)
    device = _device_name(map_location, map_location)
    if device == "cpu":
        return None
    return lambda t: t.to(device)


def _device_name(value, map_location) -> str:
    text = value if isinstance(value, str) else getattr(value, "type", None)
    if not isinstance(text, str):
        raise TypeError(
            f"tg.load: map_location={map_location!r} is not a device, a dict or a callable"
        )
    kind = text.split(":")[0]
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"tg.load: map_location={map_location!r} names an unknown device")
    return kind


def _checked(t, map_location):
    if not isinstance(t, Tensor):
        raise TypeError(
            f"tg.load: map_location {map_location!r} returned {type(t).__name__}, not a Tensor"
        )
    return t


def _place(value, place):
    if isinstance(value, Tensor):
        return place(value)
    if isinstance(value, list):
        return [_place(v, place) for v in value]
    if isinstance(value, tuple):
        return tuple(_place(v, place) for v in value)
    if isinstance(value, dict):
        out = type(value)() if isinstance(value, OrderedDict) else {}
        for k, v in value.items():
            out[k] = _place(v, place)
        return out
    return value
