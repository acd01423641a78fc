"""Paths that no test executed (found with the mutation tool's line map, tools/covmap.py).

Each test runs a branch the rest of the suite never reached and compares its values
(and gradients) with torch, so a small change there fails.
"""

import numpy as np
import pytest

import tapegrad as tg

from ._message_check import check_message


def _t(torch, a, rg=False):
    return torch.tensor(np.asarray(a), requires_grad=rg)


def _g(a, rg=False):
    return tg.tensor(np.asarray(a), requires_grad=rg)


def _same(ours, theirs, rtol=1e-7, atol=1e-12):
    theirs = theirs.detach().numpy() if hasattr(theirs, "detach") else np.asarray(theirs)
    ours = ours.detach().numpy() if hasattr(ours, "detach") else np.asarray(ours)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_gradient_with_zeros_matches_torch(torch_mod, include_self):
    torch = torch_mod
    # zeros in the input and in the source: the gradient is the product of the other
    # factors, computed directly (0/0 otherwise)
    base = np.array([[2.0, 0.0, 3.0, 1.5], [0.5, 4.0, 0.0, 2.0]])
    src = np.array([[1.5, 0.0, 2.0, 3.0, 0.5], [0.0, 2.5, 1.0, 0.0, 3.0]])
    index = np.array([[0, 0, 2, 2, 2], [1, 3, 3, 1, 0]])
    up = np.arange(1.0, 9.0).reshape(2, 4)
    outs = []
    for lib, mk in ((torch_mod, lambda a: _t(torch, a, True)), (tg, lambda a: _g(a, True))):
        b, s = mk(base), mk(src)
        idx = lib.tensor(index)
        out = lib.scatter_reduce(b, 1, idx, s, "prod", include_self=include_self)
        out.backward(lib.tensor(up))
        outs.append((out, b.grad, s.grad))
    for ours, theirs in zip(outs[1], outs[0]):
        _same(ours, theirs)


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_unique_consecutive_matches_torch(torch_mod, dim):
    torch = torch_mod
    x = np.array([[1, 1, 2, 2, 3, 1, 1], [1, 1, 2, 2, 3, 1, 2]])
    for flags in ((False, False), (True, False), (False, True), (True, True)):
        kw = dict(return_inverse=flags[0], return_counts=flags[1], dim=dim)
        theirs = torch.unique_consecutive(torch.tensor(x), **kw)
        ours = tg.unique_consecutive(tg.tensor(x), **kw)
        if not any(flags):
            theirs, ours = (theirs,), (ours,)
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _same(a, b)
    # one row along dim 0 / one column along dim 1: nothing to compare
    one = x[:1] if dim != 1 else x[:, :1]
    kw = dict(return_inverse=True, return_counts=True, dim=dim)
    for a, b in zip(
        tg.unique_consecutive(tg.tensor(one), **kw),
        torch.unique_consecutive(torch.tensor(one), **kw),
    ):
        _same(a, b)


def test_inv_ex_of_singular_matrices_matches_torch(torch_mod):
    torch = torch_mod
    # a batch mixing singular and invertible matrices: info names the first zero pivot
    # (as LAPACK's getrf), the invertible ones keep their inverse
    A = np.array(
        [
            [[1.0, 2.0], [2.0, 4.0]],
            [[1.0, 0.0], [0.0, 1.0]],
            [[0.0, 0.0], [0.0, 0.0]],
            [[1.0, 2.0], [3.0, 4.0]],
        ]
    )
    theirs = torch.linalg.inv_ex(torch.tensor(A))
    ours = tg.linalg.inv_ex(tg.tensor(A))
    _same(ours.info, theirs.info)
    ok = theirs.info.numpy() == 0
    _same(ours.inverse.numpy()[ok], theirs.inverse.numpy()[ok])
    A3 = np.array([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])
    _same(tg.linalg.inv_ex(tg.tensor(A3)).info, torch.linalg.inv_ex(torch.tensor(A3)).info)
    with pytest.raises(tg.linalg.LinAlgError):
        tg.linalg.inv_ex(tg.tensor(A3), check_errors=True)
    # invertible: the inverse, differentiable
    a = _g(A[3], True)
    r = tg.linalg.inv_ex(a)
    r.inverse.sum().backward()
    t = _t(torch_mod, A[3], True)
    torch.linalg.inv_ex(t).inverse.sum().backward()
    _same(r.inverse, torch.linalg.inv(torch.tensor(A[3])))
    _same(r.info, torch.zeros((), dtype=torch.int32))
    _same(a.grad, t.grad)


def test_solve_ex_of_a_singular_matrix_from_the_right_matches_torch(torch_mod):
    torch = torch_mod
    A = np.array([[[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 1.0, 1.0]], np.eye(3) * 2])
    B = np.arange(6.0).reshape(2, 1, 3) + 1
    theirs = torch.linalg.solve_ex(torch.tensor(A), torch.tensor(B), left=False)
    ours = tg.linalg.solve_ex(tg.tensor(A), tg.tensor(B), left=False)
    _same(ours.info, theirs.info)
    _same(ours.result, theirs.result)


