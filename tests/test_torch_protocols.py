"""torch.return_types, torch.functional, torch.overrides and the sym_* helpers (brief n20),
compared with torch: classes and fields, values and their types, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import return_types


def outcome(fn):
    """``("value", v, type name)`` or ``("raise", type name, message)``."""
    try:
        v = fn()
    except Exception as e:  # noqa: BLE001 - the error is the outcome compared
        return ("raise", type(e).__name__, str(e).replace("torch.", "").replace("tapegrad.", ""))
    if hasattr(v, "detach"):  # a tensor: its values
        v = v.detach().numpy().tolist() if hasattr(v, "numpy") else v
    return ("value", v, type(v).__name__)


# -- return_types ------------------------------------------------------------------------------

M = [[2.0, 1.0], [1.0, 3.0]]
V = [3.0, 1.0, 2.0]

# torch.return_types name -> the call that returns it (m is torch or tapegrad)
CALLS = {
    "aminmax": lambda m: m.aminmax(m.tensor(V)),
    "cummax": lambda m: m.cummax(m.tensor(V), 0),
    "cummin": lambda m: m.tensor(V).cummin(0),
    "frexp": lambda m: m.frexp(m.tensor(V)),
    "geqrf": lambda m: m.geqrf(m.tensor(M)),
    "histogram": lambda m: m.histogram(m.tensor(V)),
    "histogramdd": lambda m: m.histogramdd(m.tensor(M), 2),
    "kthvalue": lambda m: m.kthvalue(m.tensor(V), 1),
    "linalg_cholesky_ex": lambda m: m.linalg.cholesky_ex(m.tensor(M)),
    "linalg_eig": lambda m: m.linalg.eig(m.tensor(M)),
    "linalg_eigh": lambda m: m.linalg.eigh(m.tensor(M)),
    "linalg_inv_ex": lambda m: m.linalg.inv_ex(m.tensor(M)),
    "linalg_ldl_factor": lambda m: m.linalg.ldl_factor(m.tensor(M)),
    "linalg_ldl_factor_ex": lambda m: m.linalg.ldl_factor_ex(m.tensor(M)),
    "linalg_lstsq": lambda m: m.linalg.lstsq(m.tensor(M), m.tensor(M)),
    "linalg_lu": lambda m: m.linalg.lu(m.tensor(M)),
    "linalg_lu_factor": lambda m: m.linalg.lu_factor(m.tensor(M)),
    "linalg_lu_factor_ex": lambda m: m.linalg.lu_factor_ex(m.tensor(M)),
    "linalg_qr": lambda m: m.linalg.qr(m.tensor(M)),
    "linalg_slogdet": lambda m: m.linalg.slogdet(m.tensor(M)),
    "linalg_solve_ex": lambda m: m.linalg.solve_ex(m.tensor(M), m.tensor(M)),
    "linalg_svd": lambda m: m.linalg.svd(m.tensor(M)),
    "lu_unpack": lambda m: m.lu_unpack(*m.linalg.lu_factor(m.tensor(M))),
    "max": lambda m: m.tensor(V).max(0),
    "median": lambda m: m.median(m.tensor(V), 0),
    "min": lambda m: m.min(m.tensor(V), 0),
    "mode": lambda m: m.tensor(V).mode(),
    "nanmedian": lambda m: m.nanmedian(m.tensor(V), 0),
    "qr": lambda m: m.qr(m.tensor(M)),
    "slogdet": lambda m: m.tensor(M).slogdet(),
    "sort": lambda m: m.tensor(V).sort(),
    "svd": lambda m: m.svd(m.tensor(M)),
    "topk": lambda m: m.topk(m.tensor(V), 2),
    "triangular_solve": lambda m: m.triangular_solve(m.tensor(M), m.tensor(M)),
}


def test_return_types_names_torch_has(torch_mod):
    theirs = {n for n in torch_mod.return_types.__all__ if not n.endswith("_out")}
    theirs.discard("pytree_register_structseq")  # tapegrad has no pytree registry
    assert set(return_types.__all__) == theirs
    assert set(CALLS) == theirs - {"all_return_types"}
    assert len(return_types.all_return_types) == len(CALLS)


@pytest.mark.filterwarnings("ignore:.*deprecated")  # torch.qr, triangular_solve
@pytest.mark.parametrize("name", CALLS)
def test_op_results_are_instances_of_return_types(torch_mod, name):
    ours, theirs = CALLS[name](tg), CALLS[name](torch_mod)
    cls = getattr(tg.return_types, name)
    assert isinstance(theirs, getattr(torch_mod.return_types, name))
    assert isinstance(ours, cls) and isinstance(ours, tuple)
    assert cls._fields == type(theirs).__match_args__
    # torch's structseq takes one sequence, a namedtuple its fields: _make is the former
    assert cls._make((1,) * len(cls._fields))[0] == 1


# -- functional --------------------------------------------------------------------------------


def test_functional_module_has_torch_functions(torch_mod):
    missing = {"istft"} if not hasattr(tg, "istft") else set()
    assert set(tg.functional.__all__) == set(torch_mod.functional.__all__) - missing
    for name in tg.functional.__all__:
        assert getattr(tg.functional, name) is getattr(tg, name)
    a, b = ([[1.0, 2.0], [3.0, 4.0]],) * 2
    for m in (tg, torch_mod):  # the common calls, through the module
        out = m.functional.einsum("ij,jk->ik", m.tensor(a), m.tensor(b))
        parts = m.functional.split(m.arange(5), 2)
        norm = m.functional.norm(m.tensor(a))
        assert out.tolist() == [[7.0, 10.0], [15.0, 22.0]] and len(parts) == 3
        assert abs(float(norm) - 30**0.5) < 1e-6


# -- overrides ---------------------------------------------------------------------------------


class Like:
    """A tensor-like with a classmethod __torch_function__ (records what it was given)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return (cls.__name__, func.__name__, [t.__name__ for t in types], len(args), kwargs)


