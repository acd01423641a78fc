"""``tapegrad.return_types``, as ``torch.return_types``: the named tuples that ops with
several results return (``x.max(0)`` is a ``return_types.max(values, indices)``), so that
``isinstance(x.max(0), torch.return_types.max)`` holds.

Each row names torch's class and the tapegrad named tuple the op returns (the op's module
defines it next to the op). Where torch has one class for ``torch.X`` and another for
``torch.linalg.X`` with the same fields (``slogdet``/``linalg_slogdet``, ``qr``/``linalg_qr``),
tapegrad's ops share one class and both names are it. torch's ``*_out`` classes (the
results of ``out=`` calls) are not here.
"""

from __future__ import annotations

import importlib

# torch's name -> (module under tapegrad.ops, the named tuple's attribute there)
_ROWS = {
    "aminmax": ("reduce_more", "AminmaxResult"),
    "cummax": ("sorting", "CummaxResult"),
    "cummin": ("sorting", "CumminResult"),
    "frexp": ("misc_math", "FrexpResult"),
    "geqrf": ("householder", "GeqrfResult"),
    "histogram": ("counting", "HistogramResult"),
    "histogramdd": ("counting", "HistogramddResult"),
    "kthvalue": ("sorting", "KthvalueResult"),
    "linalg_cholesky_ex": ("decomp", "CholeskyExResult"),
    "linalg_eig": ("eig", "EigResult"),
    "linalg_eigh": ("decomp", "EighResult"),
    "linalg_inv_ex": ("decomp", "InvExResult"),
    "linalg_ldl_factor": ("ldl", "LDLFactorResult"),
    "linalg_ldl_factor_ex": ("ldl", "LDLFactorExResult"),
    "linalg_lstsq": ("decomp", "LstsqResult"),
    "linalg_lu": ("lu", "LUResult"),
    "linalg_lu_factor": ("lu", "LUFactorResult"),
    "linalg_lu_factor_ex": ("lu", "LUFactorExResult"),
    "linalg_qr": ("decomp", "QRResult"),
    "linalg_slogdet": ("solve", "SlogdetResult"),
    "linalg_solve_ex": ("solve_more", "SolveExResult"),
    "linalg_svd": ("decomp", "SVDResult"),
    "lu_unpack": ("lu", "LUUnpackResult"),
    "max": ("extrema", "MaxResult"),
    "median": ("sorting", "MedianResult"),
    "min": ("extrema", "MinResult"),
    "mode": ("sorting", "ModeResult"),
    "nanmedian": ("sorting", "NanmedianResult"),
    "qr": ("decomp", "QRResult"),
    "slogdet": ("solve", "SlogdetResult"),
    "sort": ("sorting", "SortResult"),
    "svd": ("decomp", "LegacySVDResult"),  # torch.svd's (U, S, V), not linalg's Vh
    "topk": ("sorting", "TopkResult"),
    "triangular_solve": ("solve_more", "TriangularSolveResult"),
}

globals().update(
    {
        name: getattr(importlib.import_module(f"tapegrad.ops.{module}"), attr)
        for name, (module, attr) in _ROWS.items()
    }
)

#: every class above, once per name (as torch's list)
all_return_types = [globals()[name] for name in _ROWS]

__all__ = ["all_return_types", *_ROWS]
