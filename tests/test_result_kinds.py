"""What a call returns is what torch's returns: a named tuple with torch's fields (``.mantissa``,
``.info``), a plain tuple or a list where torch's is one, a Python number of torch's exact type
(``int`` from ``dim()``, ``bool`` from ``equal``), and Tensors of torch's dtypes. Value
comparisons elsewhere pass a tuple for a named tuple and a 0-d tensor for an int; this table
checks the kinds for the calls that return something other than one Tensor. (The named tuples'
type names are torch's short ones, ``lu_factor`` for ``linalg_lu_factor``; tg's dtypes print as
NumPy's; a slice of ``Tensor.shape`` is a plain tuple: not checked.)"""

import warnings

import numpy as np
import pytest

import tapegrad as tg

A = [[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]]
V = [3.0, 1.0, 2.0, 1.0]


def _a(m):
    return m.tensor(A, dtype=m.float64)


def _v(m):
    return m.tensor(V, dtype=m.float64)


CALLS = {
    "aminmax": lambda m: m.aminmax(_v(m)),
    "cummax": lambda m: m.cummax(_v(m), 0),
    "cummin": lambda m: _v(m).cummin(0),
    "frexp": lambda m: m.frexp(_v(m)),
    "Tensor.frexp": lambda m: _v(m).frexp(),
    "geqrf": lambda m: m.geqrf(_a(m)),
    "histogram": lambda m: m.histogram(_v(m), 3),
    "histogramdd": lambda m: m.histogramdd(_a(m), 2),
    "kthvalue": lambda m: _v(m).kthvalue(2),
    "linalg.cholesky_ex": lambda m: m.linalg.cholesky_ex(_a(m)),
    "linalg.eig": lambda m: m.linalg.eig(_a(m)),
    "linalg.eigh": lambda m: m.linalg.eigh(_a(m)),
    "linalg.inv_ex": lambda m: m.linalg.inv_ex(_a(m)),
    "linalg.ldl_factor_ex": lambda m: m.linalg.ldl_factor_ex(_a(m)),
    "linalg.lstsq": lambda m: m.linalg.lstsq(_a(m), _a(m)),
    "linalg.lu": lambda m: m.linalg.lu(_a(m)),
    "linalg.lu_factor": lambda m: m.linalg.lu_factor(_a(m)),
    "linalg.lu_factor_ex": lambda m: m.linalg.lu_factor_ex(_a(m)),
    "linalg.qr": lambda m: m.linalg.qr(_a(m)),
    "linalg.slogdet": lambda m: m.linalg.slogdet(_a(m)),
    "linalg.solve_ex": lambda m: m.linalg.solve_ex(_a(m), _a(m)),
    "linalg.svd": lambda m: m.linalg.svd(_a(m)),
    "lu-get_infos": lambda m: m.lu(_a(m), get_infos=True),
    "lu": lambda m: m.lu(_a(m)),
    "lu_unpack": lambda m: m.lu_unpack(*m.linalg.lu_factor(_a(m))),
    "max-dim": lambda m: m.max(_a(m), 0),
    "median-dim": lambda m: _a(m).median(0),
    "min-dim": lambda m: m.min(_a(m), 1, keepdim=True),
    "mode": lambda m: m.mode(_v(m)),
    "nanmedian-dim": lambda m: m.nanmedian(_a(m), 0),
    "Tensor.qr": lambda m: _a(m).qr(),
    "slogdet": lambda m: m.slogdet(_a(m)),
    "sort": lambda m: m.sort(_v(m)),
    "Tensor.svd": lambda m: _a(m).svd(),
    "topk": lambda m: _v(m).topk(2),
    "triangular_solve": lambda m: m.triangular_solve(_a(m), _a(m)),
    "std_mean": lambda m: m.std_mean(_v(m)),
    "var_mean": lambda m: m.var_mean(_v(m), 0),
    "unique-inverse": lambda m: m.unique(_v(m), return_inverse=True),
    "unique_consecutive-counts": lambda m: m.unique_consecutive(_v(m), return_counts=True),
    "split": lambda m: m.split(_v(m), 2),
    "chunk": lambda m: _v(m).chunk(2),
    "unbind": lambda m: m.unbind(_a(m)),
    "tensor_split": lambda m: m.tensor_split(_v(m), 3),
    "meshgrid": lambda m: m.meshgrid(_v(m), _v(m), indexing="ij"),
    "broadcast_tensors": lambda m: m.broadcast_tensors(_v(m), _a(m)[:1, :1]),
    "atleast_1d-two": lambda m: m.atleast_1d(_v(m), _v(m)),
    "where-condition": lambda m: m.where(_a(m) > 1),
    "nonzero-as_tuple": lambda m: m.nonzero(_a(m) > 1, as_tuple=True),
    "tolist": lambda m: _a(m).tolist(),
    "tolist-int": lambda m: m.tensor([[1, 2]]).tolist(),
    "tolist-0d": lambda m: m.tensor(2.5).tolist(),
    "item-float": lambda m: _v(m).sum().item(),
    "item-int": lambda m: m.tensor([3]).item(),
    "item-bool": lambda m: m.tensor([True]).item(),
    "dim": lambda m: _a(m).dim(),
    "ndim": lambda m: _a(m).ndim,
    "numel": lambda m: m.numel(_a(m)),
    "Tensor.numel": lambda m: _a(m).numel(),
    "nelement": lambda m: _a(m).nelement(),
    "element_size": lambda m: _a(m).element_size(),
    "is_floating_point": lambda m: m.is_floating_point(_a(m)),
    "is_complex": lambda m: _a(m).is_complex(),
    "equal": lambda m: m.equal(_a(m), _a(m)),
    "allclose": lambda m: m.allclose(_a(m), _a(m)),
    "is_tensor": lambda m: m.is_tensor(_a(m)),
    "size-dim": lambda m: _a(m).size(0),
    "shape-index": lambda m: _a(m).shape[-1],
    "stride": lambda m: _a(m).t().stride(),
    "stride-dim": lambda m: _a(m).stride(0),
    "storage_offset": lambda m: _a(m)[1].storage_offset(),
    "is_contiguous": lambda m: _a(m).t().is_contiguous(),
    "len": lambda m: len(_a(m)),
    "int": lambda m: int(m.tensor(3.7)),
    "float": lambda m: float(m.tensor(3)),
    "bool": lambda m: bool(m.tensor(3)),
    "complex": lambda m: complex(m.tensor(3.0)),
    "index": lambda m: [10, 20, 30, 40][m.tensor(2)],
    "get_device": lambda m: _a(m).get_device(),
    "Size.numel": lambda m: _a(m).shape.numel(),
    "shape": lambda m: _a(m).shape,
}