class SubLike(Like):
    pass


class Declines:
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return NotImplemented


class PlainMethod:
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return "plain"


def _api(*args, **kwargs):
    return "not overloaded"


OVERRIDES = {
    "has_plain": lambda m, o: o.has_torch_function((1, m.ones(1), m.nn.Parameter(m.ones(1)))),
    "has_like": lambda m, o: o.has_torch_function([1, Like()]),
    "has_not_sequence": lambda m, o: o.has_torch_function(Like()),
    "unary_tensor": lambda m, o: o.has_torch_function_unary(m.ones(2)),
    "unary_like": lambda m, o: o.has_torch_function_unary(Like()),
    "variadic": lambda m, o: (
        o.has_torch_function_variadic(1, Like()),
        o.has_torch_function_variadic(),
    ),  # fmt: skip
    "handle_order": lambda m, o: o.handle_torch_function(
        _api, (Like(), SubLike(), Like()), 1, 2, k=3
    ),
    "handle_declined": lambda m, o: o.handle_torch_function(_api, (Declines(),), 1),
    "handle_falls_through": lambda m, o: o.handle_torch_function(
        _api, (Declines(), Like()), Declines()
    ),
    "is_tensor_like": lambda m, o: [
        o.is_tensor_like(x)
        for x in (m.ones(1), m.nn.Parameter(m.ones(1)), m.Tensor, Like(), Like, 1, np.ones(1))
    ],
    "wrap": lambda m, o: [
        o.wrap_torch_function(lambda x, y=0: (x,))(_api)(v) for v in (1, m.ones(1), Like())
    ],
}


@pytest.mark.parametrize("name", OVERRIDES)
def test_overrides_as_torch(torch_mod, name):
    case = OVERRIDES[name]
    assert outcome(lambda: case(tg, tg.overrides)) == outcome(
        lambda: case(torch_mod, torch_mod.overrides)
    )


def test_plain_method_torch_function_warns_as_torch(torch_mod):
    for o in (tg.overrides, torch_mod.overrides):
        with pytest.warns(DeprecationWarning, match="plain method is deprecated"):
            assert o.handle_torch_function(_api, (PlainMethod(),), 1) == "plain"


# -- sym_* -------------------------------------------------------------------------------------

SYM_ARGS = {
    "sym_int": [3, 2.7, -2.7, True, "3", np.float64(2.5), "tensor(2.5)", "tensor(3)"],
    "sym_float": [3, 2.5, True, "3", "tensor(2.5)", "tensor(3)"],
    "sym_sqrt": [4, 2.0, True, -1.0, "tensor(4.)"],
    "sym_max": [(1, 2), (1, 2.5), (2.5, 1), (True, 0), (3, 3.0), (np.int64(3), 2),
                (np.float32(1.5), 2), ("tensor(1)", 2), (1, "x")],
    "sym_min": [(1, 2), (1, 2.5), (True, 0), (0, True), (3.0, 3), ("tensor(1.)", 2)],
    "sym_ite": [(True, 1, 2), (False, 1.0, 2.0), (True, 1, 2.0), (0, 1, 2),
                ("tensor(True)", 1, 2)],
    "sym_sum": [([1, 2, 3],), ([1, 2.5],), ([],), ((True, True),), (1, 2), (5,),
                (["tensor(1.)", 2],)],
}  # fmt: skip
SYM_CASES = [(n, a) for n, args in SYM_ARGS.items() for a in args]