@pytest.mark.parametrize("name", ["jvp", "hvp", "vhp"])
def test_functional_products_with_v_none_match_torch(torch_mod, name):
    torch = torch_mod

    # v may be None for a one-element input (it is then 1)
    def f(lib):
        return lambda x: (x.exp() * x).sum() if name != "jvp" else x.sin() * 3.0

    x = np.array([0.7])
    theirs = getattr(torch.autograd.functional, name)(f(torch_mod), torch.tensor(x))
    ours = getattr(tg.autograd.functional, name)(f(tg), tg.tensor(x))
    for a, b in zip(ours, theirs):
        _same(a, b)
    with pytest.raises(RuntimeError, match="v can only be None"):
        getattr(tg.autograd.functional, name)(f(tg), tg.tensor(np.array([0.7, 0.2])))


@pytest.mark.parametrize("p", [None, 2, -2, "nuc", "fro", 1, -1, np.inf, -np.inf])
def test_cond_of_integer_and_empty_matrices_matches_torch(torch_mod, p):
    torch = torch_mod
    A = np.array([[[2, 1], [1, 3]], [[1, 0], [4, 5]]])
    theirs = torch.linalg.cond(torch.tensor(A).double(), p)
    ours = tg.linalg.cond(tg.tensor(A), p)  # an integer matrix becomes float
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    assert ours.dtype == tg.float32
    empty = np.zeros((3, 0, 0))
    _same(tg.linalg.cond(tg.tensor(empty), p), torch.linalg.cond(torch.tensor(empty), p))


def test_cond_refuses_an_unknown_norm_and_a_vector(torch_mod):
    torch = torch_mod
    with pytest.raises(RuntimeError, match="invalid norm type"):
        tg.linalg.cond(tg.eye(2), 3)
    with pytest.raises(RuntimeError):
        torch.linalg.cond(torch.eye(2), 3)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tg.linalg.cond(tg.ones(3))


def test_sigmoid_and_silu_in_half_precision_match_torch(torch_mod):
    torch = torch_mod
    dtype = "float16"  # NOTE: bfloat16 (ml_dtypes, kind "V") computes in float32
    x = np.array([-30.0, -5.0, -0.5, 0.0, 0.25, 3.0, 12.0, 80.0])
    for name in ("sigmoid", "silu"):
        t = torch.tensor(x).to(getattr(torch_mod, dtype))
        ours = getattr(tg.nn.functional, name)(tg.tensor(x).to(getattr(tg, dtype)))
        theirs = getattr(torch.nn.functional, name)(t)
        assert str(ours.dtype).split(".")[-1] == dtype
        np.testing.assert_allclose(
            ours.float().numpy(), theirs.float().numpy(), rtol=1e-2, atol=1e-3
        )


def test_matmul_of_many_rows_by_a_broadcast_matrix_matches_torch(torch_mod):
    torch = torch_mod
    # a stack times a matrix broadcast over the stack (stride 0) runs as blocks of
    # rows: more rows than one block holds, and a last block that is shorter
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 700, 24))
    w = rng.standard_normal((24, 30))
    b = np.broadcast_to(w, (3, 24, 30))
    _same(
        tg.matmul(tg.tensor(a), tg.tensor(b)),
        torch.matmul(torch.tensor(a), torch.tensor(w)),
        rtol=1e-12,
        atol=1e-12,
    )


def test_grad_with_batched_grad_outputs_and_create_graph_matches_torch(torch_mod):
    x = np.array([0.3, -1.2, 2.0])
    v = np.eye(3) * np.array([[1.0], [2.0], [-1.0]])
    res = []
    for lib in (torch_mod, tg):
        xt = lib.tensor(x, requires_grad=True)
        y = xt.sin() * xt
        (g,) = lib.autograd.grad(y, xt, lib.tensor(v), create_graph=True, is_grads_batched=True)
        (h,) = lib.autograd.grad(g.sum(), xt)
        res.append((g, h))
    for a, b in zip(res[1], res[0]):
        _same(a, b)


