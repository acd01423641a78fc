"""Tests for survivors of the seed-2212 mutation sample: each is seen to fail on its mutant.

Covers ops/_table.py:180 and :246, ops/arithmetic.py:85 (and add/sub with ``alpha`` and a
number the 0-d array cache does not hold, which raised AttributeError: a bug found on the
way, fixed), autograd/profiler.py:57, ops/solve.py:79, nn/transformer.py:326,
nn/_losses_margin.py:216 (its error now torch's RuntimeError), nn/utils/_prune_ties.py:66,
nn/utils/parametrizations.py:34, nn/_layers_functional.py:155, ops/indexing.py:255 and
:322, ops/reduction.py:178 (a bug, fixed), nn/utils/fusion.py:68, ops/scan.py:32 and
nn/_rnn_aten.py:49 (a bug, fixed), nn/init.py:197, autograd/profiler_util.py:22,
nn/_attention_split.py:30 and nn/utils/_prune_ties.py:80 (more in the _b file).
"""

import numpy as np
import pytest

import tapegrad as tg


@pytest.mark.parametrize("name", ["isnan", "isfinite", "signbit"])
def test_a_bool_unary_of_a_tensor_that_requires_grad_records_nothing(torch_mod, name):
    """_table.py:180 [drop] ``return Tensor._wrap(out)``: a bool result (or a row without a
    derivative) is returned unrecorded; it does not require grad and has no grad_fn, as in
    torch."""
    for lib in (torch_mod, tg):
        out = getattr(lib, name)(lib.tensor([1.5, -2.0], requires_grad=True))
        assert out.dtype == lib.bool
        assert not out.requires_grad
        assert out.grad_fn is None


def test_only_ints_a_float32_holds_exactly_become_cached_zero_d_arrays():
    """arithmetic.py:85 [const] ``2 -> 3`` (either ``2**24``): an int joins the 0-d array
    cache only when float32 holds it exactly (|v| < 2**24); a larger one keeps NumPy's own
    weak-scalar path (the same rounded value, so the path is checked)."""
    from tapegrad.ops.arithmetic import _weak

    data = np.zeros(2, np.float32)
    for v in (2**24 - 1, -(2**24) + 1):
        assert isinstance(_weak(v, data), np.ndarray)
    for v in (2**24 + 1, -(2**24) - 1):
        assert _weak(v, data) == v
        assert type(_weak(v, data)) is int


@pytest.mark.parametrize(
    "dtype, value, alpha",
    [
        ("float32", 0.0, 3),  # 0 and NaN are never cached
        ("float64", float("nan"), 2),
        ("float32", 16777217, 3),  # rounded to float32 first, as torch casts it
        ("float32", 0, 2.5),
        ("float32", 1 + 2j, 2),
        ("int64", 2, 3),
        ("int64", 2.5, 2),
        ("int32", 2**40, 2),  # wraps as torch's int32 cast does
        ("bool", True, 2),  # stays bool
        ("float16", 0.1, 3),  # half: torch's 0-d rule (Note [Half tensors and alpha])
        ("bfloat16", 1 / 3, -2.5),
    ],
)
def test_add_and_sub_with_alpha_and_a_number_match_torch(torch_mod, dtype, value, alpha):
    """add/sub with ``alpha`` and a number the 0-d array cache does not hold (0, NaN, a
    large int, a complex, an int or bool tensor's number, any half tensor's) raised
    AttributeError in arithmetic._alpha (``db.dtype``); the arithmetic.py:85 bound decides
    which numbers those are. Values as torch's, over 70 elements (vector blocks and tail)."""
    rng = np.random.default_rng(0)
    data = rng.standard_normal((2, 35)) * 4
    for op in ("add", "sub"):
        if dtype == "bool" and op == "sub":
            continue
        want = getattr(torch_mod, op)(
            torch_mod.tensor(data).to(getattr(torch_mod, dtype)), value, alpha=alpha
        )
        got = getattr(tg, op)(tg.tensor(data).to(getattr(tg, dtype)), value, alpha=alpha)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        if want.dtype in (torch_mod.float16, torch_mod.bfloat16):
            got, want = got.float(), want.float()
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_add_with_alpha_and_a_number_on_a_transposed_half_tensor_matches_torch(torch_mod):
    """The half rule of a number with ``alpha`` follows the tensor's memory order (torch's
    loop runs once over a dense tensor, its tail the last elements in memory)."""
    data = np.random.default_rng(1).standard_normal((40, 3))
    want = torch_mod.add(torch_mod.tensor(data).half().mT, 0.1, alpha=3)
    got = tg.add(tg.tensor(data).half().mT, 0.1, alpha=3)
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    assert got.stride() == want.stride()


