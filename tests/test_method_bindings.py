"""A registered op is a Tensor method exactly where torch.Tensor has one of that name.

``@register(name, method=False)`` keeps an op off Tensor (``grid_sampler_2d``,
``pca_lowrank``: functions only in torch). A flag that drifted binds a method torch
lacks, or drops one torch code calls, with no other test noticing: the op itself still
works. Every registered op is compared, so a new one gets the check for free.
"""

import pytest

import tapegrad as tg
from tapegrad.ops import OPS

torch = pytest.importorskip("torch")

# Methods tapegrad binds that torch.Tensor lacks, each with the reason it stays.
EXTRA = {
    name: "a tapegrad convenience (a method of the same op as F.<name>/torch.<name>); "
    "no torch program calls it, so it changes nothing for one"
    for name in (
        "gelu",
        "silu",
        "softplus",
        "rsub",
        "std_mean",
        "var_mean",
        "bucketize",
        "view_as_real",
        "view_as_complex",
    )
}
# torch.Tensor attributes of a registered op's name that tapegrad does not bind.
MISSING = {
    "solve": "torch.Tensor.solve only raises (removed in torch 1.9: use torch.linalg.solve)",
}


def test_registered_ops_are_methods_where_torchs_are():
    extra, missing = [], []
    for name in sorted(OPS):
        if name.startswith("_"):
            continue
        ours, theirs = hasattr(tg.Tensor, name), hasattr(torch.Tensor, name)
        if ours and not theirs and name not in EXTRA:
            extra.append(name)
        if theirs and not ours and name not in MISSING:
            missing.append(name)
    assert not extra, f"Tensor methods torch.Tensor lacks (method=False?): {extra}"
    assert not missing, f"torch.Tensor methods tapegrad does not bind: {missing}"


def test_waivers_are_current():
    """Each waiver still describes a difference (a stale one would hide a new drift)."""
    for name in EXTRA:
        assert hasattr(tg.Tensor, name) and not hasattr(torch.Tensor, name), name
    for name in MISSING:
        assert hasattr(torch.Tensor, name) and not hasattr(tg.Tensor, name), name
