"""Run PyTorch's own operator database (``op_db``) through tapegrad.

For each OpInfo with a float64 CPU implementation, the op is resolved by name in
tapegrad (``torch.X`` -> ``tg.X``, ``nn.functional.X`` -> ``tg.nn.functional.X``,
``linalg.X`` / ``special.X`` / ``fft.X`` likewise, otherwise the Tensor method ``X``); its
first float64 sample inputs and reference inputs go through both libraries (torch tensors
in args and kwargs converted to tapegrad tensors, recursively; torch dtypes too); the
outputs' values, shapes and dtypes are compared, and so are the input gradients of a
weighted sum of the float outputs.

Used by tests/test_opdb.py and tools/opdb_coverage.py. Imports torch only when called.
"""

from __future__ import annotations

import functools
import itertools
import sys
import threading
import types
import unittest
import warnings

import numpy as np

import tapegrad as tg

N_SAMPLES = 4  # first sample inputs per OpInfo
N_REFERENCE = 2  # reference inputs per OpInfo, beyond the sample inputs
MAX_NUMEL = 20_000  # samples with a larger input are skipped (time budget)
RTOL, ATOL = 1e-6, 1e-8

# OpInfos that are not public operators: aten internals and jiterator (CUDA) entries.
INTERNAL_PREFIXES = ("_", "jiterator_", "torch.ops.aten", "__")
INTERNAL_KEEP = (
    "__getitem__",
    "__radd__",
    "__rdiv__",
    "__rmatmul__",
    "__rmod__",
    "__rmul__",
    "__rpow__",
    "__rsub__",
)  # operators a user writes: considered

# Properties, not methods.
_ATTRIBUTES = {"T", "H", "mT", "mH"}


@functools.cache
def load_op_db():
    """The OpInfos that support float64 on the CPU (torch imported here, not before)."""
    try:
        import expecttest  # noqa: F401, PLC0415
    except ImportError:
        # common_utils imports it for its TestCase base class only; op_db does not need it.
        shim = types.ModuleType("expecttest")
        shim.TestCase = unittest.TestCase
        shim.ACCEPT = False
        sys.modules["expecttest"] = shim
    import torch  # noqa: PLC0415
    from torch.testing._internal import common_utils  # noqa: PLC0415
    from torch.testing._internal.common_methods_invocations import op_db  # noqa: PLC0415
    from torch.testing._internal.opinfo import core  # noqa: PLC0415

    # Note [op_db's stack walk]: every sample_inputs()/reference_inputs() call runs torch's
    # extract_test_fn, which calls inspect.stack(): the source context of every frame, found
    # by inspect.getmodule scanning all of sys.modules. Under pytest (a deep stack, thousands
    # of modules) that was 3/4 of test_opdb's CPU time. _extract_test_fn is the same search
    # without the source lookups, so the samples (seeded from what it returns) are unchanged.
    common_utils.extract_test_fn = core.extract_test_fn = _extract_test_fn
    return tuple(op for op in op_db if torch.float64 in op.supported_dtypes("cpu"))


def _extract_test_fn():
    """torch's common_utils.extract_test_fn: the unittest test method on the stack, or None;
    it walks frame objects instead of ``inspect.stack()`` (Note [op_db's stack walk])."""
    frame = sys._getframe(1)
    while frame is not None:
        self_val = frame.f_locals.get("self")
        if isinstance(self_val, unittest.TestCase):
            try:
                *_, cls_name, test_name = self_val.id().rsplit(".", 2)
                if cls_name == type(self_val).__name__ and test_name.startswith("test"):
                    return getattr(self_val, test_name).__func__
            except Exception:  # noqa: BLE001 - torch's version swallows everything too
                return None
        frame = frame.f_back
    return None