def _errors(lib):
    F = lib.nn.functional
    f32 = lib.float32
    w = lib.ones(5, 3)
    x4 = lib.ones(1, 2, 5, 5)
    k = lib.ones(3, 2, 3, 3)
    return {
        "embedding_bag-mode": lambda: F.embedding_bag(lib.tensor([[0, 1]]), w, mode="prod"),
        "embedding_bag-2d-offsets": lambda: F.embedding_bag(
            lib.tensor([[0, 1]]), w, lib.tensor([0])
        ),
        "embedding_bag-1d-no-offsets": lambda: F.embedding_bag(lib.tensor([0, 1]), w),
        "embedding_bag-3d": lambda: F.embedding_bag(lib.zeros(1, 1, 1, dtype=lib.int64), w),
        "embedding_bag-psw-mean": lambda: F.embedding_bag(
            lib.tensor([[0, 1]]), w, mode="mean", per_sample_weights=lib.ones(1, 2)
        ),
        "histogramdd-bins": lambda: lib.histogramdd(lib.ones(4, 2), bins=[2, 2, 2]),
        "histogramdd-range": lambda: lib.histogramdd(lib.ones(4, 2), bins=2, range=[0.0, 1.0]),
        "histogramdd-zero-bins": lambda: lib.histogramdd(lib.ones(4, 2), bins=[2, 0]),
        "histogramdd-weight": lambda: lib.histogramdd(lib.ones(4, 2), bins=2, weight=lib.ones(3)),
        "histc-int": lambda: lib.histc(lib.tensor([1, 2, 3])),
        "histc-min-max": lambda: lib.histc(lib.tensor([1.0, 2.0]), bins=4, min=3, max=1),
        "put-range": lambda: lib.ones(2, 2).put(lib.tensor([4]), lib.tensor([1.0])),
        "put-count": lambda: lib.ones(2, 2).put(lib.tensor([0, 1]), lib.tensor([1.0])),
        "softmax-dim": lambda: F.softmax(lib.ones(2, 3), dim=2),
        "one_hot-float": lambda: F.one_hot(lib.tensor([1.0])),
        "one_hot-negative": lambda: F.one_hot(lib.tensor([-1, 0])),
        "dropout-p": lambda: F.dropout(lib.ones(3), p=1.5),
        "conv2d-weight-3d": lambda: F.conv2d(x4, lib.ones(3, 2, 3)),
        "conv2d-negative-padding": lambda: F.conv2d(x4, k, padding=-1),
        "avg_pool2d-divisor": lambda: F.avg_pool2d(x4, 2, divisor_override=0),
        "batch_norm-eval-no-stats": lambda: F.batch_norm(lib.ones(2, 3), None, None),
        "layer_norm-weight": lambda: F.layer_norm(lib.ones(2, 3), (3,), weight=lib.ones(2)),
        "t-3d": lambda: lib.ones(2, 2, 2).t(),
        "tensor_split-0": lambda: lib.tensor_split(lib.ones(4), 0),
        "rot90-dims": lambda: lib.rot90(lib.ones(2, 2), 1, [0]),
        "rot90-same-dims": lambda: lib.rot90(lib.ones(2, 2), 1, [1, 1]),
        "unfold-step": lambda: lib.ones(5).unfold(0, 2, 0),
        "repeat_interleave-count": lambda: lib.repeat_interleave(lib.ones(3), lib.tensor([1, 2])),
        "repeat_interleave-negative": lambda: lib.repeat_interleave(
            lib.ones(2), lib.tensor([1, -1])
        ),
        "meshgrid-indexing": lambda: lib.meshgrid(lib.ones(2), lib.ones(3), indexing="yx"),
        "meshgrid-2d": lambda: lib.meshgrid(lib.ones(2, 2), indexing="ij"),
        "adaptive_max_pool1d-4d": lambda: F.adaptive_max_pool1d(lib.ones(1, 1, 1, 4), 2),
        "adaptive_avg_pool2d-5d": lambda: F.adaptive_avg_pool2d(lib.ones(1, 1, 1, 4, 4), 2),
        "pixel_shuffle-channels": lambda: F.pixel_shuffle(lib.ones(1, 3, 2, 2), 2),
        "group_norm-weight": lambda: F.group_norm(lib.ones(2, 4, 3), 2, weight=lib.ones(3)),
        "cond-3": lambda: lib.linalg.cond(lib.eye(2, dtype=f32), 3),
        "conv1d-not-a-tensor": lambda: F.conv1d([[1.0, 2.0]], lib.ones(1, 1, 1)),
        "conv1d-4d-input": lambda: F.conv1d(lib.ones(1, 1, 1, 4), lib.ones(1, 1, 1)),
        "conv1d-weight-2d": lambda: F.conv1d(lib.ones(1, 1, 4), lib.ones(1, 1)),
        "conv1d-groups": lambda: F.conv1d(lib.ones(1, 3, 4), lib.ones(2, 3, 1), groups=2),
        "conv1d-bias": lambda: F.conv1d(lib.ones(1, 1, 4), lib.ones(2, 1, 1), lib.ones(3)),
        "conv1d-dtypes": lambda: F.conv1d(lib.ones(1, 1, 4), lib.ones(1, 1, 1, dtype=lib.float64)),
        "conv3d-weight-4d": lambda: F.conv3d(lib.ones(1, 1, 2, 2, 2), lib.ones(1, 1, 1, 1)),
        "conv_transpose1d-groups": lambda: F.conv_transpose1d(
            lib.ones(1, 3, 4), lib.ones(2, 1, 1), groups=2
        ),
        "affine_grid-int-theta": lambda: F.affine_grid(
            lib.ones(1, 2, 3, dtype=lib.int64), [1, 1, 2, 2], align_corners=False
        ),
        "affine_grid-2d-shape": lambda: F.affine_grid(
            lib.ones(1, 3, 4), [1, 1, 2, 2], align_corners=False
        ),
        "affine_grid-3d-shape": lambda: F.affine_grid(
            lib.ones(1, 2, 3), [1, 1, 2, 2, 2], align_corners=False
        ),
        "affine_grid-size": lambda: F.affine_grid(lib.ones(1, 2, 3), [1, 2], align_corners=False),
        "adaptive_avg_pool1d-4d": lambda: F.adaptive_avg_pool1d(lib.ones(1, 1, 1, 4), 2),
        "adaptive_max_pool3d-3d": lambda: F.adaptive_max_pool3d(lib.ones(1, 4, 4), 2),
        "where-broadcast": lambda: lib.where(lib.ones(2) > 0, lib.ones(3), lib.ones(2)),
        "add-shapes": lambda: lib.add(lib.ones(2), lib.ones(3)),
        "instance_norm-no-stats": lambda: F.instance_norm(lib.ones(2, 3, 4), use_input_stats=False),
        "interpolate-no-size": lambda: F.interpolate(lib.ones(1, 1, 4)),
        "interpolate-both": lambda: F.interpolate(lib.ones(1, 1, 4), size=2, scale_factor=2.0),
        "interpolate-bilinear-3d": lambda: F.interpolate(
            lib.ones(1, 1, 4), size=2, mode="bilinear"
        ),
        "gaussian_nll-var-shape": lambda: F.gaussian_nll_loss(
            lib.ones(2, 3), lib.ones(2, 3), lib.ones(2, 2)
        ),
        "gaussian_nll-negative-var": lambda: F.gaussian_nll_loss(
            lib.ones(2, 3), lib.ones(2, 3), -lib.ones(2, 3)
        ),
        "pairwise_distance-dims": lambda: F.pairwise_distance(lib.ones(2, 3), lib.ones(2, 4)),
        "cosine_embedding-dims": lambda: F.cosine_embedding_loss(
            lib.ones(2, 3), lib.ones(2, 3), lib.ones(2, 2)
        ),
        "block_diag-3d": lambda: lib.block_diag(lib.ones(2, 2, 2)),
        "mv-dims": lambda: lib.mv(lib.ones(2, 3), lib.ones(2)),
        "renorm-p": lambda: lib.renorm(lib.ones(2, 2), -1, 0, 1.0),
        "lu_unpack-dims": lambda: lib.lu_unpack(lib.ones(2), lib.ones(2, dtype=lib.int32)),
        "scatter-reduce-kind": lambda: lib.zeros(3).scatter(
            0, lib.tensor([0]), lib.ones(1), reduce="max"
        ),
        "pad-mode": lambda: F.pad(lib.ones(1, 1, 3), (1, 1), mode="wrap"),
        "cov-weights": lambda: lib.cov(lib.ones(2, 3), fweights=lib.tensor([1.0, 2.0, 3.0])),
        "isin-numbers": lambda: lib.isin(1, 2),
        "nonzero_static-size": lambda: lib.nonzero_static(lib.ones(3), size=-1),
    }


