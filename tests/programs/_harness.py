"""Run a PyTorch program file with real torch or with tapegrad as ``torch``, with the same
random draws in both (see README.md here)."""

from __future__ import annotations

import contextlib
import functools
import io
import random
import re
import runpy
import sys
import warnings

import numpy as np

import tapegrad
from tapegrad import as_torch

# Module-level random functions: the result Tensor is the draw.
_FUNCS = ("randn", "rand", "randint", "randn_like", "rand_like", "randint_like", "randperm",
          "normal", "multinomial", "bernoulli")  # fmt: skip
# Tensor methods that fill in place.
_METHODS = ("uniform_", "normal_", "random_", "bernoulli_", "exponential_")
# tapegrad's nn.init functions draw from the generator directly; torch's end in exactly one
# of the Tensor methods above, so each stands for one draw.
_INITS = ("uniform_", "normal_", "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_",
          "xavier_normal_", "trunc_normal_")  # fmt: skip


class Draws:
    """The arrays drawn by the torch run, in order; replayed by the tapegrad run."""

    def __init__(self):
        self.arrays = []
        self.pos = 0
        self.warnings = {}

    def next(self, shape, what):
        if self.pos >= len(self.arrays):
            raise AssertionError(f"{what}: tapegrad drew more random tensors than torch did")
        arr = self.arrays[self.pos]
        self.pos += 1
        if tuple(arr.shape) != tuple(shape) and shape is not None:
            raise AssertionError(
                f"{what}: draw {self.pos} has shape {list(shape)} under tapegrad but "
                f"{list(arr.shape)} under torch (the programs drew in a different order)"
            )
        return arr


@contextlib.contextmanager
def _patched(obj, names, make):
    saved = {n: getattr(obj, n) for n in names if hasattr(obj, n)}
    try:
        for n, f in saved.items():
            setattr(obj, n, make(n, f))
        yield
    finally:
        for n, f in saved.items():
            setattr(obj, n, f)


# torch's DataLoader draws a base seed for its workers (``torch.empty((), dtype=int64)
# .random_()``) on every iteration; tapegrad's needs none: not a draw of the program's.
_INTERNAL = ("torch.utils.data",)


def _np(t):
    return t.detach().cpu().numpy().copy()


@contextlib.contextmanager
def recording(torch, draws):
    def func(name, f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            out = f(*args, **kwargs)
            draws.arrays.append(_np(out))
            return out

        return wrapper

    def method(name, f):
        @functools.wraps(f)
        def wrapper(self, *args, **kwargs):
            out = f(self, *args, **kwargs)
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if not caller.startswith(_INTERNAL):  # not the program's draw
                draws.arrays.append(_np(self))
            return out

        return wrapper

    with _patched(torch, _FUNCS, func), _patched(torch.Tensor, _METHODS, method):
        yield


def _shape_of(args, kwargs):
    size = kwargs.get("size", args)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    return tuple(int(s) for s in size)


@contextlib.contextmanager
def replaying(tg, draws):
    def func(name, f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            out = f(*args, **kwargs)  # for the shape, dtype and requires_grad
            arr = draws.next(out.shape, f"tapegrad.{name}")
            with tg.no_grad():
                out.copy_(tg.from_numpy(arr.astype(arr.dtype)))
            return out

        return wrapper

    def method(name, f):
        @functools.wraps(f)
        def wrapper(self, *args, **kwargs):
            arr = draws.next(self.shape, f"Tensor.{name}")
            with tg.no_grad():
                self.copy_(tg.from_numpy(arr))
            return self

        return wrapper

    def init(name, f):
        @functools.wraps(f)
        def wrapper(tensor, *args, **kwargs):
            arr = draws.next(tensor.shape, f"nn.init.{name}")
            with tg.no_grad():
                tensor.copy_(tg.from_numpy(arr))
            return tensor

        return wrapper

    with (
        _patched(tg, _FUNCS, func),
        _patched(tg.Tensor, _METHODS, method),
        _patched(tg.nn.init, _INITS, init),
    ):
        yield


@contextlib.contextmanager
def torch_is_tapegrad():
    """``import torch`` gives tapegrad inside the block; real torch's modules are restored."""
    saved = {k: v for k, v in sys.modules.items() if k == "torch" or k.startswith("torch.")}
    for k in saved:
        del sys.modules[k]
    as_torch.install()
    try:
        yield
    finally:
        as_torch.uninstall()
        sys.modules.update(saved)


def run(path, torch=None, draws=None) -> list[str]:
    """The lines ``path`` prints: with real ``torch`` recording into ``draws``, or (torch
    None) under tapegrad replaying ``draws``. The warnings it raised are kept in
    ``draws.warnings[library]``."""
    out = io.StringIO()
    random.seed(0)
    np.random.seed(0)
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
        warnings.simplefilter("always")
        _run(path, torch, draws)
    draws.warnings["torch" if torch is not None else "tapegrad"] = caught
    return out.getvalue().splitlines()


def extra_warnings(draws) -> list[str]:
    """Warnings tapegrad raised of a category torch did not raise (torch's deprecation
    notes are its own business; a tapegrad-only UserWarning, such as a slow vmap
    fallback, is a difference the user sees)."""
    theirs = {w.category for w in draws.warnings.get("torch", [])}
    return [
        f"{w.category.__name__}: {w.message}"
        for w in draws.warnings.get("tapegrad", [])
        if w.category not in theirs
    ]


def _run(path, torch, draws):
    if torch is not None:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # its OpenMP threads only spin against a loaded machine
        try:
            with recording(torch, draws):
                runpy.run_path(str(path), run_name="__main__")
        finally:
            torch.set_num_threads(threads)
        return
    with torch_is_tapegrad(), replaying(tapegrad, draws):
        runpy.run_path(str(path), run_name="__main__")
        if draws.pos != len(draws.arrays):
            raise AssertionError(
                f"tapegrad drew {draws.pos} random tensors, torch {len(draws.arrays)}"
            )


# Node names differ by design (tapegrad's ``AddBackward``, torch's ``AddBackward0``; a basic
# index is one SliceBackward here, SelectBackward0 or SliceBackward0 there): not compared.
_GRAD_FN = re.compile(r"grad_fn=<\w+>")
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|nan|inf")


def compare(ours, theirs, rtol=1e-3, atol=1e-5):
    """Same lines, the same words, numbers within tolerance; returns None or a message."""
    if len(ours) != len(theirs):
        return f"{len(ours)} lines printed under tapegrad, {len(theirs)} under torch"
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        a = _GRAD_FN.sub("grad_fn=<>", a.replace("tapegrad", "torch"))
        b = _GRAD_FN.sub("grad_fn=<>", b)
        if _NUMBER.sub("#", a) != _NUMBER.sub("#", b):
            return f"line {i + 1} differs:\n  tapegrad: {a}\n  torch:    {b}"
        na = [float(x) for x in _NUMBER.findall(a)]
        nb = [float(x) for x in _NUMBER.findall(b)]
        if not np.allclose(na, nb, rtol=rtol, atol=atol, equal_nan=True):
            return f"line {i + 1}: numbers differ:\n  tapegrad: {a}\n  torch:    {b}"
    return None