def full_name(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def is_internal(op) -> bool:
    return op.name.startswith(INTERNAL_PREFIXES) and op.name not in INTERNAL_KEEP


def resolve(op):
    """The tapegrad callable for an OpInfo, or None when tapegrad does not export it."""
    name = op.name
    if full_name(op) in ADAPTERS:  # a variant whose op is its own wrapper
        return ADAPTERS[full_name(op)]
    if name in ADAPTERS:
        return ADAPTERS[name]
    if name in _ATTRIBUTES:
        return (
            (lambda n: lambda x, *a, **k: getattr(x, n))(name) if hasattr(tg.Tensor, name) else None
        )
    aten = _aten_name(op)
    if aten is not None:  # torch.ops.aten.X.overload -> tg.ops.aten.X
        return getattr(getattr(tg.ops, "aten", None), aten, None)
    if "." in name:
        obj = tg
        for part in name.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj
    if name.startswith("__"):
        return getattr(tg.Tensor, name, None)
    import torch  # noqa: PLC0415

    if getattr(torch, name, None) is not None and op.op is getattr(torch, name, None):
        fn = getattr(tg, name, None)
        if callable(fn):
            return fn
    method = getattr(tg.Tensor, name, None)
    if callable(method):
        return method
    fn = getattr(tg, name, None)
    return fn if callable(fn) else None


def _fractional_max_pool(k):
    """fractional_max_poolNd with the ``_random_samples`` torch draws in the OpInfo's op
    (``wrapper_set_seed``: seed 42, then ``torch.rand(N, C, k)`` in the input's dtype)."""

    def call(x, *args, **kwargs):
        if kwargs.get("_random_samples") is None:
            import torch  # noqa: PLC0415

            n = 1 if x.ndim == k + 1 else x.shape[0]
            dtype = getattr(torch, str(x._data.dtype))
            with torch.random.fork_rng():
                torch.manual_seed(42)
                u = torch.rand(n, x.shape[-k - 1], k, dtype=dtype)
            kwargs["_random_samples"] = tg.tensor(u.numpy())
        return getattr(tg.nn.functional, f"fractional_max_pool{k}d")(x, *args, **kwargs)

    return call


def _max_pool2d_backward(x, kernel_size=(), stride=(), padding=(0,), dilation=(1,),
                         ceil_mode=False, **_):  # fmt: skip
    """The OpInfo's op: max_pool2d's input gradient for a gradient of ones (aten's
    max_pool2d_with_indices_backward), here tapegrad's own backward of max_pool2d."""
    with tg.enable_grad():
        leaf = x.detach().requires_grad_()
        out = tg.nn.functional.max_pool2d(leaf, kernel_size, stride, padding, dilation, ceil_mode)
        (grad,) = tg.autograd.grad(out, [leaf], tg.ones_like(out))
    return grad


def _aten_name(op):
    """``X`` when the OpInfo's op is an aten operator overload (``torch.ops.aten.X.Tensor``)."""
    module = type(op.op).__module__ or ""
    if module.startswith("torch._ops") and getattr(op.op, "namespace", None) == "aten":
        return op.op.__name__.split(".")[0]
    return None


# OpInfos whose ``op`` is a wrapper that reorders arguments: call tapegrad the same way.
ADAPTERS = {
    "nn.functional.fractional_max_pool2d": _fractional_max_pool(2),
    "nn.functional.fractional_max_pool3d": _fractional_max_pool(3),
    "max_pool2d_with_indices_backward": _max_pool2d_backward,
    "polygamma": lambda x, n, **kw: tg.polygamma(n, x, **kw),
    "special.polygamma": lambda x, n, **kw: tg.special.polygamma(n, x, **kw),
    "where": lambda self, condition, other, **kw: tg.where(condition, self, other, **kw),
    "einsum": lambda tensors, equation: tg.einsum(equation, tensors),
    "nn.functional.embedding": lambda w, idx, **kw: tg.nn.functional.embedding(idx, w, **kw),
    "zero_": lambda x: x.clone().zero_(),
    "nn.functional.embedding_bag": lambda w, idx, **kw: tg.nn.functional.embedding_bag(
        idx, w, **kw
    ),
    # variants (full names), as their OpInfo's op lambda
    "linalg.pinv.singular": lambda a, b: tg.linalg.pinv(a @ b.mT),
    "linalg.lstsq.grad_oriented": lambda a, b, driver: tg.linalg.lstsq(a, b, driver=driver)[:2],
    "svd_lowrank": lambda a, b, **kw: tg.svd_lowrank(a @ b.mT, **kw),
    "pca_lowrank": lambda a, b, **kw: tg.pca_lowrank(a @ b.mT, **kw),
    "normal.in_place": lambda x, *a, **kw: x.normal_(*a, **kw),
    "normal.number_mean": lambda std, mean, *a, **kw: tg.normal(mean, std, *a, **kw),
    # in-place samplers and resizes, called as their OpInfo's op lambda calls them
    "cauchy": lambda x, *a, **kw: x.cauchy_(*a, **kw),
    "exponential": lambda x, *a, **kw: x.exponential_(*a, **kw),
    "geometric": lambda x, *a, **kw: x.geometric_(*a, **kw),
    "log_normal": lambda x, *a, **kw: x.log_normal_(*a, **kw),
    "uniform": lambda x, *a, **kw: x.uniform_(*a, **kw),
    "resize_": lambda x, shape: x.clone().resize_(shape),
    "resize_as_": lambda x, other: tg.resize_as_(x.clone(), other),
}

# Random or uninitialized results: only shapes and dtypes are compared.
NONDETERMINISTIC = {
    "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided",
    "randn", "randn_like", "rand_like", "randint", "randint_like", "bernoulli", "multinomial",
    "normal", "uniform", "cauchy", "exponential", "geometric", "log_normal",
    "nn.functional.dropout", "nn.functional.dropout2d", "nn.functional.dropout3d",
    "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout", "nn.functional.rrelu",
}  # fmt: skip

# PyTorch's float64 kernels of these are less accurate than SciPy's (Cephes single-precision
# style approximations): torch's bessel_j0(-5.4215...) is off by 1.9e-7 from the exact value,
# which SciPy gives. Compared with this looser absolute tolerance.
TOLERANCES = {
    "special.bessel_j0": (1e-5, 1e-5),
    "special.bessel_j1": (1e-5, 1e-5),
    "special.bessel_y0": (1e-5, 1e-5),
    "special.bessel_y1": (1e-5, 1e-5),
    "special.airy_ai": (1e-5, 1e-5),
}


# Eigen- and singular vectors are defined up to the sign of each one: torch's LAPACK (MKL)
# and SciPy's / NumPy's (OpenBLAS) pick different signs, and no LAPACK driver of SciPy gives
# MKL's (tried: linalg.eigh with evd/ev/evr/evx). For these outputs, given as (index into
# the flat outputs, -1 where the vectors are columns or -2 where they are rows), each vector
# of ours is multiplied by the sign that aligns it with torch's before comparing. The first
# output's signs are applied to the others (U and V flip together); only vectors past the
# first output's (the arbitrary complement of a full_matrices SVD) get their own. Nothing else
# is relaxed: a vector that differs by more than a sign still fails.
SIGN_FREE_VECTORS = {
    "linalg.eigh": ((1, -1),),
    "linalg.eig": ((1, -1),),  # complex eigenvectors: a unit phase rather than a sign
    "linalg.svd": ((0, -1), (2, -2)),
    "svd": ((0, -1), (2, -1)),
    "svd_lowrank": ((0, -1), (2, -1)),
    "pca_lowrank": ((0, -1), (2, -1)),
}


def _align_signs(ours_flat, ref_flat, spec):
    """ours_flat with the vectors of the outputs in ``spec`` flipped to torch's signs."""
    out = list(ours_flat)
    coupled = None
    for i, axis in spec:
        if not isinstance(out[i], tg.Tensor) or tuple(out[i].shape) != tuple(ref_flat[i].shape):
            return ours_flat  # the comparison reports it
        mine, want = out[i]._data, ref_flat[i].detach().numpy()
        if axis == -2:  # vectors as rows: work on columns
            mine, want = np.swapaxes(mine, -1, -2), np.swapaxes(want, -1, -2)
        if mine.dtype.kind == "c":  # the unit phase that aligns each vector with torch's
            dots = np.sum(np.conj(mine) * want, axis=-2, keepdims=True)
            mags = np.abs(dots)
            signs = np.where(mags == 0, 1.0, dots / np.where(mags == 0, 1.0, mags))
        else:
            signs = np.where(np.sum(mine * want, axis=-2, keepdims=True) < 0, -1.0, 1.0)
        if coupled is None:
            coupled = signs
        else:
            k = min(coupled.shape[-1], signs.shape[-1])
            signs[..., :k] = coupled[..., :k]
        fixed = mine * signs.astype(mine.dtype)
        out[i] = tg.tensor(np.swapaxes(fixed, -1, -2) if axis == -2 else fixed)
    return out


def _np_dtype(torch_dtype):
    return np.dtype(str(torch_dtype).rsplit(".", 1)[-1])


def convert(value, leaves):
    """torch values -> tapegrad values, recursively; ``leaves`` maps id(torch tensor) to
    the tapegrad tensor made for it (the gradient comparison pairs them)."""
    import torch  # noqa: PLC0415

    if isinstance(value, torch.Tensor):
        if id(value) in leaves:
            return leaves[id(value)][1]
        array = _numpy(value).copy()
        ours = tg.tensor(array, requires_grad=bool(value.requires_grad))
        if value.dtype.is_floating_point and not value.is_conj() and not value.is_neg():
            ours = _with_layout(value, ours)
        leaves[id(value)] = (value, ours)
        return ours
    if isinstance(value, torch.dtype):
        return _np_dtype(value)
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, torch.device):
        return str(value)
    if isinstance(value, torch.nn.PairwiseDistance):  # triplet's distance_function=
        return lambda x1, x2: tg.nn.functional.pairwise_distance(
            x1, x2, p=value.norm, eps=value.eps, keepdim=value.keepdim
        )
    fname = getattr(value, "__name__", None)
    if callable(value) and fname and getattr(torch.nn.functional, fname, None) is value:
        ours = getattr(tg.nn.functional, fname, None)  # e.g. a distance_function=
        if ours is not None:
            return ours
    if isinstance(value, tuple):
        return tuple(convert(v, leaves) for v in value)
    if isinstance(value, list):
        return [convert(v, leaves) for v in value]
    if isinstance(value, dict):
        return {k: convert(v, leaves) for k, v in value.items()}
    return value


