"""Forward mode: every op of the op table's JVP against the reverse-mode Jacobian and
finite differences (float64), jacfwd against jacrev, the dual-tensor API, compositions
and torch.func."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.autograd.forward_ad as fwAD
from tapegrad.autograd import graph

from .optable import ALL_CASES

F = tg.func
IDS = [c.id for c in ALL_CASES]


def _inputs(case, seed=0):
    return [tg.tensor(a, dtype=tg.float64) for a in case.make_inputs(seed)]


def _flat_outs(out):
    return out if isinstance(out, tuple) else (out,)


def _float_outs(case, xs):
    return [o for o in _flat_outs(case.fn(tg, *xs)) if o.dtype.kind == "f"]


# Rows whose graph holds complex tensors (issue 10): forward mode refuses them clearly
# (reverse mode supports them, docs/complex.md); the tests check that it raises.
COMPLEX_ROWS = {"complex", "polar", "imag", "view_as_real", "view_as_complex", "linalg_eig"}
COMPLEX_ROWS |= {"stft", "istft"}


def _raises_for_complex(case, run):
    with pytest.raises(NotImplementedError, match="complex tensors"):
        run()


@pytest.mark.parametrize("case", ALL_CASES, ids=IDS)
def test_jvp_matches_reverse_jacobian_and_finite_differences(case):
    xs = _inputs(case)
    if case.op in COMPLEX_ROWS:

        def run():
            with fwAD.dual_level():
                case.fn(tg, *[fwAD.make_dual(x, tg.ones_like(x)) for x in xs])

        return _raises_for_complex(case, run)
    rng = np.random.default_rng(7)
    ts = [tg.tensor(rng.standard_normal(x.shape), dtype=tg.float64) for x in xs]
    if not _float_outs(case, xs):
        pytest.skip("no float output")
    with fwAD.dual_level():
        duals = [fwAD.make_dual(x, t) for x, t in zip(xs, ts)]
        outs = _flat_outs(case.fn(tg, *duals))
        tangents = [fwAD.unpack_dual(o).tangent for o in outs if o.dtype.kind == "f"]
    outs = [o for o in outs if o.dtype.kind == "f"]
    # Reverse mode: J t = sum_i J_i t_i from one jacobian per input.
    for k, (o, tan) in enumerate(zip(outs, tangents)):
        want = np.zeros(o.shape)
        for i, (x, t) in enumerate(zip(xs, ts)):

            def fi(xi, i=i, k=k):
                args = list(xs)
                args[i] = xi
                return _float_outs(case, args)[k]

            jac = tg.autograd.functional.jacobian(fi, x).numpy()
            want = (
                want + np.tensordot(jac, t.numpy(), axes=t.ndim)
                if t.ndim
                else want + jac * t.numpy()
            )
        got = np.zeros(o.shape) if tan is None else tan.detach().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9, err_msg=f"{case.id} output {k}")
        if o.dtype != tg.float64 or case.op == "_cast":
            continue  # finite differences need float64 all the way (_cast rounds to float32)
        # Finite differences along the tangent.
        eps = 1e-6
        plus = _float_outs(case, [x + eps * t for x, t in zip(xs, ts)])[k].numpy()
        minus = _float_outs(case, [x - eps * t for x, t in zip(xs, ts)])[k].numpy()
        fd = (plus - minus) / (2 * eps)
        np.testing.assert_allclose(got, fd, rtol=1e-4, atol=1e-5, err_msg=f"{case.id} FD {k}")


@pytest.mark.parametrize("case", ALL_CASES, ids=IDS)
def test_jacfwd_equals_jacrev(case):
    xs = _inputs(case, seed=3)
    if not _float_outs(case, xs) or not all(x.numel() for x in xs):
        pytest.skip("no float output or empty input")
    argnums = tuple(range(len(xs)))

    def f(*a):
        outs = _float_outs(case, a)
        return tuple(outs)

    if case.op in COMPLEX_ROWS:
        return _raises_for_complex(case, lambda: F.jacfwd(f, argnums=argnums)(*xs))

    fwd = F.jacfwd(f, argnums=argnums)(*xs)
    rev = F.jacrev(f, argnums=argnums)(*xs)
    for row_f, row_r in zip(fwd, rev):
        for a, b in zip(row_f, row_r):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-7, atol=1e-9)


def test_dual_api_and_zero_cost_outside_a_level():
    assert graph.FORWARD == [None, None]
    x = tg.tensor([1.0, 2.0])
    with fwAD.dual_level():
        assert graph.FORWARD[0] is not None
        d = fwAD.make_dual(x, tg.tensor([1.0, 0.0]))
        p, t = fwAD.unpack_dual(d * 3.0)
        np.testing.assert_allclose(p.detach().numpy(), [3.0, 6.0])
        np.testing.assert_allclose(t.detach().numpy(), [3.0, 0.0])
        assert fwAD.unpack_dual(x).tangent is None
        assert fwAD.unpack_dual(tg.ones(2) * 2).tangent is None
    assert graph.FORWARD == [None, None]


def test_dual_errors():
    x = tg.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="no dual level"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="same shape"):
            fwAD.make_dual(x, tg.ones(3))
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            fwAD.enter_dual_level()
        d = fwAD.make_dual(x, tg.ones(2)) * 1.0
        with tg.no_grad(), pytest.raises(NotImplementedError, match="in-place op"):
            d.mul_(2.0)


def test_inplace_under_no_grad_raises_only_when_a_tangent_is_involved():
    # The rule of _inplace_guard: under no_grad in a dual level an in-place op is
    # refused when self OR another operand carries a tangent (its tangent would be
    # lost silently), and runs when none does.
    with fwAD.dual_level():
        d = fwAD.make_dual(tg.tensor([1.0, 2.0]), tg.ones(2)) * 1.0
        plain = tg.tensor([3.0, 4.0])
        with tg.no_grad():
            with pytest.raises(NotImplementedError, match="in-place op"):
                plain.add_(d)
            plain.add_(tg.tensor([1.0, 1.0]))
            plain.mul_(2.0)
        np.testing.assert_allclose(plain.numpy(), [8.0, 10.0])


def test_inplace_ops_carry_tangents():
    x = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, tg.tensor([1.0, 1.0, 1.0], dtype=tg.float64)) * 1.0
        d.mul_(d)
        d[1:] += 1.0
        v = d[0:2]
        v.mul_(3.0)  # through a view: the base's tangent changes too
        t = fwAD.unpack_dual(d).tangent.detach().numpy()
    np.testing.assert_allclose(t, [6.0, 12.0, 6.0])


class _RawBackward(tg.autograd.Function):
    """A custom op whose backward uses raw arrays: its tangent can't be derived."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return tg.tensor(g.detach().numpy() * 2)


