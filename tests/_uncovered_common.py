"""Helpers of the tests of lines of ops/ and nn/ that no other test executed."""

import numpy as np


def _same(ours, theirs, rtol=1e-7, atol=1e-12):
    theirs = theirs.detach().numpy() if hasattr(theirs, "detach") else np.asarray(theirs)
    ours = ours.detach().numpy() if hasattr(ours, "detach") else np.asarray(ours)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


def _mha(lib, **kw):
    """multi_head_attention_forward with E=4, H=2, L=S=3, N=2 and ``kw`` replaced."""
    args = dict(
        query=lib.ones(3, 2, 4),
        key=lib.ones(3, 2, 4),
        value=lib.ones(3, 2, 4),
        embed_dim_to_check=4,
        num_heads=2,
        in_proj_weight=lib.ones(12, 4),
        in_proj_bias=lib.zeros(12),
        bias_k=None,
        bias_v=None,
        add_zero_attn=False,
        dropout_p=0.0,
        out_proj_weight=lib.ones(4, 4),
        out_proj_bias=lib.zeros(4),
    )
    args.update(kw)
    return lib.nn.functional.multi_head_attention_forward(**args)


def _with_attribute(module):
    module.foo = 1
    return module


def _lce(lib, x, w, t, **kw):
    return lib.nn.functional.linear_cross_entropy(x, w, t, **kw)


_A = np.array([[0.5, -1.5, 2.0, 0.25], [3.0, 1.0, -2.0, 0.75], [1.0, 2.5, 0.0, -0.5]])


def _vg(lib, a, f, dtype=None):
    """[f(x), d(Σ w·f(x))/dx] for x = a (float64 unless ``dtype``), w = 1, 2, 3, ..."""
    x = lib.tensor(np.asarray(a), requires_grad=True)
    if dtype is not None:
        x = lib.tensor(np.asarray(a), dtype=dtype, requires_grad=True)
    y = f(x)
    w = lib.tensor(np.arange(1.0, y.numel() + 1).reshape(tuple(y.shape))).to(y.dtype)
    (y * w).sum().backward()
    return [y, x.grad]
