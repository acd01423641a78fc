"""nn modules, parametrizations and hooks on paths no other test executed (found with a
line map of the whole suite), compared with torch."""

import numpy as np
import pytest

import tapegrad as tg

from ._uncovered_common import _same


def _norm_repr(text):
    """torch's container repr with tapegrad's names and indentation."""
    import re  # noqa: PLC0415

    text = re.sub(r"torch\.(FloatTensor|float32)", "float32", text)
    return [line.strip() for line in text.splitlines()]


def test_module_reprs_dir_and_bookkeeping_match_torch(torch_mod):
    reprs = []
    for lib in (tg, torch_mod):
        nn = lib.nn
        pl = nn.ParameterList([nn.Parameter(lib.ones(2, 3)), 3])
        pd = nn.ParameterDict({"a": nn.Parameter(lib.ones(2)), "b": "x"})
        mods = [
            pl,
            pd,
            nn.RNN(2, 3, bias=False, batch_first=True),
            nn.RNNCell(2, 3, nonlinearity="relu"),
            nn.EmbeddingBag(3, 2, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True),
            nn.Upsample(scale_factor=(2, 3)),
        ]
        reprs.append([_norm_repr(repr(m)) for m in mods])
        assert not [k for k in dir(pl) if k.isdigit()]
        lin = nn.Linear(2, 2)
        lin.register_buffer("stat", lib.zeros(2))
        assert {"weight", "bias", "stat"} <= set(dir(lin))
    assert reprs[0] == reprs[1]


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")
def test_module_state_changes_match_torch(torch_mod):
    res = []
    for lib in (tg, torch_mod):
        nn = lib.nn
        lib.manual_seed(0)
        outer = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
        outer.register_parameter("scale", nn.Parameter(lib.ones(1)))
        names = [n for n, _ in outer.named_parameters(recurse=False)]
        # zero_grad(set_to_none=False) of a gradient that has a graph (create_graph)
        x = lib.tensor([[1.0, 2.0]])
        (outer(x) * outer.scale).sum().backward(create_graph=True)
        had_graph = outer.scale.grad.grad_fn is not None
        outer.zero_grad(set_to_none=False)
        zeroed = (outer.scale.grad.grad_fn is None, outer.scale.grad.abs().sum().item())
        # to(dtype) converts the gradients as well
        outer.scale.grad = lib.ones(1)
        outer.double()
        grad_dtype = str(outer.scale.grad.dtype).split(".")[-1]
        outer.float()
        w_dtype = str(outer[0].weight.dtype).split(".")[-1]
        seq = nn.Sequential(nn.ReLU())
        seq.insert(-1, nn.Tanh())
        seq.insert(2, nn.Sigmoid())
        order = [type(m).__name__ for m in seq]
        md = nn.ModuleDict({"a": nn.ReLU()})
        md.clear()
        res.append((names, had_graph, zeroed, grad_dtype, w_dtype, order, len(md)))
    assert res[0] == res[1]


def test_unfold_module_and_embedding_bag_weight_match_torch(torch_mod):
    x = np.arange(2 * 3 * 4 * 5.0).reshape(2, 3, 4, 5)
    w = np.arange(6.0).reshape(3, 2)
    outs = []
    for lib in (tg, torch_mod):
        u = lib.nn.Unfold((2, 3), dilation=1, padding=1, stride=2)(lib.tensor(x))
        bag = lib.nn.EmbeddingBag(3, 2, mode="sum", _weight=lib.tensor(w))
        outs.append([u, bag(lib.tensor([[0, 2], [1, 1]])), bag.weight])
    for a, b in zip(*outs):
        _same(a, b)


def test_transformer_string_activation_custom_parts_and_unbatched_decoder_match_torch(torch_mod):
    models = []
    for lib in (tg, torch_mod):
        lib.manual_seed(0)
        nn = lib.nn
        layer = nn.TransformerEncoderLayer(4, 2, 8, 0.0, activation="relu")
        enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 8, 0.0), 1)
        model = nn.Transformer(4, 2, custom_encoder=enc, custom_decoder=dec, dropout=0.0)
        assert model.encoder is enc and model.decoder is dec
        models.append(model)
    ours, theirs = models
    state = {k: tg.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)
    assert sorted(state) == sorted(ours.state_dict())
    # unbatched (2-D) source and target, a causal target mask
    src = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    tgt = np.linspace(1.0, -0.5, 8).reshape(2, 4)
    mask = np.triu(np.full((2, 2), -np.inf), 1)
    res = [
        m(*(lib.tensor(a, dtype=lib.float32) for a in (src, tgt)), tgt_mask=lib.tensor(mask))
        for m, lib in ((ours, tg), (theirs, torch_mod))
    ]
    _same(res[0], res[1], rtol=1e-5, atol=1e-6)