_ERROR_CASES = sorted(_errors(tg))

# Note [Checked messages] in tests/_message_check.py
_MESSAGES = {
    "cosine_embedding-dims": {"waive": {"ranks": "torch fails on the target's rank first"}},
    "embedding_bag-2d-offsets": {"waive": {"op": "torch's Python-level text, shortened"}},
}


@pytest.mark.parametrize("case", _ERROR_CASES)
def test_bad_input_raises_torchs_exception_type(torch_mod, case):
    with pytest.raises(Exception) as theirs:
        _errors(torch_mod)[case]()
    with pytest.raises(Exception) as ours:
        _errors(tg)[case]()
    # torch's LinAlgError subclasses RuntimeError, tapegrad's too: compare the family
    want = theirs.type
    assert issubclass(ours.type, want) or ours.type.__name__ == want.__name__, (
        ours.type,
        want,
        str(ours.value),
    )
    check_message(case, ours.value, theirs.value, **_MESSAGES.get(case, {}))


def test_parameter_containers_behave_like_torch(torch_mod):
    torch = torch_mod
    res = []
    for lib in (torch, tg):
        nn = lib.nn
        pl = nn.ParameterList([nn.Parameter(lib.ones(2)), nn.Parameter(lib.zeros(3))])
        pl[1] = nn.Parameter(lib.full((4,), 2.0))
        sub = pl[0:2]
        got = [
            type(sub).__name__,
            len(sub),
            [tuple(p.shape) for p in pl],
            float(pl[-1].detach().sum()),
        ]
        with pytest.raises(IndexError):
            pl[2]
        pd = nn.ParameterDict({"a": nn.Parameter(lib.ones(1)), "b": nn.Parameter(lib.ones(2))})
        got += [
            len(pd),
            list(pd),
            [k for k, _ in pd.items()],
            [tuple(v.shape) for v in pd.values()],
        ]
        got += [pd.get("zz", 7), tuple(pd.pop("a").shape), list(pd.keys())]
        ml = nn.ModuleList([nn.Linear(1, 1), nn.ReLU(), nn.Tanh()])
        del ml[1]
        got += [[type(m).__name__ for m in ml], list(ml._modules)]
        ml = nn.ModuleList([nn.Linear(1, 1), nn.ReLU()])
        ml.insert(1, nn.Tanh())
        got += [[type(m).__name__ for m in ml], list(ml._modules)]
        seq = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid())
        seq[-1] = nn.Identity()
        got += [[type(m).__name__ for m in seq]]
        md = nn.ModuleDict({"x": nn.ReLU(), "y": nn.Tanh()})
        got += [
            list(md.keys()),
            [k for k, _ in md.items()],
            [type(m).__name__ for m in md.values()],
        ]
        got += [type(md.pop("x")).__name__, list(md.keys())]
        res.append(got)
    assert res[1] == res[0]