def _arg(m, a):
    """``"tensor(...)"`` strings become tensors of module ``m``; tuples recurse."""
    if isinstance(a, (tuple, list)):
        return type(a)(_arg(m, x) for x in a)
    if isinstance(a, str) and a.startswith("tensor("):
        return m.tensor(eval(a[7:-1]))  # noqa: S307 - the literals above
    return a


@pytest.mark.parametrize(("name", "arg"), SYM_CASES, ids=[f"{n}-{a!r}" for n, a in SYM_CASES])
def test_sym_helpers_as_torch(torch_mod, name, arg):
    args = arg if isinstance(arg, tuple) else (arg,)
    ours = outcome(lambda: getattr(tg, name)(*_arg(tg, args)))
    theirs = outcome(lambda: getattr(torch_mod, name)(*_arg(torch_mod, args)))
    if theirs[0] == "raise" and "type mismatch" not in theirs[2]:
        theirs = theirs[:2] + (theirs[2].replace("torch.Tensor", "Tensor"),)
        ours = ours[:2] + (ours[2].replace("tensor.Tensor", "Tensor"),)
    assert ours == theirs


def test_sym_not_as_torch():
    """Recorded from torch 2.13: its sym_not imports sympy (3 s) on first call."""
    cases = [(True, False), (0, True), (3, False), (2.0, False), ("", True),
             (tg.tensor(True), False), (tg.tensor(0), True)]  # fmt: skip
    for arg, want in cases:
        got = tg.sym_not(arg)
        assert got is want, (arg, got)


def test_sym_helpers_hand_overloads_to_torch_function(torch_mod):
    for m in (tg, torch_mod):
        assert m.sym_int(Like())[:2] == ("Like", "sym_int")
        assert m.sym_max(Like(), 1)[:2] == ("Like", "sym_max")
        assert m.sym_sum([1, Like()])[:2] == ("Like", "sym_sum")
    assert tg.sym_not(Like())[:2] == ("Like", "sym_not")

    class Hooked:
        def __sym_float__(self):
            return 1.5

        def __sym_not__(self):
            return "negated"

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for m in (tg, torch_mod):
            assert m.sym_float(Hooked()) == 1.5
        assert tg.sym_not(Hooked()) == "negated"  # torch's too (its sym_not loads sympy)


# -- flags, device errors, symbolic scalar classes -------------------------------------------


def test_flags_error_classes_and_sym_classes_as_torch(torch_mod):
    for m in (tg, torch_mod):
        assert m.is_vulkan_available() is False and m.compiled_with_cxx11_abi() is True
        assert m.cuda.OutOfMemoryError is m.OutOfMemoryError
        assert issubclass(m.OutOfMemoryError, RuntimeError)
        assert issubclass(m.AcceleratorError, RuntimeError)
        assert m.GradScaler is m.amp.GradScaler
        for value in (3, 2.5, True, m.tensor(1)):  # eager values are never symbolic
            assert not isinstance(value, (m.SymInt, m.SymFloat, m.SymBool))
        assert m.SymInt(3).node == 3
    assert tg.AcceleratorError.__doc__ == torch_mod.AcceleratorError.__doc__


def test_types_aliases_as_torch(torch_mod):
    import typing

    names = [n for n in dir(torch_mod.types) if n[0] != "_" or n[1] != "_"]
    names = [n for n in names if n.startswith(("_", "Number", "Device", "FileLike", "Storage",
                                               "IntLike", "FloatLike", "BoolLike", "py_sym",
                                               "PySym"))]  # fmt: skip
    # dispatch keys, quantization and autograd.graph.GradientEdge: not in tapegrad
    missing = {"_dispatchkey", "_qscheme", "_TensorOrTensorsOrGradEdge"}
    assert {n for n in names if not hasattr(tg.types, n)} == missing
    assert set(tg.types.__all__) == set(torch_mod.types.__all__)
    spell = {tg.Tensor: "Tensor", tg.device: "device", tg.Size: "Size", tg.SymInt: "SymInt",
             tg.SymFloat: "SymFloat", tg.SymBool: "SymBool"}  # fmt: skip
    for name in ("Number", "Device", "_size", "_TensorOrTensors", "IntLikeType", "PySymType"):
        ours = [spell.get(a, getattr(a, "__name__", str(a))) for a in typing.get_args(
            getattr(tg.types, name))]  # fmt: skip
        theirs = [str(a).removeprefix("torch.").removeprefix("<class '").removesuffix("'>")
                  for a in typing.get_args(getattr(torch_mod.types, name))]  # fmt: skip
        assert len(ours) == len(theirs), name
    assert isinstance(2.5, tg.types._Number) and tg.types.py_sym_types == (
        tg.SymInt,
        tg.SymFloat,
        tg.SymBool,
    )
