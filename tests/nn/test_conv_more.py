"""Conv1d, Conv3d, ConvTranspose1d/2d against torch with identical weights."""

import numpy as np
import pytest

import tapegrad as tg

from ._compare import compare_module

rng = np.random.default_rng(0)

CASES = [
    # (class, args, kwargs, input shape)
    ("Conv1d", (4, 6, 3), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}, (2, 4, 9)),
    ("Conv1d", (4, 6, 3), {"padding": "same", "bias": False}, (4, 9)),
    ("Conv3d", (4, 6, (3, 2, 3)), {"stride": (2, 1, 2), "padding": (1, 0, 1),
                                   "dilation": (1, 2, 1), "groups": 2}, (2, 4, 5, 6, 5)),
    ("Conv3d", (2, 3, 2), {"padding": 1}, (2, 4, 3, 4)),
    ("ConvTranspose2d", (4, 6, 3), {"stride": 2, "padding": 1, "output_padding": 1,
                                    "groups": 2}, (2, 4, 5, 4)),
    ("ConvTranspose2d", (4, 3, (3, 2)), {"stride": (2, 3), "padding": (0, 1), "dilation": 2},
     (2, 4, 5, 4)),
    ("ConvTranspose2d", (3, 2, 2), {"bias": False}, (3, 4, 4)),
    ("ConvTranspose1d", (4, 3, 3), {"stride": 3, "padding": 1, "output_padding": 2}, (2, 4, 7)),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_conv_matches_torch(case, torch_mod):
    name, args, kwargs, shape = case
    ours = getattr(tg.nn, name)(*args, **kwargs).double()
    theirs = getattr(torch_mod.nn, name)(*args, **kwargs).double()
    if kwargs.get("padding") != "same":
        assert repr(ours) == repr(theirs)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in theirs.state_dict().items()
    ]
    compare_module(ours, theirs, torch_mod, rng.standard_normal(shape), steps=2)


def test_conv_transpose_output_size(torch_mod):
    ours = tg.nn.ConvTranspose2d(2, 3, 3, stride=2).double()
    theirs = torch_mod.nn.ConvTranspose2d(2, 3, 3, stride=2).double()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = rng.standard_normal((1, 2, 4, 4))
    a = ours(tg.tensor(x), output_size=[10, 9])
    b = theirs(torch_mod.tensor(x), output_size=[10, 9])
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-12)
    with pytest.raises(ValueError, match="output size"):
        ours(tg.tensor(x), output_size=[14, 14])


def test_conv_more_double_backward():
    x = tg.randn(1, 2, 3, 3, 3, dtype=tg.float64, requires_grad=True)
    w = tg.randn(2, 2, 2, 2, 2, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda x, w: tg.nn.functional.conv3d(x, w, padding=1), [x, w])
    x = tg.randn(1, 2, 3, 3, dtype=tg.float64, requires_grad=True)
    w = tg.randn(2, 1, 2, 2, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradgradcheck(
        lambda x, w: tg.nn.functional.conv_transpose2d(x, w, stride=2, output_padding=1), [x, w]
    )


def test_conv_more_errors():
    with pytest.raises(RuntimeError, match="don't match"):
        tg.nn.functional.conv1d(tg.randn(2, 3, 5), tg.randn(4, 2, 3))
    with pytest.raises(RuntimeError, match="Expected 2D"):
        tg.nn.functional.conv1d(tg.randn(5), tg.randn(4, 2, 3))
    with pytest.raises(RuntimeError, match="output padding"):
        tg.nn.functional.conv_transpose2d(tg.randn(1, 2, 3, 3), tg.randn(2, 2, 3, 3),
                                          output_padding=1)  # fmt: skip