def test_transfer_parametrizations_and_params_matches_torch(torch_mod):
    torch = torch_mod
    outs = []
    for lib in (torch, tg):
        nn, P = lib.nn, lib.nn.utils.parametrize
        lib.manual_seed(0)

        class Double(nn.Module):
            def forward(self, x):
                return x * 2

            def right_inverse(self, x):
                return x / 2

        a = nn.Linear(3, 2)
        with lib.no_grad():
            a.weight.copy_(lib.tensor(np.arange(6.0).reshape(2, 3), dtype=lib.float32))
        P.register_parametrization(a, "weight", Double())
        b = nn.Linear(3, 2)
        assert P.transfer_parametrizations_and_params(nn.Linear(3, 2), b) is b  # none: as is
        P.transfer_parametrizations_and_params(a, b)
        c = nn.Linear(3, 2)
        del c.weight
        P.transfer_parametrizations_and_params(a, c, "weight")
        outs.append(
            (
                b.weight.detach().numpy().copy(),
                b.parametrizations.weight.original.detach().numpy().copy(),
                c.weight.detach().numpy().copy(),
                P.is_parametrized(b, "weight"),
                P.is_parametrized(c, "bias"),
            )
        )
    for ours, theirs in zip(outs[1], outs[0]):
        np.testing.assert_array_equal(ours, theirs)


def test_queue_callback_runs_after_backward_and_only_inside_it():
    from tapegrad.autograd import engine

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    order = []

    def hook(g):
        engine.queue_callback(lambda: order.append(("callback", x.grad.tolist())))
        order.append("hook")

    y = (x * 3.0).sum()
    x.register_hook(hook)
    y.backward()
    # the callback ran once backward had finished: the gradient is accumulated
    assert order == ["hook", ("callback", [3.0, 3.0])]
    with pytest.raises(RuntimeError, match="no backward"):
        engine.queue_callback(lambda: None)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")
def test_gradient_accumulated_into_a_recorded_grad_matches_torch(torch_mod):
    # after backward(create_graph=True) x.grad has a graph: a later plain backward adds
    res = []
    for lib in (torch_mod, tg):
        x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        (x**3).sum().backward(create_graph=True)
        (x * x).sum().backward()
        res.append(x.grad.detach().numpy().copy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-6)
    # NOTE: torch adds into the recorded x.grad in place (an earlier reference to it sees
    # the sum); tapegrad makes a new tensor


def test_zero_dim_sort_family_and_quantile_keepdim_match_torch(torch_mod):
    torch = torch_mod
    for name in ("sort", "argsort", "kthvalue", "median", "mode", "max", "min", "cummax"):
        args = (1,) if name == "kthvalue" else ()
        ours = (
            getattr(tg, name)(tg.tensor(2.5), *args, dim=0)
            if name != "argsort"
            else (tg.argsort(tg.tensor(2.5), dim=0))
        )
        theirs = getattr(torch, name)(torch.tensor(2.5), *args, dim=0)
        ours = ours if isinstance(ours, tuple) else (ours,)
        theirs = theirs if isinstance(theirs, tuple) else (theirs,)
        for a, b in zip(ours, theirs):
            a = a.numpy() if hasattr(a, "numpy") else a
            assert a.shape == tuple(b.shape) and str(a.dtype) == str(b.dtype).split(".")[-1]
            np.testing.assert_array_equal(a, b.numpy())
    x = np.arange(12.0).reshape(3, 4)
    for q in (0.3, [0.25, 0.5]):
        _same(
            tg.quantile(
                tg.tensor(x),
                tg.tensor(q, dtype=tg.float64) if isinstance(q, list) else q,
                keepdim=True,
            ),
            torch.quantile(
                torch.tensor(x),
                torch.tensor(q, dtype=torch.float64) if isinstance(q, list) else q,
                keepdim=True,
            ),
        )


def test_histc_of_constant_and_empty_data_matches_torch(torch_mod):
    torch = torch_mod
    for data in ([2.0, 2.0, 2.0], [], [0.5, -1.0, 3.0]):
        for kw in ({"bins": 4}, {"bins": 3, "min": 0, "max": 0}, {"bins": 5, "min": -1, "max": 1}):
            _same(
                tg.histc(tg.tensor(data, dtype=tg.float64), **kw),
                torch.histc(torch.tensor(data, dtype=torch.float64), **kw),
            )


