"""Second order against PyTorch: one Hessian-vector product and the double backward.

With the same float64 inputs x, upstream gradients v (tensors that require grad) and
directions u, both libraries compute

    g = d(Σ v ⊙ f(x))/dx          (create_graph=True)
    d(Σ u ⊙ g)/d(x, v)            (one Hessian-vector product, and the double
                                   backward with respect to the upstream gradient)

which must agree to rtol 1e-6 (tests/test_second_order.py, tests/nn).
"""

import numpy as np

import tapegrad as tg


def _flat(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def as_array(t):
    if t is None:
        return None
    if type(t).__module__.startswith("torch"):
        return t.detach().numpy(force=True)  # force: torch's ZeroTensor (abs'' = 0)
    return np.asarray(t.detach().numpy())


def second_order(m, fn, arrays, vs, us, keep):
    """``(outputs, g, d(Σ u ⊙ g)/d(x, v))`` of ``fn(m, *x)`` in module ``m``, as arrays.

    Only the outputs whose index is in ``keep`` are differentiated.
    """
    xs = [m.tensor(a, dtype=m.float64, requires_grad=True) for a in arrays]
    outs = [o for k, o in enumerate(_flat(fn(m, *xs))) if k in keep]
    v = [m.tensor(vs[k], dtype=m.float64, requires_grad=True) for k in keep]
    values = [as_array(o) for o in outs]
    if not outs:
        return values, [None] * len(xs), [None] * (len(xs) + len(v))
    grads = m.autograd.grad(outs, xs, v, create_graph=True, allow_unused=True)
    terms = [(g * m.tensor(u)).sum() for g, u in zip(grads, us) if g is not None]
    total = sum(terms[1:], terms[0]) if terms else None
    if total is None or not total.requires_grad:
        return values, [as_array(g) for g in grads], [None] * (len(xs) + len(v))
    hvp = m.autograd.grad(total, xs + v, allow_unused=True)
    return values, [as_array(g) for g in grads], [as_array(h) for h in hvp]


def _compare(got, want, what, shapes):
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        if b is None and a is None:
            continue
        a = np.zeros(shapes[i]) if a is None else a
        b = np.zeros(shapes[i]) if b is None else b
        assert a.shape == b.shape, f"{what} {i}: shape {a.shape} != torch's {b.shape}"
        assert a.dtype == b.dtype, f"{what} {i}: dtype {a.dtype} != torch's {b.dtype}"
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9, err_msg=f"{what} {i}")


def check_against_torch(fn, arrays, torch_mod, torch_nan=False, reference=None):
    """Outputs, first-order gradients and one HVP with double backward in v, vs torch.

    ``fn(m, *xs)`` runs with ``m`` tapegrad or torch on float64 copies of ``arrays``.
    ``torch_nan``: where torch's second order is NaN, take tapegrad's value (a row
    that says why: torch's NaN there is 0·NaN of an identically zero gradient).
    ``reference``: the same function written with torch ops that torch differentiates
    twice, for rows whose torch op has no (or a wrong) double backward; torch runs it
    in place of ``fn``.
    """
    ref_fn = fn if reference is None else reference
    rng = np.random.default_rng(5)
    ours = _flat(fn(tg, *[tg.tensor(a, requires_grad=True) for a in arrays]))
    theirs = _flat(ref_fn(torch_mod, *[torch_mod.tensor(a, requires_grad=True) for a in arrays]))
    # Outputs differentiable in both (torch's slogdet sign requires grad, with gradient 0;
    # an output wrongly cut from the graph fails the first-order comparison in test_op_table).
    keep = [k for k, (o, r) in enumerate(zip(ours, theirs)) if o.requires_grad and r.requires_grad]
    vs = [rng.uniform(-1, 1, size=o.shape) for o in ours]
    us = [rng.uniform(-1, 1, size=a.shape) for a in arrays]
    values, grads, hvp = second_order(tg, fn, arrays, vs, us, keep)
    ref_values, ref_grads, ref_hvp = second_order(torch_mod, ref_fn, arrays, vs, us, keep)
    _compare(values, ref_values, "output", [v.shape for v in ref_values])
    shapes = [a.shape for a in arrays]
    _compare(grads, ref_grads, "first-order gradient of input", shapes)
    upstream = [vs[k].shape for k in keep]
    if torch_nan:
        ref_hvp = [
            None if h is None else np.where(np.isnan(h), 0.0 if got is None else got, h)
            for h, got in zip(ref_hvp, hvp)
        ]
    _compare(hvp, ref_hvp, "second order: input (then upstream gradient)", shapes + upstream)
