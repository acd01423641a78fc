"""``tapegrad.testing``, as ``torch.testing``: ``assert_close`` with torch's default tolerances."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from . import _dtypes
from .creation import tensor
from .tensor import Tensor

__all__ = ["assert_close", "make_tensor", "assert_allclose"]

# dtype -> (rtol, atol), torch.testing's defaults
_TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
}


def _tolerances(dtype, rtol, atol):
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError(
            f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}."
        )
    if rtol is not None:
        return rtol, atol
    return _TOLERANCES.get(getattr(dtype, "name", None), (0.0, 0.0))


def _fail(msg, path):
    if path:
        msg += "\n\nThe failure occurred for item " + "".join(f"[{p!r}]" for p in path)
    raise AssertionError(msg)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):  # fmt: skip
    """Raise AssertionError unless ``actual`` and ``expected`` are close:
    ``|actual - expected| <= atol + rtol * |expected|`` elementwise, with torch's default
    tolerances for the dtype (float32: rtol 1.3e-6, atol 1e-5; float64: 1e-7, 1e-7;
    integers: exact). Tensors, NumPy arrays, Python numbers, and sequences and mappings
    of them (compared item by item) are accepted.

    Raises:
        AssertionError: naming the mismatch (shape, dtype, or the number of mismatched
            elements and the greatest absolute and relative differences).
        TypeError: when the two inputs are of kinds that cannot be compared.

    >>> import tapegrad as tg
    >>> tg.testing.assert_close(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 2.0 + 1e-7]))
    """
    _compare(actual, expected, rtol, atol, equal_nan, check_dtype, msg, ())


# torch.testing.assert_allclose's own (looser) defaults
_ALLCLOSE_TOLERANCES = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated (FutureWarning), as torch's: ``assert_close`` without the dtype check and
    with looser defaults (float32: rtol 1e-4, atol 1e-5; float64: 1e-5, 1e-8; the larger
    of the two inputs' pairs), NaNs equal by default.

    Raises:
        AssertionError: as :func:`assert_close`.
    """
    warnings.warn(
        "`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a "
        "future release. Please use `torch.testing.assert_close()` instead. You can find "
        "detailed upgrade instructions in https://github.com/pytorch/pytorch/issues/61844.",
        FutureWarning,
        stacklevel=2,
    )
    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        pairs = [_ALLCLOSE_TOLERANCES.get(str(t.dtype).rsplit(".", 1)[-1], (0.0, 0.0))
                 for t in (actual, expected)]  # fmt: skip
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_dtype=False, msg=msg or None)  # fmt: skip


def _compare(actual, expected, rtol, atol, equal_nan, check_dtype, msg, path):
    if isinstance(actual, (Tensor, np.ndarray)) and isinstance(expected, (Tensor, np.ndarray)):
        if type(actual) is not type(expected) and Tensor in (type(actual), type(expected)):
            raise TypeError(
                f"No comparison pair was able to handle inputs of type {type(actual)} and "
                f"{type(expected)}."
            )
        _compare_arrays(np.asarray(_raw(actual)), np.asarray(_raw(expected)), rtol, atol,
                        equal_nan, check_dtype, msg, path, "Tensor-likes")  # fmt: skip
        return
    if isinstance(actual, (bool, int, float, complex, np.number)) and isinstance(
        expected, (bool, int, float, complex, np.number)
    ):
        if check_dtype and type(actual) is not type(expected):
            _fail(f"The values for attribute 'type' do not match: {type(actual)} != "
                  f"{type(expected)}.", path)  # fmt: skip
        _compare_scalars(actual, expected, rtol, atol, equal_nan, msg, path)
        return
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            _fail(f"The keys of the mappings do not match: {sorted(map(str, actual))} != "
                  f"{sorted(map(str, expected))}", path)  # fmt: skip
        for key in expected:
            _compare(actual[key], expected[key], rtol, atol, equal_nan, check_dtype, msg,
                     path + (key,))  # fmt: skip
        return
    if (
        isinstance(actual, Sequence)
        and isinstance(expected, Sequence)
        and not isinstance(actual, str)
        and not isinstance(expected, str)
    ):
        if len(actual) != len(expected):
            _fail(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", path)
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _compare(a, e, rtol, atol, equal_nan, check_dtype, msg, path + (i,))
        return
    raise TypeError(
        f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}."
    )