def test_qr_mode_r_matches_torch_and_has_no_gradient(torch_mod):
    torch = torch_mod
    A = np.array([[2.0, 1.0, 0.5], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0], [1.0, 0.0, 1.0]])
    ours = tg.linalg.qr(tg.tensor(A), mode="r")
    theirs = torch.linalg.qr(torch.tensor(A), mode="r")
    _same(ours[0], theirs[0])
    _same(ours[1], theirs[1], rtol=1e-10, atol=1e-12)
    a = tg.tensor(A, requires_grad=True)
    with pytest.raises(RuntimeError, match="mode='r'"):
        tg.linalg.qr(a, mode="r")[1].sum().backward()
    with pytest.raises(RuntimeError, match="unrecognized mode"):
        tg.linalg.qr(tg.tensor(A), mode="full")


def test_svd_lowrank_with_a_mean_and_pca_lowrank_reconstruct_like_torch(torch_mod):
    torch = torch_mod
    rng = np.random.default_rng(3)
    low = rng.standard_normal((8, 2)) @ rng.standard_normal((2, 5))
    M = np.broadcast_to(rng.standard_normal((1, 5)), (8, 5)).copy()
    A = low + M
    tg.manual_seed(0)
    U, S, V = tg.svd_lowrank(tg.tensor(A), q=3, niter=2, M=tg.tensor(M))
    np.testing.assert_allclose((U.numpy() * S.numpy()) @ V.numpy().T, low, atol=1e-10)
    tS = torch.svd_lowrank(torch.tensor(A), q=3, niter=2, M=torch.tensor(M))[1]
    np.testing.assert_allclose(S.numpy()[:2], tS.numpy()[:2], rtol=1e-10)
    U, S, V = tg.pca_lowrank(tg.tensor(A))  # q = min(6, m, n), centred
    centred = A - A.mean(0)
    np.testing.assert_allclose((U.numpy() * S.numpy()) @ V.numpy().T, centred, atol=1e-10)
    tS = torch.pca_lowrank(torch.tensor(A))[1]
    np.testing.assert_allclose(S.numpy()[:2], tS.numpy()[:2], rtol=1e-10)
    assert S.shape == tuple(tS.shape)


def test_assigning_a_child_parameter_or_buffer_again_keeps_its_position_like_torch(torch_mod):
    # a bug: re-assigning moved the name to the end, so parameters(), state_dict() and an
    # optimizer's parameter order changed (e.g. model.fc = Linear(...) when fine-tuning)
    res = []
    for lib in (torch_mod, tg):
        nn = lib.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b = nn.Linear(1, 1), nn.Linear(1, 1)
                self.register_buffer("x", lib.ones(1))
                self.register_buffer("y", lib.ones(1))
                self.p, self.q = nn.Parameter(lib.ones(1)), nn.Parameter(lib.ones(1))

        m = M()
        m.a = nn.Linear(2, 2)
        m.register_buffer("x", lib.zeros(2))
        m.p = nn.Parameter(lib.zeros(1))
        m.register_parameter("q", nn.Parameter(lib.zeros(3)))
        m.add_module("b", nn.Linear(3, 3))
        seq = nn.Sequential(nn.Linear(1, 1), nn.ReLU(), nn.Linear(1, 2))
        seq[0] = nn.Linear(1, 3)
        ml = nn.ModuleList([nn.Linear(1, 1), nn.ReLU(), nn.Tanh()])
        ml[0] = nn.Identity()
        del ml[1]
        res.append(
            (
                list(m.state_dict()),
                [n for n, _ in m.named_parameters()],
                [n for n, _ in seq.named_parameters()],
                [type(c).__name__ for c in ml],
            )
        )
    assert res[1] == res[0]


def _StringGrad(lib):
    class StringGrad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return "not a tensor"

    return StringGrad