def _numpy(ref):
    """A torch tensor's values as a NumPy array (bfloat16 as ml_dtypes.bfloat16)."""
    import torch  # noqa: PLC0415

    ref = ref.detach().resolve_conj().resolve_neg()
    if ref.dtype == torch.bfloat16:
        import ml_dtypes  # noqa: PLC0415

        return ref.float().numpy().astype(ml_dtypes.bfloat16)
    return ref.numpy()


def _with_layout(value, ours):
    """``ours`` laid out as the torch tensor ``value`` is: a view, with its strides and
    storage offset, of a copy of its whole storage (as_strided reads the storage)."""
    import torch  # noqa: PLC0415

    n = value.untyped_storage().nbytes() // value.element_size()
    if value.is_contiguous() and value.storage_offset() == 0 and n == value.numel():
        return ours
    storage = torch.as_strided(value.detach(), (n,), (1,), 0).numpy().copy()
    size = storage.itemsize
    array = np.lib.stride_tricks.as_strided(
        storage[value.storage_offset() :],
        tuple(value.shape),
        tuple(s * size for s in value.stride()),
    )
    return tg.from_numpy(array).requires_grad_(bool(value.requires_grad))


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    return [value]


class Mismatch(AssertionError):
    """tapegrad's result differs from PyTorch's."""