def _kind(r, lib):
    """A description of ``r``'s kind: names of types, torch's fields, dtypes, nested."""
    if isinstance(r, lib.Tensor):
        return ("Tensor", str(r.dtype).rsplit(".", 1)[-1])
    if isinstance(r, (tuple, list)):
        fields = getattr(type(r), "__match_args__", None) or getattr(r, "_fields", None)
        if type(r).__name__ == "Size" or type(r).__name__ == "TensorShape":
            kind = "Size"
        else:
            kind = (
                "list" if isinstance(r, list) else ("named", tuple(fields)) if fields else "tuple"
            )
        return (kind, tuple(_kind(x, lib) for x in r))
    return type(r).__name__


@pytest.mark.parametrize("call", list(CALLS))
def test_the_kind_of_result_is_torchs(torch_mod, call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.lu, torch.svd, ... are deprecated
        want = _kind(CALLS[call](torch_mod), torch_mod)
    got = _kind(CALLS[call](tg), tg)
    assert got == want


def test_where_of_a_condition_alone_is_nonzero_as_tuple(torch_mod):
    cond = np.array([[0.0, 1.5], [2.0, 0.0]]) > 0
    for c in (cond, np.array(True), np.zeros(3, bool)):
        want = torch_mod.where(torch_mod.tensor(c))
        got = tg.where(tg.tensor(c))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    with pytest.raises(TypeError, match="where"):
        tg.where(tg.tensor(cond), tg.ones(2, 2))
