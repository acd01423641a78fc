"""Names tapegrad has where torch has none: a reviewed list, so a table row that binds a
method or exports a function torch does not have (``special_i1`` as a Tensor method, a
``method=False`` flipped in ops/unary_table.py) fails here instead of passing silently."""

import types

import pytest

import tapegrad as tg

# tapegrad's extras, each reviewed: torch keeps these in torch.nn.functional only, or
# has them on the Tensor under another name
EXTRA = {
    "Tensor": {
        "bucketize",  # torch.bucketize only
        "gelu",
        "rsub",
        "silu",
        "softplus",
        "std_mean",
        "var_mean",
        "view_as_complex",  # torch.view_as_complex only
        "view_as_real",
    },
    "": {
        *("elu gelu hardsigmoid hardswish hardtanh leaky_relu logsigmoid mish relu6").split(),
        *("silu softplus softshrink softsign tanhshrink pad expand view").split(),
    },
    # helpers nn/functional.py imports for itself (they are not functions of torch's)
    "nn.functional": {
        "Geometry",
        "annotations",
        "check_embedding_indices",
        "default_generator",
        "joining",
        "make_inplace",
        "out_size",
    },
    "linalg": set(),
    "special": {"OPS", "POLYNOMIALS", "annotations", "exported"},
    "fft": {"annotations", "as_tensor", "make_result"},
}


def _get(root, path):
    for part in path.split(".") if path else ():
        root = getattr(root, part)
    return root


@pytest.mark.parametrize("where", sorted(EXTRA))
def test_names_torch_does_not_have_are_the_reviewed_ones(torch_mod, where):
    if where == "Tensor":
        ours, theirs = tg.Tensor, torch_mod.Tensor
    else:
        ours, theirs = _get(tg, where), _get(torch_mod, where)
    extra = {
        n
        for n in dir(ours)
        if not n.startswith("_")
        and not hasattr(theirs, n)
        and not isinstance(getattr(ours, n), types.ModuleType)
    }
    assert extra == EXTRA[where], (sorted(extra - EXTRA[where]), sorted(EXTRA[where] - extra))