def _compare(ours, ref, what, tol=(RTOL, ATOL), values=True):
    import torch  # noqa: PLC0415

    rtol, atol = tol
    if isinstance(ref, torch.Tensor):
        if not isinstance(ours, tg.Tensor):
            raise Mismatch(f"{what}: expected a Tensor, got {type(ours).__name__}")
        if ref._is_zerotensor():
            ref = torch.zeros(ref.shape, dtype=ref.dtype)
        want = _numpy(ref)
        if tuple(ours.shape) != want.shape:
            raise Mismatch(f"{what}: shape {tuple(ours.shape)} != torch's {want.shape}")
        if ours._data.dtype != want.dtype:
            raise Mismatch(f"{what}: dtype {ours._data.dtype} != torch's {want.dtype}")
        got = ours._data
        if want.dtype.kind == "V":  # bfloat16: compared in float64
            got, want = got.astype(np.float64), want.astype(np.float64)
        if values and not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
            err = np.max(np.abs(np.asarray(got, np.float64) - want)) if want.size else 0
            raise Mismatch(f"{what}: values differ (max abs err {err:.3g})")
    elif isinstance(ref, (bool, int, float, complex)) and values:
        value = ours.item() if isinstance(ours, tg.Tensor) else ours
        if not np.isclose(value, ref, rtol=rtol, atol=atol, equal_nan=True):
            raise Mismatch(f"{what}: {value!r} != torch's {ref!r}")


