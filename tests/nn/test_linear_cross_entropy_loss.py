"""nn.LinearCrossEntropyLoss against torch's: parameters, repr, values and gradients."""

import numpy as np
import pytest

import tapegrad as tg


@pytest.mark.parametrize(
    "kwargs, x_shape, t_shape",
    [
        ({}, (5, 4), (5,)),
        ({"bias": True, "label_smoothing": 0.1}, (5, 4), (5,)),
        ({"reduction": "none", "ignore_index": 1}, (6, 4), (6,)),
        ({"out_features": (2,), "bias": True}, (3, 4), (3, 2)),
        ({"reduction": "sum"}, (4,), ()),
    ],
)
def test_values_gradients_and_state_match_torch(torch_mod, kwargs, x_shape, t_shape):
    torch = torch_mod
    rng = np.random.default_rng(len(x_shape) + len(kwargs))
    x = rng.standard_normal(x_shape)
    t = rng.integers(0, 3, t_shape)
    tm = torch.nn.LinearCrossEntropyLoss(4, 3, dtype=torch.float64, **kwargs)
    gm = tg.nn.LinearCrossEntropyLoss(4, 3, dtype=tg.float64, **kwargs)
    assert list(gm.state_dict()) == list(tm.state_dict())
    assert repr(gm) == repr(tm)
    gm.load_state_dict({k: tg.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    xt, xg = torch.tensor(x, requires_grad=True), tg.tensor(x, requires_grad=True)
    lt, lg = tm(xt, torch.tensor(t)), gm(xg, tg.tensor(t))
    np.testing.assert_allclose(lg.detach().numpy(), lt.detach().numpy(), rtol=1e-12)
    lt.sum().backward()
    lg.sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), rtol=1e-10)
    for (name, p), q in zip(gm.named_parameters(), tm.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, err_msg=name)


@pytest.mark.parametrize("kwargs", [{"weight": "bad"}, {"label_smoothing": 1.5}])
def test_constructor_checks_match_torch(torch_mod, kwargs):
    for lib in (tg, torch_mod):
        given = {"weight": lib.ones(4)} if kwargs.get("weight") == "bad" else kwargs
        with pytest.raises(RuntimeError, match="expected"):
            lib.nn.LinearCrossEntropyLoss(4, 3, **given)
