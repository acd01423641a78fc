"""``add``/``sub`` with ``alpha`` on float16/bfloat16 tensors give torch's bits (Note [Half
tensors and alpha] in ops/_half_alpha.py)."""

import numpy as np
import pytest

import tapegrad as tg

SHAPES = [((n,), (n,)) for n in (1, 5, 31, 32, 33, 70, 1000)] + [
    ((3, 40), (3, 40)),
    ((3, 40), (40,)),
    ((5, 7), (7,)),
    ((4, 70), (1, 70)),
    ((40, 3), (40, 1)),
    ((6, 5), (1,)),
    ((), ()),
]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add", "sub"])
def test_scaled_add_of_half_tensors_is_torchs_bits(torch_mod, dtype, op):
    rng = np.random.default_rng(1)
    for sa, sb in SHAPES:
        for alpha in (3, 0.1, -0.7, 2.5):
            a = rng.standard_normal(sa).astype(np.float32)
            b = rng.standard_normal(sb).astype(np.float32)
            res = []
            for m in (tg, torch_mod):
                dt = getattr(m, dtype)
                out = getattr(m, op)(m.tensor(a).to(dt), m.tensor(b).to(dt), alpha=alpha)
                assert str(out.dtype).endswith(dtype)
                res.append(out.float().numpy())
            np.testing.assert_array_equal(res[0], res[1], err_msg=f"{sa} {sb} {alpha}")


def test_scaled_add_of_half_tensors_keeps_its_gradients(torch_mod):
    grads = []
    for m in (tg, torch_mod):
        a = m.tensor([1.0, 2.0, 3.0], dtype=m.float16, requires_grad=True)
        b = m.tensor([0.5, 0.25, 0.125], dtype=m.float16, requires_grad=True)
        m.sub(a, b, alpha=0.3).sum().backward()
        grads.append((a.grad.float().numpy(), b.grad.float().numpy()))
    np.testing.assert_array_equal(grads[0][0], grads[1][0])
    np.testing.assert_array_equal(grads[0][1], grads[1][1])


@pytest.mark.parametrize("n", [7, 100])
def test_in_place_scaled_add_of_half_tensors_is_torchs_bits(torch_mod, n):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, n)).astype(np.float32)
    res = []
    for m in (tg, torch_mod):
        x = m.tensor(a).half()
        x.add_(m.tensor(b).half(), alpha=0.1)
        y = m.tensor(a).bfloat16()
        y.sub_(m.tensor(b).bfloat16(), alpha=0.3)
        z = m.tensor(a).half()
        z.add_(z, alpha=0.7)
        res.append([t.float().numpy() for t in (x, y, z)])
    for ours, theirs in zip(*res):
        np.testing.assert_array_equal(ours, theirs)
