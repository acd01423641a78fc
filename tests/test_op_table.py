"""Every differentiable op: gradcheck, gradgradcheck (float64) and PyTorch's values/grads."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.ops import OPS

from .optable import ALL_CASES

IDS = [c.id for c in ALL_CASES]


def _tensors(arrays, contiguous=True):
    out = []
    for a in arrays:
        if not contiguous and a.ndim >= 2:
            a = np.ascontiguousarray(a.T).T  # same values, Fortran-ordered memory
        out.append(
            tg.tensor(a, dtype=tg.float64, requires_grad=True)
            if contiguous
            else tg.from_numpy(a).requires_grad_()
        )
    return out


def _run(case, m, xs):
    return case.fn(m, *xs)


@pytest.mark.parametrize("case", ALL_CASES, ids=IDS)
def test_gradcheck(case):
    xs = _tensors(case.make_inputs())
    assert tg.autograd.gradcheck(lambda *a: _run(case, tg, a), xs, **case.tol)


@pytest.mark.parametrize("case", ALL_CASES, ids=IDS)
def test_gradcheck_noncontiguous(case):
    xs = _tensors(case.make_inputs(seed=1), contiguous=False)
    assert tg.autograd.gradcheck(lambda *a: _run(case, tg, a), xs, **case.tol)


@pytest.mark.parametrize(
    "case", [c for c in ALL_CASES if c.gradgrad], ids=[c.id for c in ALL_CASES if c.gradgrad]
)
def test_gradgradcheck(case):
    xs = _tensors(case.make_inputs())
    assert tg.autograd.gradgradcheck(lambda *a: _run(case, tg, a), xs, **case.tol)


@pytest.mark.parametrize(
    "case", [c for c in ALL_CASES if c.torch], ids=[c.id for c in ALL_CASES if c.torch]
)
def test_matches_torch(case, torch_mod):
    arrays = case.make_inputs(seed=2)
    ours = _tensors(arrays)
    theirs = [torch_mod.tensor(a, dtype=torch_mod.float64, requires_grad=True) for a in arrays]
    out = _run(case, tg, ours)
    ref = _run(case, torch_mod, theirs)
    outs = out if isinstance(out, tuple) else (out,)
    refs = ref if isinstance(ref, tuple) else (ref,)
    rng = np.random.default_rng(3)
    loss_ours, loss_ref = 0.0, 0.0
    for o, r in zip(outs, refs):
        np.testing.assert_allclose(o.detach().numpy(), r.detach().numpy(), rtol=1e-6, atol=1e-8)
        assert o.shape == tuple(r.shape)
        if not r.dtype.is_floating_point:
            continue
        w = rng.uniform(-1, 1, size=tuple(r.shape))
        loss_ours = loss_ours + (o * tg.tensor(w, dtype=tg.float64)).sum()
        loss_ref = loss_ref + (r * torch_mod.tensor(w)).sum()
    if not isinstance(loss_ref, float) and loss_ref.requires_grad:
        got = tg.autograd.grad(loss_ours, ours, allow_unused=True)
        want = torch_mod.autograd.grad(loss_ref, theirs, allow_unused=True)
        for g, w in zip(got, want):
            if w is None:
                assert g is None or np.allclose(g.numpy(), 0)
            else:
                np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-8)


def test_every_differentiable_op_has_a_row():
    covered = {c.op for c in ALL_CASES}
    missing = sorted(n for n, info in OPS.items() if info.differentiable and n not in covered)
    assert not missing, f"ops without a row in the op test table: {missing}"


def test_rows_name_registered_ops():
    unknown = sorted({c.op for c in ALL_CASES} - set(OPS))
    assert not unknown, f"table rows for ops that are not registered: {unknown}"


def test_looser_tolerances_give_a_reason():
    """PyTorch's gradcheck defaults hold for every row unless the row says why not."""
    silent = sorted(c.id for c in ALL_CASES if c.looser and not c.tol_reason.strip())
    assert not silent, f"rows looser than PyTorch's gradcheck without a tol_reason: {silent}"


def test_registering_a_name_twice_is_an_error():
    from tapegrad.ops._registry import register

    before = OPS["exp"]
    with pytest.raises(RuntimeError, match="op 'exp' registered twice"):
        register("exp", method=False)(lambda x: x)
    assert OPS["exp"] is before