def test_add_with_an_int_alpha_and_an_int_rejects_a_float_alpha_like_torch(torch_mod):
    """The alpha checks see a number's kind too: an int tensor with a float alpha raises."""
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
            lib.add(lib.tensor([1, 2]), 2, alpha=2.5)


def test_a_record_function_exited_twice_records_one_range(torch_mod):
    """profiler.py:57 [drop] ``self._profiles = ()``: a range's ``__exit__`` forgets the
    profiles it was recorded for, so a second ``__exit__`` adds nothing (torch: one range)."""
    for lib in (torch_mod, tg):
        with lib.autograd.profiler.profile() as prof:
            rf = lib.autograd.profiler.record_function("twice")
            rf.__enter__()
            rf.__exit__(None, None, None)
            rf.__exit__(None, None, None)
        counts = [e.count for e in prof.key_averages() if e.key == "twice"]
        assert counts == [1]


def test_cholesky_names_a_first_leading_minor_that_is_not_positive_definite(torch_mod):
    """solve.py:79 [const] ``range(1, ...)`` -> ``range(2, ...)``: the 1x1 minor is checked
    too, so a matrix whose first entry is negative fails at order 1 (message and info), as
    in torch. (The other ``1``, ``n + 1`` -> ``n + 2``, is equivalent: the extra minor is the
    whole matrix again, reached only when it was found positive-definite.)"""
    m = [[-1.0, 0.0], [0.0, 1.0]]
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="the leading minor of order 1 is not positive"):
            lib.linalg.cholesky(lib.tensor(m))
        assert lib.linalg.cholesky_ex(lib.tensor(m)).info.item() == 1


def test_transformer_initialises_its_matrices_by_xavier_uniform(torch_mod):
    """transformer.py:326 [drop] ``self._reset_parameters()``: nn.Transformer re-initialises
    every matrix by xavier_uniform_ (bound sqrt(6 / (fan_in + fan_out))), wider than a
    Linear's own bound 1/sqrt(fan_in) when fan_in is large: linear2's (4, 64) weight has
    values beyond 1/8 (its 256 draws all inside it: chance 0.42**256)."""
    for lib in (torch_mod, tg):
        lib.manual_seed(0)
        m = lib.nn.Transformer(
            d_model=4,
            nhead=2,
            num_encoder_layers=1,
            num_decoder_layers=1,
            dim_feedforward=64,
            batch_first=True,
        )
        for p in m.parameters():
            if p.ndim > 1:
                bound = (6.0 / (p.shape[0] + p.shape[1])) ** 0.5
                assert float(p.detach().abs().max()) <= bound
        w = m.encoder.layers[0].linear2.weight.detach()
        assert float(w.abs().max()) > 1 / 8


def test_multilabel_margin_loss_rejects_a_target_equal_to_the_class_count(torch_mod):
    """_losses_margin.py:216 [compare] ``t2 >= c`` -> ``(t2 > c)``: a target equal to C is
    out of range. The error is torch's RuntimeError (was IndexError, also for
    multi_margin_loss: a bug, fixed)."""
    for lib in (torch_mod, tg):
        x = lib.tensor([[0.1, 0.2, 0.4]])
        with pytest.raises(RuntimeError, match="out of range") as info:
            lib.nn.functional.multilabel_margin_loss(x, lib.tensor([[3, -1, 0]]))
        if lib is tg:  # the check's own error, not a failed gather after it
            assert str(info.value) == "multilabel_margin_loss: target out of range"
        with pytest.raises(RuntimeError, match="target out of range"):
            lib.nn.functional.multi_margin_loss(x, lib.tensor([3]))