def _autograd_cases(lib):
    def batched(outs, grads):
        x = lib.ones(2, requires_grad=True)
        y = x * 2
        outs = [y if o == "y" else lib.ones(2) for o in outs]
        return lib.autograd.grad(outs, x, grads, is_grads_batched=True)

    class Early(lib.nn.Module):
        def __init__(self, value):
            self.v = value  # before Module.__init__

    def module_with(setup):
        m = lib.nn.Module()
        m.register_buffer("b", lib.ones(1))
        m.add_module("a", lib.nn.ReLU())
        setup(m)

    return {
        "hook-on-a-constant": lambda: lib.ones(2).register_hook(lambda g: g),
        "retain_grad-of-a-constant": lambda: lib.ones(2).retain_grad(),
        "batched-without-grads": lambda: batched(["y"], None),
        "batched-count": lambda: batched(["y", "y"], [lib.ones(3, 2)]),
        "batched-shape": lambda: batched(["y"], [lib.ones(3, 3)]),
        "batched-constant-output": lambda: batched(["y", "c"], [lib.ones(3, 2)] * 2),
        "parameter-before-init": lambda: Early(lib.nn.Parameter(lib.ones(1))),
        "module-before-init": lambda: Early(lib.nn.ReLU()),
        "int-as-child": lambda: module_with(lambda m: setattr(m, "a", 3)),
        "int-as-buffer": lambda: module_with(lambda m: setattr(m, "b", 3)),
        "dotted-buffer-name": lambda: lib.nn.Module().register_buffer("a.b", lib.ones(1)),
        "backward-inputs-empty": lambda: (
            (lib.ones(2, requires_grad=True) * 2).sum().backward(inputs=[])
        ),
        "grad-inputs-empty": lambda: lib.autograd.grad(
            (lib.ones(2, requires_grad=True) * 2).sum(), []
        ),
        "backward-inputs-not-tensors": lambda: (
            (lib.ones(2, requires_grad=True) * 2).sum().backward(inputs=[3])
        ),
        "function-returns-a-string": lambda: (
            _StringGrad(lib).apply(lib.ones(2, requires_grad=True)).sum().backward()
        ),
        "index_select-float-index": lambda: lib.index_select(lib.ones(3), 0, lib.zeros(2)),
        "gather-float-index": lambda: lib.gather(lib.ones(3), 0, lib.zeros(2)),
        "take-float-index": lambda: lib.take(lib.ones(3), lib.zeros(2)),
    }


@pytest.mark.parametrize("case", sorted(_autograd_cases(tg)))
def test_autograd_and_module_misuse_raises_torchs_exception_type(torch_mod, case):
    with pytest.raises(Exception) as theirs:
        _autograd_cases(torch_mod)[case]()
    with pytest.raises(theirs.type):
        _autograd_cases(tg)[case]()


def test_hook_handles_as_context_managers_and_deleting_members_match_torch(torch_mod):
    res = []
    for lib in (torch_mod, tg):
        x = lib.ones(2, requires_grad=True)
        seen = []
        with x.register_hook(lambda g: seen.append("leaf")):
            (x * 2).sum().backward()
        y = x * 3
        with y.grad_fn.register_hook(lambda gi, go: seen.append("node")):
            pass
        y.sum().backward()  # both hooks removed
        m = lib.nn.Module()
        m.register_buffer("b", lib.ones(1))
        m.register_parameter("p", lib.nn.Parameter(lib.ones(1)))
        m.add_module("a", lib.nn.ReLU())
        m.x = 1
        m.a = None  # a child may be set to None
        none_child = (m._modules["a"], len(list(m.children())))
        del m.b, m.p, m.x
        res.append((seen, none_child, hasattr(m, "b"), hasattr(m, "p"), list(m.state_dict())))
    assert res[1] == res[0]


def test_packed_sequence_conversions_and_padding_helpers_match_torch(torch_mod):
    torch = torch_mod
    rnn_t, rnn_g = torch.nn.utils.rnn, tg.nn.utils.rnn
    seqs = [np.arange(6.0).reshape(3, 2), np.arange(4.0).reshape(2, 2) + 10]
    ps_t = rnn_t.pack_sequence([torch.tensor(s, dtype=torch.float32) for s in seqs])
    ps_g = rnn_g.pack_sequence([tg.tensor(s, dtype=tg.float32) for s in seqs])
    assert ps_g.is_cuda is ps_t.is_cuda is False
    for conv in (lambda p: p.double(), lambda p: p.double().float(), lambda p: p.to(p.data.dtype)):
        a, b = conv(ps_g), conv(ps_t)
        _same(a.data, b.data)
        _same(a.batch_sizes, b.batch_sizes)
    assert ps_g.to(ps_g.data.dtype) is ps_g  # nothing to convert: the same object, as torch
    # a tensor of sequences, left padding, unpadding time-first
    stacked = np.arange(12.0).reshape(2, 3, 2)
    _same(rnn_g.pad_sequence(tg.tensor(stacked)), rnn_t.pad_sequence(torch.tensor(stacked)))
    _same(
        rnn_g.pad_sequence([tg.tensor(s) for s in seqs], padding_side="left"),
        rnn_t.pad_sequence([torch.tensor(s) for s in seqs], padding_side="left"),
    )
    padded = np.arange(12.0).reshape(3, 2, 2)
    ours = rnn_g.unpad_sequence(tg.tensor(padded), tg.tensor([3, 1]))
    theirs = rnn_t.unpad_sequence(torch.tensor(padded), torch.tensor([3, 1]))
    for a, b in zip(ours, theirs, strict=True):
        _same(a, b)
    with pytest.raises(RuntimeError):
        rnn_g.pad_sequence([])
    with pytest.raises(ValueError):
        rnn_g.pad_sequence([tg.ones(2)], padding_side="middle")
    with pytest.raises(RuntimeError, match="exceeds"):
        rnn_g.pack_padded_sequence(tg.ones(2, 1), [3])


