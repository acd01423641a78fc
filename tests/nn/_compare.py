"""Run a tapegrad module and a torch module with identical weights; compare everything."""

from __future__ import annotations

import numpy as np

import tapegrad as tg


def copy_weights(ours, theirs):
    """Load torch's parameters and buffers into ``ours`` (through load_state_dict)."""
    state = {k: v.detach().numpy().copy() for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)


def check_close(a, b, atol, what):
    a = np.asarray(a)
    b = np.asarray(b)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs torch {b.shape}"
    np.testing.assert_allclose(a, b, atol=atol, rtol=atol, err_msg=what)


def compare_module(ours, theirs, torch, x, *, train=True, atol=1e-10, seed=0, steps=1):
    """Forward + backward ``steps`` times in both; compare outputs, input/param grads, buffers."""
    copy_weights(ours, theirs)
    ours.train(train)
    theirs.train(train)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        xt = tg.tensor(x, requires_grad=True)
        xr = torch.tensor(x, requires_grad=True)
        out = ours(xt)
        ref = theirs(xr)
        check_close(out._data, ref.detach().numpy(), atol, "output")
        gy = rng.standard_normal(ref.shape)
        out.backward(tg.tensor(gy, dtype=out.dtype))
        ref.backward(torch.tensor(gy, dtype=ref.dtype))
        check_close(xt.grad._data, xr.grad.numpy(), atol, "input grad")
        theirs_params = dict(theirs.named_parameters())
        for name, p in ours.named_parameters():
            check_close(p.grad._data, theirs_params[name].grad.numpy(), atol, f"grad of {name}")
        ours.zero_grad()
        theirs.zero_grad()
    theirs_buffers = dict(theirs.named_buffers())
    for name, b in ours.named_buffers():
        check_close(b._data, theirs_buffers[name].numpy(), atol, f"buffer {name}")