def _parametrizations(lib):
    nn = lib.nn

    class Split(nn.Module):  # weight = a + b, from two originals
        def forward(self, a, b):
            return a + b

        def right_inverse(self, w):
            return [w * 0.25, w * 0.75]

    class Double(nn.Module):  # no right_inverse: the weight cannot be assigned
        def forward(self, w):
            return w * 2

    class Returns(nn.Module):
        def __init__(self, forward=None, inverse=None):
            super().__init__()
            self.f, self.i = forward, inverse

        def forward(self, w):
            return w if self.f is None else self.f(w)

        def right_inverse(self, w):
            return w if self.i is None else self.i(w)

    return nn, lib.nn.utils.parametrize, Split, Double, Returns


def _parametrize_errors(lib):
    nn, P, Split, Double, Returns = _parametrizations(lib)

    def lin():
        return nn.Linear(2, 2)

    def assign(m, value):
        m.weight = value

    def twice(m, second):
        P.register_parametrization(m, "weight", Returns())
        P.register_parametrization(m, "weight", second)

    def inverse_then(later):  # right_inverse fine at registration, ``later`` afterwards
        calls = []

        def inv(w):
            calls.append(1)
            return w if len(calls) == 1 else later

        m = lin()
        P.register_parametrization(m, "weight", Returns(inverse=inv))
        assign(m, lib.ones(2, 2))

    return {
        "empty-list": lambda: P.ParametrizationList([], nn.Parameter(lib.ones(2))),
        "inverse-number": lambda: P.register_parametrization(
            lin(), "weight", Returns(inverse=lambda w: 3)
        ),
        "inverse-dtype": lambda: P.register_parametrization(
            lin(), "weight", Returns(inverse=lambda w: w.double())
        ),
        "inverse-list-number": lambda: P.register_parametrization(
            lin(), "weight", Returns(inverse=lambda w: [w, 3])
        ),
        "forward-number": lambda: P.register_parametrization(
            lin(), "weight", Returns(forward=lambda w: 3)
        ),
        "assign-no-inverse": lambda: assign(
            P.register_parametrization(lin(), "weight", Double()), lib.ones(2, 2)
        ),
        "assign-inverse-number": lambda: inverse_then(3),
        "assign-split-count": lambda: P.register_parametrization(
            lin(), "weight", Split()
        ).parametrizations.weight.right_inverse([lib.ones(2, 2)] * 3),
        "second-number": lambda: twice(lin(), Returns(forward=lambda w: 3)),
        "second-shape": lambda: twice(lin(), Returns(forward=lambda w: w[0])),
        "spectral_norm-dim": lambda: lib.nn.utils.parametrizations.spectral_norm(lin(), dim=2),
        "spectral_norm-iterations": lambda: lib.nn.utils.parametrizations.spectral_norm(
            lin(), n_power_iterations=0
        ),
        "spectral_norm-missing": lambda: lib.nn.utils.parametrizations.spectral_norm(
            lin(), name="kernel"
        ),
        "orthogonal-missing": lambda: lib.nn.utils.parametrizations.orthogonal(
            lin(), name="kernel"
        ),
        "orthogonal-assign-shape": lambda: assign(
            lib.nn.utils.parametrizations.orthogonal(lin()), lib.eye(3)
        ),
        "remove-split-unparametrized": lambda: P.remove_parametrizations(
            P.register_parametrization(lin(), "weight", Split()), "weight", leave_parametrized=False
        ),
    }


@pytest.mark.parametrize("case", sorted(_parametrize_errors(tg)))
def test_parametrize_misuse_raises_torchs_exception_type(torch_mod, case):
    with pytest.raises(Exception) as theirs:
        _parametrize_errors(torch_mod)[case]()
    with pytest.raises(Exception) as ours:
        _parametrize_errors(tg)[case]()
    assert ours.type.__name__ == theirs.type.__name__, (ours.value, theirs.value)