def test_l1_pruning_of_64_equal_values_keeps_torch_choice(torch_mod):
    """_prune_ties.py:66 [compare] ``k * 64 <= n`` -> ``<``: at k * 64 == n torch's topk runs
    std::partial_sort (heap select), not nth_element: pruning one of 64 equal weights
    prunes the first, as torch (introselect would take another)."""
    import importlib

    masks = []
    for lib in (torch_mod, tg):
        prune = importlib.import_module(lib.__name__ + ".nn.utils.prune")
        lin = lib.nn.Linear(8, 8, bias=False)
        with lib.no_grad():
            lin.weight.fill_(0.5)
        prune.l1_unstructured(lin, "weight", amount=1)
        masks.append(lin.weight_mask.numpy().copy())
    np.testing.assert_array_equal(masks[1], masks[0])
    assert np.flatnonzero(masks[1] == 0).tolist() == [0]


def test_weight_norm_parametrization_normalises_over_dim_0_by_default(torch_mod):
    """parametrizations.py:34 [const] ``dim=0`` -> ``1``: ``_WeightNorm()``'s default dim is
    0 (each row of v scaled to g's norm), as torch's."""
    import importlib

    outs = []
    for lib in (torch_mod, tg):
        mod = importlib.import_module(lib.__name__ + ".nn.utils.parametrizations")
        g, v = lib.tensor([[2.0], [3.0]]), lib.tensor([[3.0, 4.0], [1.0, 0.0]])
        outs.append(mod._WeightNorm()(g, v).numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-6)


def test_pixel_shuffle_takes_an_unbatched_3d_input(torch_mod):
    """_layers_functional.py:155 [const] ``ndim < 3`` -> ``< 4``: (C·r², H, W) is valid."""
    outs = []
    for lib in (torch_mod, tg):
        out = lib.nn.functional.pixel_shuffle(lib.arange(16.0).reshape(4, 2, 2), 2)
        outs.append(out.numpy())
    assert outs[1].shape == outs[0].shape == (1, 4, 4)
    np.testing.assert_array_equal(outs[1], outs[0])


def test_index_backward_with_ellipsis_then_a_partial_slice_matches_torch(torch_mod):
    """indexing.py:322 [compare] ``k == slice(None)`` -> ``!=`` (in the check of what
    follows the leading index arrays): ``x[idx, ..., 1:3]`` is not the embedding shape, so
    its gradient takes the general scatter (the row path failed to reshape)."""
    grads = []
    for lib in (torch_mod, tg):
        x = lib.arange(24.0).reshape(3, 2, 4).requires_grad_()
        y = x[lib.tensor([0, 0, 2]), ..., 1:3]
        y.backward(lib.arange(12.0).reshape(y.shape))
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


def test_index_backward_of_bool_masks_assigns_without_bincount(monkeypatch, torch_mod):
    """indexing.py:255 [boolop] ``not advanced or all(...)`` -> ``and``: a bool mask selects
    each position once, so its gradient is one assignment into zeros; the bincount scatter
    (the same values) is for integer arrays only, so the path is checked."""
    calls = []
    real = np.bincount
    monkeypatch.setattr(np, "bincount", lambda *a, **k: calls.append(1) or real(*a, **k))
    grads = []
    for lib in (torch_mod, tg):
        x = lib.arange(12.0).reshape(3, 4).requires_grad_()
        y = x[lib.tensor([True, False, True]), 1:3]
        y.backward(lib.arange(4.0).reshape(2, 2) + 1)
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])
    assert calls == []


