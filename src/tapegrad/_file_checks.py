"""Checks of a tapegrad file's header before ``tg.load`` allocates anything.

Note [Hostile files]
A file is untrusted input. Before anything is allocated, every array entry of the
header is checked: its fields are JSON integers (``2.5``, ``1e400``, ``true`` are
refused, never rounded), its shape has at most 64 non-negative dimensions below
2**63, its byte count equals its shape times its dtype's size, and its bytes lie
inside the payload without overlapping any other entry's. So the arrays together
never need more memory than the payload holds, however many entries a forged
header has, and ``load`` reads the payload straight into the final arrays: it
needs about the file's size in memory, once. Every violation is a ``FormatError``
that names the entry (``root['w']``). The JSON header itself, which decodes into
Python objects at up to about 20 times its size, is capped at
``tapegrad.serialization.MAX_HEADER_BYTES`` (16 MiB, about 100,000 array entries).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["Corrupt", "plan", "check_layout", "count", "DTYPES"]

_MAX_DIM = 2**63 - 1
DTYPES = {
    name: np.dtype(name)
    for name in (
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64", "complex64", "complex128",
    )
}  # fmt: skip


class Corrupt(ValueError):
    """A problem found while checking or decoding the header (becomes a FormatError)."""


def count(n, what: str) -> int:
    """``n`` if it is a JSON integer >= 0 (not a bool, not a float such as 2.5 or 1e400)."""
    if type(n) is not int or n < 0:
        raise Corrupt(f"{what} is {n!r}, not a non-negative integer")
    return n


def plan(value, entries: list, where: str) -> None:
    """Check the structure of ``value``; append ``(where, entry)`` for each array entry."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return
    if not isinstance(value, dict) or not isinstance(value.get("t"), str):
        raise Corrupt(f"{where} is {type(value).__name__} without a type tag")
    tag = value["t"]
    if tag in ("list", "tuple"):
        items = _list_field(value, "v", where)
        for i, v in enumerate(items):
            plan(v, entries, f"{where}[{i}]")
    elif tag in ("dict", "odict"):
        keys, values = _list_field(value, "k", where), _list_field(value, "v", where)
        if len(keys) != len(values):
            raise Corrupt(f"{where}: a dict with {len(keys)} keys and {len(values)} values")
        for k in keys:
            _check_key(k, where)
        for k, v in zip(keys, values, strict=True):
            plan(v, entries, f"{where}[{_key_text(k)}]")
    elif tag == "ref":
        index = value.get("id")
        if type(index) is not int or not 0 <= index < len(entries):
            raise Corrupt(f"{where}: reference to array {index!r}, which comes later or not at all")
    elif tag in ("tensor", "ndarray", "npscalar"):
        _check_entry(value, where)
        entries.append((where, value))
    else:
        raise Corrupt(f"{where}: unknown value tag {tag!r}")


def _list_field(value: dict, field: str, where: str) -> list:
    items = value.get(field)
    if not isinstance(items, list):
        raise Corrupt(f"{where}: field {field!r} is not a list")
    return items


def _check_key(k, where: str) -> None:
    if k is None or isinstance(k, (bool, int, float, str)):
        return
    if isinstance(k, dict) and k.get("t") == "tuple" and isinstance(k.get("v"), list):
        for x in k["v"]:
            _check_key(x, where)
        return
    raise Corrupt(f"{where}: a dict key must be a number, string, None or tuple, got {k!r:.80}")


def _key_text(k) -> str:
    if isinstance(k, dict):
        return "(" + ", ".join(_key_text(x) for x in k["v"]) + ")"
    return repr(k)


def _check_entry(entry: dict, where: str) -> None:
    dtype = DTYPES.get(entry.get("dtype")) if isinstance(entry.get("dtype"), str) else None
    if dtype is None:
        raise Corrupt(f"{where}: unsupported dtype {entry.get('dtype')!r:.40}")
    shape = entry.get("shape")
    if not isinstance(shape, list) or len(shape) > 64:
        raise Corrupt(f"{where}: shape {shape!r:.80} is not a list of at most 64 sizes")
    for n in shape:
        if type(n) is not int or not 0 <= n <= _MAX_DIM:
            raise Corrupt(f"{where}: shape {shape!r:.80} has the size {n!r}")
    nbytes = count(entry.get("nbytes"), f"{where}: nbytes")
    count(entry.get("offset"), f"{where}: offset")
    if nbytes != math.prod(shape) * dtype.itemsize:
        raise Corrupt(
            f"{where}: an array of shape {tuple(shape)} and dtype {dtype} cannot have "
            f"{nbytes} bytes"
        )
    if math.prod(max(n, 1) for n in shape) * dtype.itemsize > _MAX_DIM:
        raise Corrupt(f"{where}: shape {tuple(shape)} is too large for any array")
    if entry["t"] == "npscalar" and shape:
        raise Corrupt(f"{where}: a NumPy scalar with shape {tuple(shape)}")


def check_layout(entries: list, payload_bytes: int) -> None:
    """Every entry's bytes inside the payload, no two entries sharing a byte."""
    spans = []
    for where, entry in entries:
        offset, nbytes = entry["offset"], entry["nbytes"]
        if offset + nbytes > payload_bytes:
            raise Corrupt(
                f"{where}: bytes [{offset}, {offset + nbytes}) outside the payload of "
                f"{payload_bytes} bytes"
            )
        if nbytes:
            spans.append((offset, offset + nbytes, len(spans), where))
    spans.sort()
    for (_, end, _, first), (start, _, _, second) in zip(spans, spans[1:]):
        if start < end:
            raise Corrupt(
                f"{second}: bytes overlap those of {first} (entries may not alias; a shared "
                "array is written once and referenced)"
            )