def test_misc_math_edge_paths_match_torch(torch_mod):
    torch = torch_mod
    _same(tg.mvlgamma(tg.tensor([2, 3]), 2), torch.mvlgamma(torch.tensor([2, 3]).float(), 2))
    for data in ([1, 2], [True, False]):
        _same(tg.nan_to_num(tg.tensor(data)), torch.nan_to_num(torch.tensor(data)))
    assert tg.equal(tg.ones(2), tg.ones(2)) is torch.equal(torch.ones(2), torch.ones(2)) is True
    assert tg.equal(tg.ones(2), tg.ones(3)) is torch.equal(torch.ones(2), torch.ones(3)) is False
    assert tg.equal(tg.ones(2), tg.tensor([1.0, 2.0])) is False
    x = np.array([0.5, 1.5, 2.5])
    a, b = tg.tensor(x), torch.tensor(x)
    a.polygamma_(1)
    b.polygamma_(1)
    _same(a, b)
    for call in (
        lambda lib: lib.mvlgamma(lib.ones(2), 0),
        lambda lib: lib.polygamma(-1, lib.ones(2)),
        lambda lib: lib.isclose(lib.ones(2), lib.ones(2), rtol=-1.0),
    ):
        with pytest.raises(RuntimeError):
            call(torch)
        with pytest.raises(RuntimeError):
            call(tg)


def test_transformer_causal_hint_and_unbatched_encoder_match_torch(torch_mod):
    torch = torch_mod
    outs = []
    for lib in (torch, tg):
        lib.manual_seed(0)
        layer = lib.nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0)
        enc = lib.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        with lib.no_grad():
            for i, p in enumerate(enc.parameters()):
                p.copy_(lib.tensor(np.cos(np.arange(p.numel()) + i).reshape(tuple(p.shape))))
        src = lib.tensor(np.sin(np.arange(12.0)).reshape(3, 4), dtype=lib.float32)
        causal = lib.nn.Transformer.generate_square_subsequent_mask(3)
        bool_causal = causal != 0
        outs.append(
            [
                enc(src, mask=causal),
                enc(src, mask=bool_causal),
                enc(src, mask=causal[:2, :2].new_zeros(3, 3)),
            ]
        )
    for a, b in zip(outs[1], outs[0]):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_backward_and_grad_take_array_gradients_cast_to_the_outputs_dtype():
    # seed 1803 survivor (engine.py: the wrapping of a non-Tensor gradient): torch refuses
    # a non-Tensor gradient (TypeError); tapegrad takes an array or a list as the Tensor
    # of it, in the output's dtype
    want = np.array([3.0, 6.0], np.float32)
    for grad in (np.array([1.0, 2.0]), [1.0, 2.0]):
        x = tg.ones(2, requires_grad=True)
        (x * 3).backward(grad)
        assert x.grad.dtype == tg.float32
        np.testing.assert_array_equal(x.grad.numpy(), want)
        x = tg.ones(2, requires_grad=True)
        (g,) = tg.autograd.grad(x * 3, x, [grad])
        np.testing.assert_array_equal(g.numpy(), want)


@pytest.mark.parametrize("sizes", [(3,), (-1,)])
def test_expand_to_fewer_sizes_than_dims_raises_like_torch(torch_mod, sizes):
    # seed 1803 survivor (shape.py: the error dropped): with it gone, a size of 3 for a
    # (2, 3) tensor silently broadcast to (2, 3)
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="number of sizes"):
            lib.ones(2, 3).expand(*sizes)


def test_cholesky_solve_of_a_non_square_right_hand_side_matches_torch(torch_mod):
    # seed 1803 survivor (solve_more.py: B's row count read from shape[1]): every test's B
    # was square
    torch = torch_mod
    A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    L = np.linalg.cholesky(A)
    for B in (np.arange(6.0).reshape(3, 2), np.arange(12.0).reshape(2, 3, 2)):
        _same(
            tg.cholesky_solve(tg.tensor(B), tg.tensor(L)),
            torch.cholesky_solve(torch.tensor(B), torch.tensor(L)),
            rtol=1e-10,
        )
    with pytest.raises(RuntimeError):
        tg.cholesky_solve(tg.ones(2, 3), tg.tensor(L))


@pytest.mark.parametrize("name", ["smooth_l1_loss", "huber_loss"])
def test_loss_of_differently_sized_target_warns_like_torch(torch_mod, name):
    # seed 1803 survivor (_losses_pointwise.py: the warning dropped)
    for lib in (torch_mod, tg):
        with pytest.warns(UserWarning, match="target size"):
            getattr(lib.nn.functional, name)(lib.ones(3, 1), lib.ones(3))


def test_mv_size_mismatch_names_both_shapes_like_torch(torch_mod):
    # seed 1803 survivor (products.py: the message's row count read from shape[1])
    # (torch: "size mismatch, got input (2), mat (2x3), vec (2)")
    with pytest.raises(RuntimeError, match=r"size mismatch, got input \(2x3\) and vec \(2\)"):
        tg.mv(tg.ones(2, 3), tg.ones(2))
    with pytest.raises(RuntimeError, match=r"size mismatch.*\(2x3\).*vec \(2\)"):
        torch_mod.mv(torch_mod.ones(2, 3), torch_mod.ones(2))