def _compare_structure(ours, ref, what):
    """The result's kind as torch's: a Tensor where torch returns one, a Python number of
    torch's exact type (``int``, not a 0-d Tensor or a NumPy integer), a list or tuple where
    torch's is one, with the fields of torch's named tuple, and None where torch gives None."""
    import torch  # noqa: PLC0415

    if isinstance(ref, torch.Tensor):
        return  # _compare checks the Tensor
    if ref is None or isinstance(ref, (bool, int, float, complex, str)):
        if type(ours) is not type(ref):
            raise Mismatch(f"{what}: {type(ours).__name__} {ours!r}, torch's {type(ref).__name__}")
        return
    if isinstance(ref, (tuple, list)):
        kind = list if isinstance(ref, list) else tuple
        if not isinstance(ours, kind) or isinstance(ours, tg.Tensor):
            raise Mismatch(f"{what}: {type(ours).__name__}, torch's {kind.__name__}")
        fields = getattr(type(ref), "__match_args__", None)  # torch.return_types.*
        if fields and tuple(getattr(ours, "_fields", ())) != fields:
            raise Mismatch(f"{what}: fields {getattr(ours, '_fields', None)}, torch's {fields}")
        if len(ours) != len(ref):
            raise Mismatch(f"{what}: {len(ours)} entries, torch's {len(ref)}")
        for i, (o, r) in enumerate(zip(ours, ref)):
            _compare_structure(o, r, f"{what}[{i}]")


def _draws_dropout(name, sample):
    """Whether a sample of an attention op draws a dropout mask (dropout_p > 0, training):
    its values come from the random stream, which tapegrad does not share with torch, so only
    shapes and dtypes are compared (the dropout-free samples check the values)."""
    if name == "nn.functional.scaled_dot_product_attention":
        return sample.kwargs.get("dropout_p", 0.0) > 0
    if name == "nn.functional.multi_head_attention_forward":
        # (query, key, value, embed_dim, num_heads, in_proj_w, in_proj_b, bias_k, bias_v,
        #  add_zero_attn, dropout_p, ...): dropout_p is args[9] after the query
        p = sample.args[9] if len(sample.args) > 9 else sample.kwargs.get("dropout_p", 0.0)
        return p > 0 and sample.kwargs.get("training", True)
    return False