def _raw(x):
    return x._data if isinstance(x, Tensor) else x


def _compare_scalars(actual, expected, rtol, atol, equal_nan, msg, path):
    rtol, atol = _tolerances(_dtypes.float64 if isinstance(expected, float) else None, rtol, atol)
    if actual == expected or (equal_nan and actual != actual and expected != expected):
        return
    diff = abs(actual - expected)
    if diff <= atol + rtol * abs(expected):
        return
    rel = diff / abs(expected) if expected else float("inf")
    text = (
        f"Scalars are not close!\n\nExpected {expected} but got {actual}.\n"
        f"Absolute difference: {diff} (up to {atol} allowed)\n"
        f"Relative difference: {rel} (up to {rtol} allowed)"
    )
    _fail(msg if isinstance(msg, str) else msg(text) if msg else text, path)


def _compare_arrays(a, e, rtol, atol, equal_nan, check_dtype, msg, path, what):
    if a.shape != e.shape:
        _fail(f"The values for attribute 'shape' do not match: {_size(a)} != {_size(e)}.", path)
    if check_dtype and a.dtype != e.dtype:
        _fail(f"The values for attribute 'dtype' do not match: tapegrad.{a.dtype} != "
              f"tapegrad.{e.dtype}.", path)  # fmt: skip
    rtol, atol = _tolerances(e.dtype, rtol, atol)
    common = np.result_type(a.dtype, e.dtype)
    if common.kind not in "fc":
        common = np.float64
    a64, e64 = a.astype(common, copy=False), e.astype(common, copy=False)
    if a.dtype.kind in "fc" or e.dtype.kind in "fc":
        a64, e64 = a64.astype(np.float64), e64.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.abs(a64 - e64)
        ok = (a64 == e64) | (diff <= atol + rtol * np.abs(e64))
        if equal_nan:
            ok |= np.isnan(a64) & np.isnan(e64)
        if ok.all():
            return
        rel = diff / np.abs(e64)
    bad = int((~ok).sum())
    exact = rtol == 0 and atol == 0
    diff = np.where(np.isnan(diff), np.inf, diff)
    i_abs = np.unravel_index(int(np.argmax(diff)), a.shape) if a.ndim else ()
    i_rel = (
        np.unravel_index(int(np.argmax(np.nan_to_num(rel, nan=np.inf))), a.shape) if a.ndim else ()
    )
    abs_val, rel_val = diff[i_abs], rel[i_rel]
    if a.dtype.kind in "iub" and e.dtype.kind in "iub":
        abs_val = int(abs_val)
    idx = lambda i: tuple(int(k) for k in i)  # noqa: E731
    text = (
        f"{what} are not {'equal' if exact else 'close'}!\n\n"
        f"Mismatched elements: {bad} / {a.size} ({100 * bad / a.size:.1f}%)\n"
        f"Greatest absolute difference: {abs_val} at index {idx(i_abs)}"
        + ("" if exact else f" (up to {atol} allowed)")
        + f"\nGreatest relative difference: {rel_val} at index {idx(i_rel)}"
        + ("" if exact else f" (up to {rtol} allowed)")
    )
    _fail(msg if isinstance(msg, str) else msg(text) if msg else text, path)


def _size(a):
    return f"tapegrad.Size({list(a.shape)})"


def make_tensor(*shape, dtype, device="cpu", low=None, high=None, requires_grad=False,
                generator=None):  # fmt: skip
    """A tensor of random values in [low, high) (default [-9, 9)), as torch.testing's."""
    from .creation import rand, randint  # noqa: PLC0415

    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    dtype = _dtypes.to_dtype(dtype)
    low = -9 if low is None else low
    high = 9 if high is None else high
    if dtype.kind in "iu":
        return randint(int(low), int(high), shape, dtype=dtype, generator=generator)
    if dtype.kind == "b":
        return randint(0, 2, shape, generator=generator).to(dtype)
    t = rand(*shape, dtype=dtype, generator=generator) * (high - low) + low
    return t.detach().requires_grad_(requires_grad)
