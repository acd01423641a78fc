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
"""

from __future__ import annotations

import json
import math
import os
import secrets
import struct
import zlib
from collections import OrderedDict

import numpy as np

from . import _backend
from .tensor import Tensor

__all__ = ["save", "load", "FormatError"]

MAGIC = b"\x89TGRAD\r\n"  # high byte and CRLF catch 7-bit and newline-translating copies
END = b"TGEN"
VERSION = 1
_PREFIX = struct.Struct("<IQI")  # version, header length, header crc32
_TRAILER = struct.Struct("<I4s")  # payload crc32, END
_ALIGN = 64
_DTYPES = {
    name: np.dtype(name)
    for name in (
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64", "complex64", "complex128",
    )
}  # fmt: skip


class FormatError(ValueError):
    """A file that ``tg.load`` cannot read: not a tapegrad file, truncated, or corrupt."""

    def __init__(self, path, problem: str):
        self.path = os.fspath(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


# -- save -------------------------------------------------------------------------------------


def save(obj, f) -> None:
    """Write ``obj`` to the file ``f`` (a str or os.PathLike), atomically.

    ``obj`` may nest dicts (any str/int/float/bool/None/tuple keys), lists and tuples
    of Tensors, NumPy arrays and scalars, and Python ints, floats, strings, bools and
    None: a model's or an optimizer's ``state_dict()``, for instance. Tensors are saved
    by value (their ``requires_grad`` and graph are not kept); one array object met
    twice is stored once and loads as one object.

    The file is written next to ``f`` under a temporary name, flushed to disk and then
    renamed over ``f``, so ``f`` holds either its old content or the complete new one,
    never a partial file. See Note [File format].

    Raises:
        TypeError: for a value of another type (the message gives its place in ``obj``).

    >>> import os, tempfile, tapegrad as tg
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "w.tg")
    ...     tg.save({"w": tg.tensor([1.0, 2.0]), "step": 3}, path)
    ...     tg.load(path)
    {'w': tensor([1., 2.]), 'step': 3}
    """
    path = os.fspath(f)
    if not isinstance(path, str):
        path = os.fsdecode(path)
    arrays: list = []
    root = _encode(obj, arrays, {}, "obj")
    offsets, payload_bytes = [], 0
    for entry, array in arrays:
        payload_bytes = _aligned(payload_bytes)
        entry["offset"] = payload_bytes
        offsets.append(payload_bytes)
        payload_bytes += array.nbytes
    header = json.dumps({"root": root, "payload_bytes": payload_bytes}).encode()
    prefix = MAGIC + _PREFIX.pack(VERSION, len(header), zlib.crc32(header))
    start = len(prefix) + len(header)

    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    # os.open with mode 0o666 lets the umask decide the permissions, as for open().
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as out:
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
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_directory(directory)


def _aligned(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


def _fsync_directory(directory: str) -> None:
    """Make the rename itself durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


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
    raise TypeError(
        f"tg.save: cannot save {where} of type {type(value).__name__}; supported are "
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
    if array.dtype.name not in _DTYPES:
        raise TypeError(f"tg.save: {where} has unsupported dtype {array.dtype}")
    # NOTE: not np.ascontiguousarray, which turns a 0-d array into a 1-d one.
    array = np.asarray(array, dtype=array.dtype.newbyteorder("<"), order="C")
    entry = {"t": kind, "dtype": array.dtype.name, "shape": list(array.shape),
             "nbytes": array.nbytes}  # fmt: skip
    memo[id(value)] = len(arrays)
    arrays.append((entry, array))
    return entry


# -- load -------------------------------------------------------------------------------------


def load(f, map_location=None, weights_only: bool = True):
    """Read an object written by :func:`save`.

    Tensors come back as new leaves (``requires_grad=False``) owning their memory; dicts,
    lists, tuples and plain values as they were saved (dict subclasses as ``dict``, an
    OrderedDict as OrderedDict).

    Args:
        f: path (str or os.PathLike).
        map_location: accepted for PyTorch compatibility; only ``None`` and ``"cpu"``.
        weights_only: accepted for PyTorch compatibility; loading never runs code anyway.

    Raises:
        FormatError: (a ValueError) naming the path and what is wrong, when the file is not
            a tapegrad file (a pickle, a zip archive as written by ``torch.save``, text,
            an empty file), has an unsupported version, or is truncated or corrupt.
        FileNotFoundError: when there is no such file.
    """
    if map_location not in (None, "cpu"):
        raise ValueError(f"tg.load: map_location={map_location!r} is not supported (use 'cpu')")
    path = os.fspath(f)
    with open(path, "rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        head = stream.read(len(MAGIC) + _PREFIX.size)
        _check_magic(path, head)
        if len(head) < len(MAGIC) + _PREFIX.size:
            raise FormatError(path, "truncated file (the header is incomplete)")
        version, header_len, header_crc = _PREFIX.unpack(head[len(MAGIC) :])
        if version != VERSION:
            raise FormatError(
                path, f"unsupported format version {version} (this tapegrad reads {VERSION})"
            )
        start = len(head) + header_len
        if start > size:
            raise FormatError(path, "truncated file (the header is incomplete)")
        header = stream.read(header_len)
        if zlib.crc32(header) != header_crc:
            raise FormatError(path, "corrupt file (header checksum mismatch)")
        try:
            meta = json.loads(header)
            payload_bytes = int(meta["payload_bytes"])
            root = meta["root"]
            if payload_bytes < 0:
                raise ValueError(f"negative payload size {payload_bytes}")
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise FormatError(path, f"corrupt header ({exc})") from None
        payload_start = _aligned(start)
        expected = payload_start + payload_bytes + _TRAILER.size
        if size != expected:
            problem = "truncated file" if size < expected else "trailing bytes after the end"
            raise FormatError(path, f"{problem} ({size} bytes, expected {expected})")
        if stream.read(payload_start - start).strip(b"\0"):
            raise FormatError(path, "corrupt file (non-zero padding after the header)")
        payload = bytearray(payload_bytes)
        if stream.readinto(payload) != payload_bytes:
            raise FormatError(path, "truncated file (payload incomplete)")
        crc, end = _TRAILER.unpack(stream.read(_TRAILER.size))
    if end != END:
        raise FormatError(path, "corrupt file (end marker missing)")
    if zlib.crc32(payload) != crc:
        raise FormatError(path, "corrupt file (payload checksum mismatch)")
    try:
        return _decode(root, payload, [])
    except (ValueError, KeyError, TypeError, IndexError, RecursionError) as exc:
        raise FormatError(path, f"corrupt header ({type(exc).__name__}: {exc})") from None


def _check_magic(path: str, head: bytes) -> None:
    if head.startswith(MAGIC):
        return
    if not head:
        raise FormatError(path, "empty file, not a tapegrad file")
    if head[:1] == b"\x80":
        raise FormatError(
            path,
            "looks like a pickle file; tapegrad never unpickles (it runs code), "
            "save the object with tg.save",
        )
    if head.startswith(b"PK\x03\x04"):
        raise FormatError(
            path,
            "looks like a zip archive (torch.save's format); tapegrad files are written by tg.save",
        )
    if MAGIC.startswith(head):
        raise FormatError(path, "truncated file (the header is incomplete)")
    raise FormatError(path, f"not a tapegrad file (starts with {head[:8]!r})")


def _decode(value, payload: bytearray, loaded: list):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    tag = value["t"]
    if tag == "list":
        return [_decode(v, payload, loaded) for v in value["v"]]
    if tag == "tuple":
        return tuple(_decode(v, payload, loaded) for v in value["v"])
    if tag in ("dict", "odict"):
        keys = [_decode(k, payload, loaded) for k in value["k"]]
        values = [_decode(v, payload, loaded) for v in value["v"]]
        if len(keys) != len(values):
            raise ValueError("dict with different numbers of keys and values")
        items = zip(keys, values, strict=True)
        return OrderedDict(items) if tag == "odict" else dict(items)
    if tag == "ref":
        index = value["id"]
        if not isinstance(index, int) or not 0 <= index < len(loaded):
            raise ValueError(f"reference to array {index!r}, which comes later or not at all")
        return loaded[index]
    if tag in ("tensor", "ndarray", "npscalar"):
        result = _decode_array(value, payload)
        loaded.append(result)
        return result
    raise ValueError(f"unknown value tag {tag!r}")


def _decode_array(entry: dict, payload: bytearray):
    dtype = _DTYPES[entry["dtype"]].newbyteorder("<")
    shape = tuple(int(n) for n in entry["shape"])
    offset, nbytes = int(entry["offset"]), int(entry["nbytes"])
    if any(n < 0 for n in shape) or nbytes != math.prod(shape) * dtype.itemsize:
        raise ValueError(f"array of shape {shape} and dtype {dtype} cannot have {nbytes} bytes")
    if offset < 0 or offset + nbytes > len(payload):
        raise ValueError(f"array bytes [{offset}, {offset + nbytes}) outside the payload")
    native = dtype.newbyteorder("=")
    if nbytes == 0:
        array = np.empty(shape, native)
    else:
        array = np.frombuffer(payload, dtype, count=nbytes // dtype.itemsize, offset=offset)
        # A copy in native byte order: each array owns its memory, so keeping one loaded
        # tensor does not keep the whole file's bytes alive.
        array = array.reshape(shape).astype(native, copy=True)
    if entry["t"] == "npscalar":
        return array[()]
    if entry["t"] == "ndarray":
        return array
    return Tensor._wrap(array)
