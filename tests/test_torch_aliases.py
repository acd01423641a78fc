"""torch's top-level names that tapegrad adds in _torch_aliases.py (the functional ops torch
exports a second time, with ATen's signature) and _torch_functions.py (Tensor methods as
functions, deprecated norms, vander, unravel_index, typename): one table of cases, each run
in torch and tapegrad on the same float64 inputs, comparing values, dtypes, shapes and the
gradients of every input marked ``grad``; one table of bad inputs comparing error types; and
the signatures against torch's schemas."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _torch_aliases, _torch_functions

RNG = np.random.default_rng(19)


class A:
    """An array argument: a tensor in each library (float64 unless the array says else)."""

    def __init__(self, array, grad=False):
        self.array, self.grad = np.asarray(array), grad

    def make(self, lib):
        t = lib.tensor(self.array.copy())
        return t.requires_grad_(True) if self.grad else t


def f(*shape, grad=True, low=None):
    a = RNG.standard_normal(shape)
    return A(np.abs(a) + low if low is not None else a, grad)


def i(values):
    return A(np.asarray(values, dtype=np.int64))


def signs(n):
    return A(np.where(RNG.standard_normal(n) > 0, 1.0, -1.0))


def log_probs(*shape):
    a = RNG.standard_normal(shape)
    return A(a - np.log(np.exp(a).sum(-1, keepdims=True)), True)


# (name, args, kwargs): the same call in both libraries
CASES = [
    ("conv1d", (f(2, 3, 8), f(4, 3, 3), f(4), 2, 1), {}),
    ("conv2d", (f(2, 3, 6, 6), f(4, 3, 3, 3), f(4)), {"padding": 1}),
    ("conv3d", (f(1, 2, 4, 4, 4), f(3, 2, 2, 2, 2)), {}),
    ("conv_transpose1d", (f(2, 3, 5), f(3, 4, 3), f(4), 2, 1, 1), {}),
    ("conv_transpose2d", (f(1, 2, 4, 4), f(2, 3, 3, 3), None, 2), {}),
    ("conv_transpose3d", (f(1, 2, 3, 3, 3), f(2, 2, 2, 2, 2)), {}),
    (
        "convolution",
        (f(2, 3, 6, 6), f(4, 3, 3, 3), f(4), [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
        {},
    ),
    ("convolution", (f(1, 2, 5), f(2, 3, 3), None, [2], [1], [1], True, [1], 1), {}),
    ("avg_pool1d", (f(2, 3, 8), 3), {}),
    ("avg_pool1d", (f(2, 3, 8), 2, 1, 1), {"count_include_pad": False}),
    ("max_pool1d", (f(2, 3, 8), 2), {}),
    ("max_pool2d", (f(2, 3, 6, 6), 2), {}),
    ("max_pool2d", (f(2, 3, 7, 7), 3, 2, 1), {"ceil_mode": True}),
    ("max_pool3d", (f(1, 2, 4, 4, 4), 2, []), {}),
    ("max_pool1d_with_indices", (f(2, 3, 8), 2), {}),
    ("adaptive_avg_pool1d", (f(2, 3, 8), 3), {}),
    ("adaptive_max_pool1d", (f(2, 3, 8), 3), {}),
    (
        "batch_norm",
        (
            f(4, 3, 5),
            f(3),
            f(3),
            f(3, grad=False),
            f(3, grad=False, low=0.5),
            True,
            0.1,
            1e-5,
            True,
        ),
        {},
    ),
    (
        "batch_norm",
        (f(4, 3), None, None, f(3, grad=False), f(3, grad=False, low=0.5), False, 0.1, 1e-5, False),
        {},
    ),
    ("instance_norm", (f(2, 3, 5), f(3), f(3), None, None, True, 0.1, 1e-5, True), {}),
    ("layer_norm", (f(2, 3, 4), [4], f(4), f(4)), {}),
    ("layer_norm", (f(2, 3, 4), (3, 4)), {"eps": 1e-3}),
    ("group_norm", (f(2, 4, 5), 2, f(4), f(4)), {}),
    ("rms_norm", (f(2, 3, 4), [4], f(4)), {}),
    ("rms_norm", (f(2, 3, 4), [3, 4]), {"eps": 0.1}),
    ("dropout", (f(3, 4), 0.3, False), {}),
    ("dropout_", (f(3, 4, grad=False), 0.3, False), {}),
    ("alpha_dropout", (f(3, 4), 0.3, False), {}),
    ("alpha_dropout_", (f(3, 4, grad=False), 0.3, False), {}),
    ("feature_dropout", (f(2, 3, 4), 0.3, False), {}),
    ("feature_dropout_", (f(2, 3, 4, grad=False), 0.3, False), {}),
    ("feature_alpha_dropout", (f(2, 3, 4), 0.3, False), {}),
    ("feature_alpha_dropout_", (f(2, 3, 4, grad=False), 0.3, False), {}),
    ("native_dropout", (f(3, 4), 0.3, False), {}),
    ("embedding", (f(10, 3), i([[1, 2], [4, 9]])), {}),
    ("embedding", (f(10, 3), i([1, 2, 2, 0])), {"padding_idx": 2}),
    *[
        (
            "embedding_bag",
            (
                f(10, 3),
                i([1, 2, 4, 5, 4, 3, 2, 9]),
                i([0, 4, 4]),
                False,
                mode,
                False,
                None,
                last,
                pad,
            ),
            {},
        )
        for mode in (0, 1, 2)
        for pad in (None, 2)
        for last in (False, True)
    ],
    ("embedding_bag", (f(10, 3), i([1, 2, 4, 5]), i([0, 2])), {"per_sample_weights": f(4)}),
    (
        "embedding_bag",
        (A(np.arange(30.0, dtype=np.float32).reshape(10, 3)), i([1, 2, 4]), i([0, 1])),
        {},
    ),
    ("embedding_renorm_", (A(RNG.standard_normal((10, 3)) * 3), i([1, 2, 2, 5]), 1.0, 2.0), {}),
    ("bilinear", (f(2, 3), f(2, 4), f(5, 3, 4), f(5)), {}),
    ("cosine_similarity", (f(4, 5), f(4, 5)), {}),
    ("cosine_similarity", (f(4, 5), f(1, 5), 1, 1e-6), {}),
    ("pairwise_distance", (f(4, 5), f(4, 5)), {"p": 3.0, "keepdim": True}),
    ("pdist", (f(4, 3),), {}),
    ("pdist", (f(4, 3), 1.0), {}),
    ("pixel_shuffle", (f(1, 8, 2, 3), 2), {}),
    ("pixel_unshuffle", (f(1, 2, 4, 6), 2), {}),
    ("native_channel_shuffle", (f(1, 6, 2, 2, grad=False), 3), {}),  # no derivative in torch
    ("prelu", (f(2, 3, 4), f(3)), {}),
    ("rrelu", (f(2, 5),), {}),
    ("rrelu_", (f(2, 5, grad=False), 0.1, 0.3), {}),
    ("celu_", (f(2, 5, grad=False), 0.5), {}),
    ("selu_", (f(2, 5, grad=False),), {}),
    ("threshold_", (f(2, 5, grad=False), 0.1, 20.0), {}),
    (
        "binary_cross_entropy_with_logits",
        (f(3, 4), A(RNG.random((3, 4))), f(4, grad=False, low=0.1), f(4, grad=False, low=0.1)),
        {},
    ),
    ("binary_cross_entropy_with_logits", (f(3, 4), A(RNG.random((3, 4)))), {"reduction": 0}),
    ("kl_div", (log_probs(3, 4), A(RNG.random((3, 4)))), {}),
    ("kl_div", (log_probs(3, 4), log_probs(3, 4), 2), {"log_target": True}),
    ("margin_ranking_loss", (f(5), f(5), signs(5)), {"margin": 0.2}),
    ("hinge_embedding_loss", (f(5), signs(5), 0.5, 2), {}),
    ("poisson_nll_loss", (f(5), f(5, grad=False, low=0.0), True, False, 1e-8, 1), {}),
    ("poisson_nll_loss", (f(5, low=0.5), f(5, grad=False, low=0.0), False, True, 1e-8, 0), {}),
    ("triplet_margin_loss", (f(4, 5), f(4, 5), f(4, 5)), {"swap": True}),
    ("cosine_embedding_loss", (f(4, 5), f(4, 5), signs(4)), {}),
    ("ctc_loss", (log_probs(6, 2, 4), i([[1, 2, 1], [2, 3, 0]]), [6, 5], [3, 2]), {}),
    ("ctc_loss", (log_probs(6, 2, 4), i([[1, 2, 1], [2, 3, 0]]), [6, 5], [3, 2], 0, 0), {}),
    # _torch_functions.py
    ("absolute", (f(3, 4),), {}),
    ("adjoint", (f(3, 4),), {}),
    ("detach", (f(3, 4),), {}),
    ("ger", (f(3), f(4)), {}),
    ("get_device", (f(3),), {}),
    ("is_conj", (f(3),), {}),
    ("is_inference", (f(3),), {}),
    ("is_neg", (f(3),), {}),
    ("is_signed", (i([1, 2]),), {}),
    ("is_signed", (A(np.array([1, 2], np.uint8)),), {}),
    ("frobenius_norm", (f(3, 4), [0, 1]), {}),
    ("frobenius_norm", (f(3, 4), [1], True), {}),
    ("nuclear_norm", (f(3, 4),), {}),
    ("nuclear_norm", (f(2, 3, 4), [1, 2]), {"keepdim": True}),
    ("norm_except_dim", (f(3, 4),), {}),
    ("norm_except_dim", (f(3, 4, 2), 3, 1), {}),
    ("norm_except_dim", (f(3, 4), 2, -1), {}),
    ("vander", (f(4, grad=False),), {}),  # torch's own vander backward fails: see below
    ("vander", (f(3, grad=False), 5, True), {}),
    ("vander", (i([1, 2, 3]), 2), {}),
    ("vander", (f(3), 1), {}),
    ("vander", (f(3), 0), {}),
    ("unravel_index", (i([4, 1, 7]), (2, 3)), {}),
    ("unravel_index", (i([[1234], [5678]]), (10, 10, 10, 10)), {}),
    ("unravel_index", (i(5), 6), {}),
]

ADDED = set(_torch_aliases.NAMES) | set(_torch_functions.METHODS) | {
    "frobenius_norm", "nuclear_norm", "norm_except_dim", "vander", "unravel_index",
}  # fmt: skip


def _ids(cases):
    seen = {}
    out = []
    for name, *_ in cases:
        seen[name] = seen.get(name, 0) + 1
        out.append(f"{name}-{seen[name]}")
    return out


def _build(lib, args, kwargs):
    made = [a.make(lib) if isinstance(a, A) else a for a in args]
    return made, {k: v.make(lib) if isinstance(v, A) else v for k, v in kwargs.items()}


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _compare(ours, theirs, what):
    if not hasattr(theirs, "detach"):  # a bool, an int
        assert ours == theirs and type(ours) is type(theirs), what
        return
    assert isinstance(ours, tg.Tensor), what
    want = theirs.detach().numpy()
    assert ours.dtype == want.dtype, f"{what}: dtype {ours.dtype} != {want.dtype}"
    assert tuple(ours.shape) == want.shape, f"{what}: shape {tuple(ours.shape)} != {want.shape}"
    np.testing.assert_allclose(ours.detach().numpy(), want, rtol=1e-7, atol=1e-10, err_msg=what)


def test_every_added_name_has_a_case():
    assert ADDED - {name for name, *_ in CASES} == set()


@pytest.mark.parametrize(("name", "args", "kwargs"), CASES, ids=_ids(CASES))
def test_matches_torch(torch_mod, name, args, kwargs):
    ours_args, ours_kw = _build(tg, args, kwargs)
    theirs_args, theirs_kw = _build(torch_mod, args, kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecated norms warn in both
        ours = getattr(tg, name)(*ours_args, **ours_kw)
        theirs = getattr(torch_mod, name)(*theirs_args, **theirs_kw)
    ours_out, theirs_out = _flat(ours), _flat(theirs)
    assert len(ours_out) == len(theirs_out)
    for k, (o, t) in enumerate(zip(ours_out, theirs_out)):
        _compare(o, t, f"{name} output {k}")
    if name.endswith("_"):  # in place: the input itself comes back, changed as torch's
        assert ours is ours_args[0]
    for k, (o, t) in enumerate(zip(ours_args, theirs_args)):  # running stats, in-place inputs
        if isinstance(t, torch_mod.Tensor):
            _compare(o, t, f"{name} argument {k} after the call")
    # gradients: of a fixed random projection of the first float output
    o, t = ours_out[0], theirs_out[0]
    if not (hasattr(t, "requires_grad") and t.requires_grad):
        assert not getattr(o, "requires_grad", False) or name == "detach"
        return
    w = RNG.standard_normal(tuple(t.shape))
    (o * tg.tensor(w)).sum().backward()
    (t * torch_mod.tensor(w)).sum().backward()
    for k, (oa, ta) in enumerate(zip(ours_args, theirs_args)):
        if isinstance(ta, torch_mod.Tensor) and ta.requires_grad:
            assert oa.grad is not None, f"{name}: no gradient for argument {k}"
            _compare(oa.grad, ta.grad, f"{name} gradient of argument {k}")


# (name, args, kwargs): a bad input per name; both libraries must raise the same type
_LIST_FIRST = {}  # every name: a list where torch wants a Tensor (torch.unravel_index has
for _name, _args, _kwargs in CASES:  # no check: it fails with an AttributeError)
    if _name != "unravel_index":
        _LIST_FIRST.setdefault(_name, (_name, ([1.0, 2.0], *_args[1:]), _kwargs))
BAD = list(_LIST_FIRST.values()) + [
    ("dropout", (f(3), 0.5), {}),  # train is required
    ("dropout", (f(3), 1.5, True), {}),
    ("dropout_", (f(3, grad=False), -0.1, True), {}),
    *[  # p is checked in eval mode too
        (name, (f(2, 3, grad=False), 1.5, False), {})
        for name in _torch_aliases.NAMES
        if "dropout" in name and name != "native_dropout"  # which checks p in training only
    ],
    ("feature_dropout", (f(3), 0.5, True), {}),  # needs 2 dims
    ("native_dropout", (f(3), 1.5, True), {}),
    ("conv2d", (f(2, 3, 6, 6), f(4, 2, 3, 3)), {}),
    ("convolution", (f(2, 3, 6), f(4, 3, 3), None, [1], [0], [1], False), {}),
    ("max_pool2d", (f(1, 1, 2, 2), 3), {}),
    ("batch_norm", (f(4, 3), None, None, None, None, False, 0.1, 1e-5, False), {}),
    ("layer_norm", (f(2, 3, 4), [3]), {}),
    ("embedding", (f(10, 3), f(2, grad=False)), {}),
    ("embedding", (f(10, 3), i([1, 12])), {}),
    ("embedding_bag", (f(10, 3), i([1, 2]), i([0, 3])), {}),
    ("pixel_shuffle", (f(1, 3, 2, 2), 2), {}),
    ("vander", (f(2, 2),), {}),
    ("vander", (f(3), -1), {}),
    ("unravel_index", (f(3, grad=False), (2, 3)), {}),
    ("unravel_index", (i([1]), (2, -3)), {}),
    ("nuclear_norm", (f(3),), {}),
    ("ger", (f(3), f(2, 2)), {}),
]


@pytest.mark.parametrize(("name", "args", "kwargs"), BAD, ids=_ids(BAD))
def test_bad_input_raises_like_torch(torch_mod, name, args, kwargs):
    errors = []
    for lib in (torch_mod, tg):
        made, kw = _build(lib, args, kwargs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                getattr(lib, name)(*made, **kw)
            except Exception as exc:
                errors.append(exc)
            else:
                errors.append(None)
    theirs, ours = errors
    assert theirs is not None, f"torch accepts this {name} call: not a bad input"
    assert isinstance(ours, type(theirs)), f"{name}: {ours!r} where torch raises {theirs!r}"


def _schema_params(torch_mod, name):
    for schema in torch_mod._C._jit_get_schemas_for_operator(f"aten::{name}"):
        if schema.overload_name in ("", "input", "IntList"):
            return [(a.name, a.default_value, a.kwarg_only) for a in schema.arguments]
    raise AssertionError(f"no schema for {name}")


def _same_default(ours, theirs):
    if isinstance(theirs, list):  # [1] / [1, 1] / [] where a plain 1 / () means the same
        ours = list(ours) if isinstance(ours, (list, tuple)) else [ours] * len(theirs)
        return ours == theirs
    return ours == theirs or (ours is None and theirs is None)


@pytest.mark.parametrize("name", _torch_aliases.NAMES)
def test_signature_is_torchs_schema(torch_mod, name):
    params = list(inspect.signature(getattr(tg, name)).parameters.values())
    schema = _schema_params(torch_mod, name)
    if name == "embedding_bag":  # the padding_idx overload's extra argument, None by default
        assert params[-1].name == "padding_idx" and params[-1].default is None
        params = params[:-1]
    assert [p.name for p in params] == [s[0] for s in schema]
    for p, (pname, default, kwarg_only) in zip(params, schema):
        if (
            pname == "reduction" and default is not None
        ):  # torch's Python binding reads the schema's 1 as 0
            default = 0  # (NOTE in _torch_aliases.py; test_reduction_defaults_to_none)
        assert (p.kind is p.KEYWORD_ONLY) == kwarg_only, pname
        if default is None and p.default is p.empty:
            continue
        assert p.default is not p.empty, f"{name}: {pname} has no default, torch's is {default}"
        assert _same_default(p.default, default) or (
            isinstance(default, float) and abs(p.default - default) < 1e-12
        ), f"{name}: {pname}={p.default!r}, torch's {default!r}"


def test_names_and_non_tensor_message():
    assert tg.layer_norm.__name__ == "layer_norm" and tg.layer_norm.__module__ == "tapegrad"
    with pytest.raises(TypeError, match=r"layer_norm\(\): argument 'input' .* not list"):
        tg.layer_norm([1.0], [1])
    with pytest.raises(TypeError, match=r"dropout\(\) missing 1 required .* 'train'"):
        tg.dropout(tg.ones(3), 0.5)


def test_dropout_in_training_drops_and_scales(torch_mod):
    tg.manual_seed(0)
    x = tg.ones(2000, dtype=tg.float64, requires_grad=True)
    out = tg.dropout(x, 0.25, True)
    kept = out.detach().numpy() != 0
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_allclose(out.detach().numpy()[kept], 1 / 0.75)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), kept / 0.75)
    y, mask = tg.native_dropout(x, 0.25, True)
    assert (
        mask.dtype == np.bool_
        and torch_mod.native_dropout(torch_mod.ones(2), 0.5, True)[1].dtype == torch_mod.bool
    )
    np.testing.assert_allclose(y.detach().numpy(), mask.numpy() / 0.75)
    z = tg.ones(4, 3, 5)
    assert tg.feature_dropout_(z, 0.5, True) is z
    per_channel = z.numpy().reshape(4, 3, 5)
    assert (per_channel == per_channel[..., :1]).all()  # whole channels dropped or kept


def test_embedding_flags_not_supported_are_refused():
    w, idx = tg.ones(4, 2), tg.tensor([1])
    with pytest.raises(NotImplementedError, match="scale_grad_by_freq"):
        tg.embedding(w, idx, -1, True)
    with pytest.raises(NotImplementedError, match="sparse"):
        tg.embedding(w, idx, -1, False, True)


@pytest.mark.parametrize(
    "name",
    [n for n in _torch_aliases.NAMES if n.endswith("loss") and n != "poisson_nll_loss"]
    + ["kl_div", "binary_cross_entropy_with_logits"],
)
def test_reduction_defaults_to_none_as_torchs_binding(torch_mod, name):
    params = inspect.signature(getattr(tg, name)).parameters
    assert params["reduction"].default == 0
    if name in ("margin_ranking_loss", "kl_div", "hinge_embedding_loss"):
        args = [torch_mod.ones(3)] * (3 if name == "margin_ranking_loss" else 2)
        assert getattr(torch_mod, name)(*args).shape == (3,)  # elementwise: reduction 0


def test_vander_gradient_matches_linalg_vander(torch_mod):
    x = np.array([0.5, -1.5, 2.0])
    ours = tg.tensor(x, requires_grad=True)
    theirs = torch_mod.tensor(x, requires_grad=True)
    w = RNG.standard_normal((3, 4))
    (tg.vander(ours, 4) * tg.tensor(w)).sum().backward()
    # torch.vander's backward raises (an in-place cumprod); linalg.vander is the same matrix
    (torch_mod.linalg.vander(theirs, N=4).flip(-1) * torch_mod.tensor(w)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)


def test_reduction_is_an_int():
    x, t = tg.ones(3), tg.ones(3)
    with pytest.raises(TypeError, match="reduction"):
        tg.hinge_embedding_loss(x, t, 1.0, "mean")
    with pytest.raises(ValueError, match="reduction"):
        tg.hinge_embedding_loss(x, t, 1.0, 3)


# Regression: F.embedding_bag sliced bags with Python's slicing, so offsets torch refuses (not
# starting at 0, past the end, decreasing) gave silent results, and with include_last_offset a
# last offset short of len(input) dropped the trailing indices that torch puts in the last bag.
OFFSETS = [
    ([1, 2, 3, 4], [0, 4, 4], True),
    ([1, 2, 3, 4, 5], [0, 2, 3], True),
    ([1, 2], [0, 3], False),
    ([1, 2], [1], False),
    ([1, 2], [0, 3], True),
]


@pytest.mark.parametrize(("indices", "offsets", "last"), OFFSETS)
@pytest.mark.parametrize("mode", ["sum", "max"])
def test_functional_embedding_bag_offsets_match_torch(torch_mod, indices, offsets, last, mode):
    w = RNG.standard_normal((10, 3))
    results = []
    for lib in (torch_mod, tg):
        try:
            out = lib.nn.functional.embedding_bag(
                lib.tensor(indices), lib.tensor(w), lib.tensor(offsets), mode=mode,
                include_last_offset=last,
            )  # fmt: skip
        except RuntimeError:
            results.append(RuntimeError)
        else:
            results.append(out.numpy())
    theirs, ours = results
    if theirs is RuntimeError:
        assert ours is RuntimeError
    else:
        np.testing.assert_allclose(ours, theirs)


def test_functional_embedding_bag_refuses_decreasing_offsets():
    # torch's kernel fails on some of these and reads past the bag on others
    with pytest.raises(RuntimeError, match="non-decreasing"):
        tg.nn.functional.embedding_bag(tg.tensor([1, 2, 3]), tg.ones(5, 2), tg.tensor([0, 2, 1]))