def test_parametrize_with_several_originals_and_buffers_matches_torch(torch_mod):
    res = []
    for lib in (tg, torch_mod):
        lib.manual_seed(0)
        nn, P, Split, Double, Returns = _parametrizations(lib)
        m = nn.Linear(2, 2)
        m.weight.data = lib.tensor([[1.0, -2.0], [0.5, 3.0]])
        P.register_parametrization(m, "weight", Split())
        m.weight = lib.tensor([[4.0, 8.0], [-4.0, 2.0]])  # through right_inverse, 2 originals
        originals = [m.parametrizations.weight.original0, m.parametrizations.weight.original1]
        other = P.transfer_parametrizations_and_params(m, nn.Linear(2, 2))
        moved = [other.parametrizations.weight.original0, other.parametrizations.weight.original1]
        bn = nn.BatchNorm1d(2)
        P.register_parametrization(bn, "running_mean", Returns(forward=lambda w: w + 1))
        kinds = (
            P.type_before_parametrizations(nn.ReLU()).__name__,
            P.type_before_parametrizations(m).__name__,
            sorted(dict(bn.parametrizations.running_mean.named_buffers())),
        )
        res.append([m.weight, *originals, other.weight, *moved, bn.running_mean, kinds])
    for a, b in zip(res[0][:-1], res[1][:-1]):
        _same(a, b)
    assert res[0][-1] == res[1][-1]


def test_new_style_spectral_norm_along_dim_1_and_of_a_vector_matches_torch(torch_mod):
    res = []
    for lib in (tg, torch_mod):
        lib.manual_seed(0)
        P = lib.nn.utils.parametrizations
        m = lib.nn.Linear(3, 2)
        m.weight.data = lib.tensor([[1.0, -2.0, 0.5], [0.25, 3.0, 1.0]])
        P.spectral_norm(m, dim=1)
        m.eval()  # no power iteration: sigma from the (converged) vectors
        b = lib.nn.Linear(2, 2)
        b.bias.data = lib.tensor([3.0, -4.0])
        P.spectral_norm(b, name="bias")  # a vector: normalised by its 2-norm
        res.append([m.weight, b.bias])
    for ours, theirs in zip(*res):
        _same(ours, theirs, rtol=1e-5, atol=1e-6)


def test_orthogonal_limits_are_named(torch_mod):
    # torch supports this; tapegrad says it does not (use_trivialization=False is supported:
    # tests/test_weak_d2.py)
    P = tg.nn.utils.parametrizations
    with pytest.raises(NotImplementedError, match="batches of matrices"):
        P.orthogonal(tg.nn.Bilinear(2, 2, 3))


def test_linear_cross_entropy_options_check_like_torch(torch_mod):
    cases = [
        dict(acc_policy="x"),
        dict(chunking_method="aspect_ratio"),
        dict(chunking_method="aspect_ratio:3"),
        dict(chunking_method="aspect_ratio:0"),
        dict(chunking_method="rows:2"),
        dict(chunking_method="aspect_ratio:x"),
        dict(chunking_method=None),
    ]
    for kw in cases:
        got = []
        for lib in (tg, torch_mod):
            try:
                got.append(repr(lib.nn.LinearCrossEntropyOptions(**kw)))
            except ValueError as e:
                got.append(str(e))
        assert got[0] == got[1], kw


def test_parameter_copies_and_sizes_from_tensors_match_torch(torch_mod):
    import copy  # noqa: PLC0415
    import pickle  # noqa: PLC0415

    res = []
    for lib in (tg, torch_mod):
        empty = lib.nn.Parameter()
        p = lib.nn.Parameter(lib.tensor([1.0, -2.0]))
        back = pickle.loads(pickle.dumps(p))
        pair = copy.deepcopy([p, p])
        frozen = pickle.loads(pickle.dumps(lib.nn.Parameter(lib.ones(1), requires_grad=False)))
        shaped = lib.arange(6.0).reshape(lib.tensor(2), 3)
        res.append(
            [
                (tuple(empty.shape), empty.requires_grad, str(empty.dtype).split(".")[-1]),
                (type(back).__name__, back.requires_grad, back.tolist()),
                (pair[0] is pair[1], pair[0] is p),
                frozen.requires_grad,
                tuple(shaped.shape),
            ]
        )
    assert res[0] == res[1]