def test_op_without_derivable_rule_raises_naming_it():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="_RawBackward"):
        F.jvp(_RawBackward.apply, (x,), (tg.ones(2),))


def test_explicit_jvp_rule_is_used():
    calls = []

    def rule(tans, inputs, outs):
        calls.append(1)
        return [tans[0] * 2]

    class Double(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return tg.tensor(g.detach().numpy() * 2)

    fwAD.JVP_RULES["DoubleBackward"] = rule
    try:
        _, t = F.jvp(Double.apply, (tg.tensor([1.0]),), (tg.tensor([3.0]),))
    finally:
        del fwAD.JVP_RULES["DoubleBackward"]
    assert calls and float(t) == 6.0


def _f(x):
    return (x.sin() * x.exp()).sum() + (x @ x).tanh()


def test_hvp_forward_over_reverse_and_hessians():
    x = tg.tensor(np.random.default_rng(0).standard_normal(4), dtype=tg.float64)
    v = tg.tensor(np.random.default_rng(1).standard_normal(4), dtype=tg.float64)
    H = F.jacrev(F.jacrev(_f))(x).numpy()
    _, hvp = F.jvp(F.grad(_f), (x,), (v,))
    np.testing.assert_allclose(hvp.numpy(), H @ v.numpy(), rtol=1e-10)
    for h in (
        F.hessian(_f),
        F.jacfwd(F.jacrev(_f)),
        F.jacrev(F.jacfwd(_f)),
        F.jacfwd(F.jacfwd(_f)),
    ):
        np.testing.assert_allclose(h(x).numpy(), H, rtol=1e-10, atol=1e-12)


def test_nested_jvp_and_grad_of_jvp():
    x = tg.tensor([0.3, -0.7], dtype=tg.float64)
    v = tg.tensor([1.0, 2.0], dtype=tg.float64)
    H = F.hessian(_f)(x).numpy()
    # d/dx <grad f, v> by reverse over forward
    g = F.grad(lambda x: F.jvp(_f, (x,), (v,))[1])(x)
    np.testing.assert_allclose(g.numpy(), H @ v.numpy(), rtol=1e-10)
    # jvp of jvp: v^T H v
    _, vhv = F.jvp(lambda x: F.jvp(_f, (x,), (v,))[1], (x,), (v,))
    np.testing.assert_allclose(float(vhv), v.numpy() @ H @ v.numpy(), rtol=1e-10)


def test_linearize_and_vjp():
    x = tg.tensor([0.3, -0.7, 1.1], dtype=tg.float64)
    t = tg.tensor([1.0, 2.0, -1.0], dtype=tg.float64)

    def f(x):
        return x.sin() * x.sum()

    J = F.jacrev(f)(x).numpy()
    out, jvp_fn = F.linearize(f, x)
    np.testing.assert_allclose(out.numpy(), f(x).numpy())
    np.testing.assert_allclose(jvp_fn(t).numpy(), J @ t.numpy(), rtol=1e-12)
    np.testing.assert_allclose(jvp_fn(2 * t).numpy(), 2 * J @ t.numpy(), rtol=1e-12)
    out, vjp_fn = F.vjp(f, x)
    (g,) = vjp_fn(t)
    np.testing.assert_allclose(g.numpy(), t.numpy() @ J, rtol=1e-12)
    with pytest.raises(RuntimeError, match="shape"):
        vjp_fn(tg.ones(2, dtype=tg.float64))


def test_jacfwd_argnums_tuple_outputs_aux():
    x = tg.tensor([0.3, -0.7], dtype=tg.float64)
    y = tg.tensor([[1.0, 2.0, 3.0]], dtype=tg.float64)

    def f(x, y):
        return (x.sum() * y, x.exp()), "aux"

    jac, aux = F.jacfwd(f, argnums=(0, 1), has_aux=True)(x, y)
    ref, _ = F.jacrev(f, argnums=(0, 1), has_aux=True)(x, y)
    assert aux == "aux"
    for rf, rr in zip(jac, ref):
        for a, b in zip(rf, rr):
            assert a.shape == b.shape
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_against_torch_func(torch_mod):
    torch = torch_mod
    rng = np.random.default_rng(5)
    xa, va = rng.standard_normal(5), rng.standard_normal(5)
    Wa = rng.standard_normal((5, 3))

    def f(m, W):
        return lambda x: (x.tanh() @ W).softmax(-1) * x.sum()

    ours = F.jvp(f(tg, tg.tensor(Wa)), (tg.tensor(xa),), (tg.tensor(va),))
    theirs = torch.func.jvp(f(torch, torch.tensor(Wa)), (torch.tensor(xa),), (torch.tensor(va),))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10)
    np.testing.assert_allclose(
        F.jacfwd(f(tg, tg.tensor(Wa)))(tg.tensor(xa)).numpy(),
        torch.func.jacfwd(f(torch, torch.tensor(Wa)))(torch.tensor(xa)).numpy(),
        rtol=1e-10,
    )
    g = lambda m: lambda x: (x.sin() * x.exp()).sum()  # noqa: E731
    np.testing.assert_allclose(
        F.hessian(g(tg))(tg.tensor(xa)).numpy(),
        torch.func.hessian(g(torch))(torch.tensor(xa)).numpy(),
        rtol=1e-10,
    )
    _, jfn = F.linearize(g(tg), tg.tensor(xa))
    _, tjfn = torch.func.linearize(g(torch), torch.tensor(xa))
    np.testing.assert_allclose(jfn(tg.tensor(va)).numpy(), tjfn(torch.tensor(va)).numpy())


def test_no_grad_inside_a_dual_level_warns(monkeypatch):
    monkeypatch.setattr(fwAD, "_WARNED", [False])
    x = tg.tensor([1.0, 2.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, tg.ones(2))
        with pytest.warns(UserWarning, match="carry no tangent"), tg.no_grad():
            y = d * 2
        assert fwAD.unpack_dual(y).tangent is None
    from tapegrad import grad_mode

    assert grad_mode.NO_GRAD_HOOK == [None]