def run_sample(op, fn, sample, seed=0):
    """Compare one sample's outputs and input gradients; raise on a difference."""
    import torch  # noqa: PLC0415

    args = (sample.input, *sample.args)
    ref = op(sample.input, *sample.args, **sample.kwargs)
    leaves = {}
    ours_args = convert(args, leaves)
    ours_kwargs = convert(dict(sample.kwargs), leaves)
    ours = fn(*ours_args, **ours_kwargs)
    _compare_structure(ours, ref, "output")
    ref_flat, ours_flat = _flat(ref), _flat(ours)
    if len(ref_flat) != len(ours_flat):
        raise Mismatch(f"{len(ours_flat)} outputs, torch gives {len(ref_flat)}")
    name = full_name(op)
    tol = TOLERANCES.get(name, (RTOL, ATOL))
    deterministic = op.name not in NONDETERMINISTIC and name not in NONDETERMINISTIC
    deterministic = deterministic and not _draws_dropout(name, sample)
    if name in SIGN_FREE_VECTORS:
        ours_flat = _align_signs(ours_flat, ref_flat, SIGN_FREE_VECTORS[name])
    for i, (o, r) in enumerate(zip(ours_flat, ref_flat)):
        _compare(o, r, f"output {i}", tol, values=deterministic)
    if not deterministic:
        return
    # gradients of a weighted sum of the float outputs
    process = sample.output_process_fn_grad
    ref_g, ours_g = _flat(process(ref)), _flat(process(ours))
    rng = np.random.default_rng(seed)
    loss_ref, loss_ours = 0, 0
    for o, r in zip(ours_g, ref_g):
        if isinstance(r, torch.Tensor) and r.requires_grad and r.dtype.is_floating_point:
            if not isinstance(o, tg.Tensor):
                raise Mismatch("a differentiable output is not a Tensor")
            w = rng.uniform(-1, 1, size=tuple(r.shape))
            loss_ref = loss_ref + (r * torch.tensor(w, dtype=r.dtype)).sum()
            loss_ours = loss_ours + (o * tg.tensor(w, dtype=o._data.dtype)).sum()
        elif isinstance(r, torch.Tensor) and r.requires_grad and r.is_complex():
            if not isinstance(o, tg.Tensor):
                raise Mismatch("a differentiable output is not a Tensor")
            # a fixed random complex cotangent w: L = Re Σ conj(w) out, whose gradient with
            # respect to the output is w (PyTorch's convention)
            w = rng.uniform(-1, 1, size=tuple(r.shape)) + 1j * rng.uniform(-1, 1, size=r.shape)
            loss_ref = loss_ref + (r * torch.tensor(np.conj(w), dtype=r.dtype)).real.sum()
            loss_ours = loss_ours + (o * tg.tensor(np.conj(w), dtype=o._data.dtype)).real.sum()
    pairs = [(t, o) for t, o in leaves.values() if t.requires_grad]
    if isinstance(loss_ref, int) or not pairs:
        return
    try:
        want = torch.autograd.grad(loss_ref, [t for t, _ in pairs], allow_unused=True)
    except (RuntimeError, NotImplementedError):
        return  # torch has no gradient here: forward only
    if not getattr(loss_ours, "requires_grad", False):
        if any(w is not None and w.abs().sum() > 0 for w in want):
            raise Mismatch("the output does not require grad; torch's does")
        return
    got = tg.autograd.grad(loss_ours, [o for _, o in pairs], allow_unused=True)
    for i, (g, w) in enumerate(zip(got, want)):
        if w is None:  # torch's graph does not reach this input: nothing to compare
            continue
        if w._is_zerotensor():
            w = torch.zeros(w.shape, dtype=w.dtype)
        if g is None:
            if not w._is_zerotensor() and w.abs().sum() > 0:
                raise Mismatch(f"input {i}: no gradient; torch's is non-zero")
            continue
        _compare(g, w, f"gradient of input {i}", tol)