def test_as_strided_over_a_reinterpreted_numpy_buffer_matches_torch(torch_mod):
    # a float64 view of int64 memory: the storage is read in the view's dtype
    base = np.arange(8, dtype=np.int64)
    res = []
    for lib in (tg, torch_mod):
        t = lib.from_numpy(base.view(np.float64))
        res.append(lib.as_strided(t, (2, 2), (1, 3), 1).numpy().view(np.int64))
    np.testing.assert_array_equal(res[0], res[1])


def test_dropout_of_unexpected_ranks_warns_like_torch(torch_mod):
    for name in ("dropout2d", "dropout3d"):
        for lib in (tg, torch_mod):
            with pytest.warns(UserWarning, match=f"{name}: Received a 2-D input"):
                getattr(lib.nn.functional, name)(lib.ones(2, 3), 0.5)


def _hook_modules(lib):
    nn = lib.nn

    class Pair(nn.Module):  # returns a list of two tensors
        def forward(self, x):
            return [x * 2, x.detach()]

    class Count(nn.Module):  # returns a number
        def forward(self, x):
            return 3

    return nn, Pair, Count


def _hook_errors(lib):
    nn, Pair, Count = _hook_modules(lib)

    def pre_kwargs_number():
        m = nn.Linear(2, 2)
        m.register_forward_pre_hook(lambda mod, args, kwargs: 3, with_kwargs=True)
        m(lib.ones(1, 2))

    def backward_hook_count():
        m = nn.Linear(2, 2)
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
        m(lib.ones(1, 2, requires_grad=True)).sum().backward()

    return {"pre-hook-kwargs": pre_kwargs_number, "backward-hook-count": backward_hook_count}


@pytest.mark.parametrize("case", sorted(_hook_errors(tg)))
def test_hook_misuse_raises_torchs_exception_type(torch_mod, case):
    with pytest.raises(Exception) as theirs:
        _hook_errors(torch_mod)[case]()
    with pytest.raises(Exception) as ours:
        _hook_errors(tg)[case]()
    assert ours.type is RuntimeError and theirs.type is RuntimeError, (ours.value, theirs.value)


@pytest.mark.filterwarnings("ignore:For backward hooks to be called")
def test_full_backward_hooks_on_list_number_and_constant_outputs_match_torch(torch_mod):
    res = []
    for lib in (tg, torch_mod):
        nn, Pair, Count = _hook_modules(lib)

        class Tup(nn.Module):  # a tuple with an output that needs no gradient
            def forward(self, x):
                return (x * 2, x.detach() + 1, 5)

        seen = []

        def hook(mod, gi, go):
            seen.append(
                (type(mod).__name__, [None if g is None else g.tolist() for g in go], len(gi))
            )

        pair, count, lin, tup = Pair(), Count(), nn.Linear(2, 2), Tup()
        for m in (pair, count, lin, tup):
            m.register_full_backward_hook(hook)
        x = lib.tensor([[1.0, -1.0]], requires_grad=True)
        with pytest.warns(UserWarning, match="module output should be a Tensor or a tuple"):
            out = pair(x)  # a list: the hooks are skipped, with a warning
        kind = type(out).__name__
        out[0].sum().backward()
        number = count(x)
        with lib.no_grad():
            const = lin(lib.ones(1, 2))
        t = tup(x)
        (t[0] * 3).sum().backward()
        res.append((kind, seen, x.grad.tolist(), number, const.requires_grad, len(t)))
    assert res[0] == res[1]


def test_full_backward_hook_is_skipped_when_the_gradient_bypasses_the_output(torch_mod):
    # the loss reads a tensor the module kept aside, not its output: torch does not call
    # the hook (the output's gradient never arrived)
    res = []
    for lib in (tg, torch_mod):

        class Aside(lib.nn.Module):
            def forward(self, x):
                self.kept = x * 3
                return x * 2

        m, seen = Aside(), []
        m.register_full_backward_hook(lambda mod, gi, go: seen.append(go))
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        m(x)
        m.kept.sum().backward()
        res.append((len(seen), x.grad.tolist()))
    assert res[0] == res[1]