def test_mean_with_a_wider_dtype_gives_the_input_dtype_gradient(torch_mod):
    """reduction.py:178 [boolop] ``... == in_dtype or in_dtype.kind != "f"`` -> ``and``:
    the gradient of mean(dtype=...) is cast back to the input's dtype. complex64 with
    dtype=complex128 was not (kind 'c'): backward raised (a bug, fixed: the cast no longer
    depends on the kind, which also takes the mutant away); bfloat16 rounds as torch."""
    for dt, wide in (("complex64", "complex128"), ("bfloat16", "float32"), ("float32", "float64")):
        grads = []
        for lib in (torch_mod, tg):
            x = lib.tensor([1.0, 2.0, 4.0]).to(getattr(lib, dt)).requires_grad_()
            lib.autograd.backward(x.mean(dtype=getattr(lib, wide)).abs())
            assert x.grad.dtype == x.dtype
            grads.append(x.grad.to(lib.complex64).numpy())
        np.testing.assert_array_equal(grads[1], grads[0])


def test_fuse_linear_bn_eval_needs_both_running_stats(torch_mod):
    """fusion.py:68 [boolop] ``... is None or ... is None`` -> ``and``: a BatchNorm without
    running_var (running_mean kept) is refused, as torch."""
    import importlib

    for lib in (torch_mod, tg):
        fusion = importlib.import_module(lib.__name__ + ".nn.utils.fusion")
        bn = lib.nn.BatchNorm1d(2).eval()
        bn.running_var = None
        with pytest.raises(AssertionError, match="must not be None"):
            fusion.fuse_linear_bn_eval(lib.nn.Linear(3, 2).eval(), bn)