def _small(sample, complex_ok=False):
    """Whether a sample is run: inputs of at most MAX_NUMEL elements, and complex tensors
    only for the OpInfos of COMPLEX_OPINFOS (the rest of tapegrad's autograd is real-only,
    docs/complex.md; the guard raises there, documented, not an op's failure)."""
    import torch  # noqa: PLC0415

    tensors = [
        t
        for t in _flat([sample.input, *sample.args, *sample.kwargs.values()])
        if isinstance(t, torch.Tensor)
    ]
    return all(t.numel() <= MAX_NUMEL for t in tensors) and (
        complex_ok or not any(t.is_complex() for t in tensors)
    )


# OpInfos whose complex samples run too (their float64 samples may hold complex tensors, and
# their complex128 samples are added): the FFTs, the complex-number ops and the ops whose
# complex gradient tapegrad supports (ops/complex_guard.py, docs/complex.md).
COMPLEX_OPINFOS = {
    *(
        f"fft.{n}"
        for n in (
            "fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn irfftn hfft ihfft "
            "hfft2 ihfft2 hfftn ihfftn"
        ).split()
    ),
    *(
        "view_as_real view_as_complex complex polar real imag conj conj_physical resolve_conj "
        "abs angle add sub mul div.no_rounding_mode neg sum mean matmul mm exp reshape view "
        "transpose cat stack linalg.eig linalg.eigvals isfinite isnan isclose allclose stft"
    ).split(),
}


def samples(op):
    """The first N_SAMPLES sample inputs and N_REFERENCE further reference inputs (float64;
    and complex128 for the OpInfos of COMPLEX_OPINFOS that take it)."""
    import torch  # noqa: PLC0415

    complex_ok = full_name(op) in COMPLEX_OPINFOS
    dtypes = [torch.float64]
    if complex_ok and torch.complex128 in op.supported_dtypes("cpu"):
        dtypes.append(torch.complex128)
    out = []
    for dtype in dtypes:
        # ops without autograd get inputs that do not require grad, as in PyTorch's own tests
        kw = {"device": "cpu", "dtype": dtype, "requires_grad": op.supports_autograd}
        first = list(itertools.islice(op.sample_inputs(**kw), N_SAMPLES))
        extra = []
        if op.reference_inputs_func is not None:
            n = sum(1 for _ in op.sample_inputs(**kw))  # reference inputs start with these
            extra = list(itertools.islice(op.reference_inputs(**kw), n, n + N_REFERENCE))
        out += [s for s in first + extra if _small(s, complex_ok)]
    return out


def _on_a_shallow_stack(fn, *args):
    """``fn(*args)`` on a short-lived thread of its own, its result or its exception.

    Note [op_db's seeding stack]: torch's sample generators call set_rng_seed before each
    sample, and torch.manual_seed queues the seed for the CUDA, XPU and MTIA devices not
    yet initialised, each with ``traceback.format_stack()`` of the caller: under pytest
    (a stack of ~80 frames, each formatted with its source line) that was half of
    test_opdb's CPU. A new thread's stack is a few frames deep. Nothing else differs: the
    generators, the RNGs and the seeds are the process's, and the main thread waits.
    """
    box = {}

    def run():
        try:
            box["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 - re-raised on the caller's thread
            box["error"] = e

    thread = threading.Thread(target=run, name="opdb-samples")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def run_opinfo(op):
    """``(status, detail)``: status is "pass", "fail", "missing" or "internal"."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # torch's deprecations, NaN inputs of the samples
        return _run_opinfo(op)


def _run_opinfo(op):
    if is_internal(op):
        return "internal", ""
    fn = resolve(op)
    if fn is None:
        return "missing", "not implemented yet"
    try:
        cases = _on_a_shallow_stack(samples, op)
    except Exception as e:  # noqa: BLE001 - torch's own sample generator failed
        return "internal", f"sample inputs raise: {e!r}"[:200]
    for k, sample in enumerate(cases):
        try:
            run_sample(op, fn, sample, seed=k)
        except Exception as e:  # noqa: BLE001 - any error is a failure to report
            return "fail", f"sample {k}: {type(e).__name__}: {e}"[:300]
    return "pass", f"{len(cases)} samples"