def test_hessian_of_prod_with_zeros_runs_batched(monkeypatch, torch_mod):
    """scan.py:32 [compare] ``d >= 0`` -> ``(d > 0)``: _flip counts dim 0 from the right too,
    so its backward flips the right dim of a batched gradient: the Hessian of prod over dim
    0 with zeros (the rule without division, built on _flip) runs in one batched pass (the
    probe caught the wrong flip and fell back to the row loop: same values, so the path is
    checked)."""
    from tapegrad.autograd import batched

    def refuse(*args, **kwargs):
        raise AssertionError("the batched pass should have been kept")

    monkeypatch.setattr(batched, "_row_loop", refuse)
    xd = np.array([[1.0, 3.0], [0.0, 0.5], [2.0, 0.0]])
    want = torch_mod.autograd.functional.hessian(
        lambda x: x.prod(0).sum(), torch_mod.tensor(xd), vectorize=True
    )
    got = tg.autograd.functional.hessian(lambda x: x.prod(0).sum(), tg.tensor(xd), vectorize=True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("name, gates", [("rnn_tanh", 1), ("gru", 3), ("lstm", 4)])
def test_aten_recurrent_functions_by_keyword_match_torch(torch_mod, name, gates):
    """_rnn_aten.py:49 [compare] ``len(args) > 1`` -> ``>= 1``: with only the input passed by
    position, the padded overload is taken (``hx`` by keyword made RNN/GRU look packed: a
    TypeError for batch_first, a bug, fixed); ``batch_sizes`` by keyword names the packed
    one."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 1, 3))
    h = rng.standard_normal((1, 1, 2))
    ps = [rng.standard_normal(s) for s in ((2 * gates, 3), (2 * gates, 2), (2 * gates,))]
    ps.append(rng.standard_normal(2 * gates))
    outs = []
    for lib in (torch_mod, tg):
        hx = lib.tensor(h) if name != "lstm" else (lib.tensor(h), lib.tensor(h))
        kw = dict(hx=hx, params=[lib.tensor(p) for p in ps], has_biases=True, num_layers=1)
        kw.update(dropout=0.0, train=False, bidirectional=False)
        fn = getattr(lib, name)
        outs.append(fn(lib.tensor(x), batch_first=False, **kw)[0].detach().numpy())
        outs.append(fn(lib.tensor(x[:, 0]), batch_sizes=lib.tensor([1, 1]), **kw)[0].numpy())
    np.testing.assert_allclose(outs[2], outs[0], rtol=1e-12)
    np.testing.assert_allclose(outs[3], outs[1], rtol=1e-12)


def test_a_binary_op_with_a_complex_number_promotes_to_complex(torch_mod):
    """_table.py:246 [boolop] ``isinstance(da, complex) or isinstance(db, complex)`` ->
    ``and``: a float tensor with a Python complex computes in complex64, where copysign has
    no kernel: torch's NotImplementedError (the mutant's float32 could not hold 1j)."""
    for lib in (torch_mod, tg):
        with pytest.raises(NotImplementedError, match="copysign_cpu.*ComplexFloat"):
            lib.copysign(lib.tensor([1.0, -2.0]), 1j)


def test_trunc_normal_warns_only_for_a_mean_beyond_two_std_of_its_range(torch_mod):
    """init.py:197 [binop] ``a - 2 * std`` -> ``(a + 2 * std)``: a mean inside [a, b] draws
    without the warning; one below a - 2·std warns, as torch."""
    import warnings

    for lib in (torch_mod, tg):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            t = lib.nn.init.trunc_normal_(lib.empty(50), mean=0.0, std=1.0, a=-1.0, b=1.0)
        assert float(t.abs().max()) <= 1.0
        with pytest.warns(UserWarning, match="mean is more than 2 std from"):
            lib.nn.init.trunc_normal_(lib.empty(5), mean=-3.5, std=1.0, a=-1.0, b=1.0)


def test_profile_table_gives_a_lone_range_all_of_the_time():
    """profiler_util.py:22 [const] ``100.0`` -> ``101.0``: a range's share is its time over
    the total, in percent: a profile of one range shows 100.00% (self and total)."""
    with tg.autograd.profiler.profile() as prof:
        with tg.autograd.profiler.record_function("only"):
            pass
    row = [line for line in prof.key_averages().table().splitlines() if "only" in line]
    assert len(row) == 1 and row[0].split().count("100.00%") == 2


def test_attention_splits_over_threads_only_when_there_are_several(monkeypatch, torch_mod):
    """_attention_split.py:30 [compare] ``num_threads() > 1`` -> ``>= 1``: with one thread
    (and no step pool) the split kernel is not used (the same values, so the path is
    checked); with two it is, and gives torch's values."""
    from tapegrad.nn import _attention_split

    monkeypatch.setattr(_attention_split, "STEP", [False])
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 4, 128, 8)) for _ in range(3))
    monkeypatch.setattr(_attention_split, "num_threads", lambda: 1)
    assert _attention_split.forward(q, k, v, None, 0.5, None) is None
    monkeypatch.setattr(_attention_split, "num_threads", lambda: 2)
    out = _attention_split.forward(q, k, v, None, 0.5, None)[0]
    want = torch_mod.nn.functional.scaled_dot_product_attention(
        *(torch_mod.tensor(a) for a in (q, k, v)), scale=0.5
    )
    np.testing.assert_allclose(out, want.numpy(), rtol=1e-10, atol=1e-12)


def test_l1_pruning_where_torch_nth_element_runs_out_of_depth(torch_mod):
    """_prune_ties.py:80 [const] ``nth + 1 - first`` -> ``nth + 2 - first``: introselect
    that exhausts its depth limit (2·floor(log2 n) partitions; this 14-value vector, found
    by search, does) finishes by heap select of the ``nth + 1 - first`` smallest of the
    remaining range: the set torch's topk keeps among ties, so torch's mask."""
    import importlib

    w = [5.0, 5.0, 2.0, 1.0, 1.0, 1.0, 3.0, 2.0, 0.0, 0.0, 4.0, 5.0, 5.0, 5.0]
    masks = []
    for lib in (torch_mod, tg):
        prune = importlib.import_module(lib.__name__ + ".nn.utils.prune")
        m = lib.nn.Linear(len(w), 1, bias=False)
        with lib.no_grad():
            m.weight.copy_(lib.tensor([w]))
        prune.l1_unstructured(m, "weight", amount=6)
        masks.append(m.weight_mask.numpy().copy())
    np.testing.assert_array_equal(masks[1], masks[0])
