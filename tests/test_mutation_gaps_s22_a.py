"""Tests for lines of autograd/ and ops/ that no in-process test ran (session 22, list a):
each is seen to fail on the mutants of its line.

Covers autograd/anomaly.py, batched.py, checkgraph.py, engine.py, forward_ad.py,
function.py, grad_mode.py, graph.py, profiler.py and profiler_util.py (the docstrings name
the lines); the ops/ lines are in tests/test_mutation_gaps_s22_a2.py.
"""

import warnings

import numpy as np
import pytest

import tapegrad as tg

# -- autograd/anomaly.py --------------------------------------------------------------------


def test_anomaly_mode_records_consumers_of_a_node_made_outside_it(torch_mod):
    """anomaly.py:157 [drop] ``child.metadata = {}``: a Node made before detect_anomaly()
    (no metadata yet) that a Node made inside consumes gets its metadata, as torch runs it."""
    grads = []
    for lib in (torch_mod, tg):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        with lib.autograd.detect_anomaly():
            z = y.sin()
        z.sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


def test_anomaly_nan_in_a_graph_built_outside_detect_anomaly_names_the_op(torch_mod):
    """anomaly.py:167 [drop] the "no creation record" hint: backward under detect_anomaly()
    of a graph built outside it raises torch's RuntimeError, and says why no line is shown."""
    for lib in (torch_mod, tg):
        x = lib.tensor([-1.0, 4.0], requires_grad=True)
        y = x.sqrt()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match=r"'SqrtBackward0?' returned nan values") as e:
                with lib.autograd.detect_anomaly():
                    y.sum().backward()
    assert "(no creation record: build the graph inside detect_anomaly())" in str(e.value)


def _two_outputs(lib):
    class Two(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone(), x.clone()

        @staticmethod
        def backward(ctx, ga, gb):
            return ga / ga  # 0 / 0

    return Two


def test_anomaly_nan_of_a_two_output_node_gets_no_masked_branch_hint(torch_mod):
    """anomaly.py:209 [drop] ``return ""``: the masked-branch hint is only for Nodes with one
    output; a two-output Function whose backward gives 0 / 0 raises torch's plain error."""
    for lib in (torch_mod, tg):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match=r"'TwoBackward' returned nan values") as e:
                with lib.autograd.detect_anomaly():
                    a, _ = _two_outputs(lib).apply(x)
                    (a * 0).sum().backward()
    assert "gradient flowing into" not in str(e.value)


# -- autograd/batched.py --------------------------------------------------------------------


def test_vectorized_jacobian_falls_back_when_a_batched_rule_drops_a_gradient(torch_mod):
    """batched.py:83 [drop] / [const] ``return False``: a custom backward that gives None
    for an input only when its gradient carries a batch dimension fails the probe, and the
    Jacobian is computed row by row, as torch's vectorize=True (vmap) gives it."""
    jacs = []
    for lib in (torch_mod, tg):

        class Rule(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * 2 + y

            @staticmethod
            def backward(ctx, g):
                return g * 2, (None if g.dim() > 1 else g)

        x, y = lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0])
        jac = lib.autograd.functional.jacobian(Rule.apply, (x, y), vectorize=True)
        jacs.append([j.numpy() for j in jac])
    for got, want in zip(jacs[1], jacs[0]):
        np.testing.assert_array_equal(got, want)


# -- autograd/checkgraph.py -----------------------------------------------------------------


def test_attach_replay_on_a_node_made_outside_checkable():
    """checkgraph.py:45 [drop] ``node.metadata = {}``: attach_replay gives a Node made
    outside checkable() (no metadata yet) its replay, and check_graph then checks it."""
    from tapegrad.autograd.checkgraph import attach_replay

    x = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64, requires_grad=True)
    y = x.sin()
    with pytest.raises(RuntimeError, match="no replay records"):
        tg.autograd.check_graph(y)
    attach_replay(y.grad_fn, tg.sin, (x,), {})
    assert tg.autograd.check_graph(y) is None


def test_check_graph_replays_a_factory_made_op_with_its_keyword_arguments():
    """checkgraph.py:78 [drop] ``kwargs.update(...)``: tg.hardshrink(x, lambd=1.0) is replayed
    with lambd=1.0, so its Node is checked (and its jump at |x| = lambd, where central
    differences blow up, is reported); without the keyword the replay does not reproduce
    and the Node would be skipped. Also the fix that ops made by one factory (they share a
    code object) are told apart: F.elu used to be replayed as logsigmoid, and skipped."""
    import tapegrad.nn.functional as F

    with tg.autograd.checkable():
        x = tg.tensor([1.0, 0.7, -2.0], dtype=tg.float64, requires_grad=True)
        y = tg.hardshrink(x, lambd=1.0)
        z = F.elu(tg.tensor([0.0, -1.0, 1.0], dtype=tg.float64, requires_grad=True), 2.0)
        s = F.softsign(x)
    assert tg.autograd.check_graph(y, raise_exception=False).name == "HardshrinkBackward"
    assert y.grad_fn.metadata["replay"][0].__name__ == "hardshrink"
    # elu with alpha=2 has a kink at 0: checked, so reported; softsign is smooth.
    assert tg.autograd.check_graph(z, raise_exception=False).name == "EluBackward"
    assert s.grad_fn.metadata["replay"][0].__name__ == "softsign"
    assert tg.autograd.check_graph(s) is None


def test_check_graph_skips_nodes_without_a_real_float_input():
    """checkgraph.py:192 [drop] ``return None``: the Nodes of a complex computation (no
    float input that requires grad) are skipped, not replayed with no outputs to weigh."""
    with tg.autograd.checkable():
        z = tg.tensor([1 + 2j, 3 - 1j], requires_grad=True)
        y = (z * 2).abs().sum()
    assert tg.autograd.check_graph(y) is None


class _Float32Only(tg.autograd.Function):
    """Its forward refuses float64, so its float64 replay raises."""

    @staticmethod
    def forward(ctx, x):
        if x.dtype != tg.float32:
            raise TypeError("float32 only")
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return g * 3


class _Changing(tg.autograd.Function):
    """First call: two outputs 2x and 3x with a right backward. Later calls (replays):
    the outputs of ``_Changing.later`` and a wrong backward (zeros)."""

    later = ["fewer"]
    calls = [0]

    @staticmethod
    def forward(ctx, x):
        _Changing.calls[0] += 1
        ctx.first = _Changing.calls[0] == 1
        if ctx.first:
            return x * 2, x * 3
        if _Changing.later[0] == "fewer":
            return x * 2
        return (x * 2).repeat(2), x * 3

    @staticmethod
    def backward(ctx, *gs):
        if ctx.first:
            return gs[0] * 2 + gs[1] * 3
        return gs[0] * 0


@pytest.mark.parametrize("later", ["fewer", "reshaped"])
def test_check_graph_skips_replays_that_raise_or_do_not_reproduce(later):
    """checkgraph.py:203 [drop] ``return None`` (a replay that raises is skipped), :254 and
    :257 [drop] / [const] ``return False`` (a replay with fewer float outputs, or one of
    another shape, does not reproduce the recorded output: skipped, never blamed)."""
    _Changing.later[0], _Changing.calls[0] = later, 0
    with tg.autograd.checkable():
        x = tg.tensor([0.5, -1.0, 2.0], requires_grad=True)
        a, b = _Changing.apply(x)
        y = _Float32Only.apply(a + b).sum()
    assert tg.autograd.check_graph(y) is None


# -- autograd/engine.py ---------------------------------------------------------------------


def _rule_grad(rule, array_rule=None):
    """x.grad through one Node recorded by make_result with Tensor rule ``rule`` (and
    array rule ``array_rule``): how an op writer's rule reaches the engine."""
    from tapegrad.autograd.graph import make_result

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    out = make_result(x._data * 2, (x,), rule, "TestBackward", array_backward=array_rule)
    out.backward(tg.ones_like(out))
    return x.grad


def test_a_tensor_rule_may_return_a_bare_tensor_none_or_a_list():
    """engine.py:435 [drop] ``in_grads = _as_grad_tuple(...)``, :635 ``return tuple(value)``,
    :636 [boolop] / [compare], :637 ``return (value,)``: a rule's bare Tensor, bare None
    or list is taken as its one gradient per input."""
    np.testing.assert_array_equal(_rule_grad(lambda g: g * 2).numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(_rule_grad(lambda g: [g * 3]).numpy(), [3.0, 3.0])
    assert _rule_grad(lambda g: None) is None


def test_a_tensor_rule_returning_a_number_is_a_type_error():
    """engine.py:638 [drop] the TypeError: a rule that returns neither Tensors nor None."""
    with pytest.raises(TypeError, match=r"TestBackward's backward returned float; expected"):
        _rule_grad(lambda g: 2.0)


def test_an_array_rule_with_too_many_gradients_is_refused():
    """engine.py:352 [drop] the RuntimeError: an array rule (Note [Array backward]) that
    returns more gradients than its op has inputs."""

    def rule(g):
        raise AssertionError("the array rule should run")

    with pytest.raises(RuntimeError, match="TestBackward returned 2 gradients but its op has 1"):
        _rule_grad(rule, lambda g: (g, g))


# -- autograd/graph.py ----------------------------------------------------------------------


def test_accumulate_grad_node_is_never_applied_as_a_plain_node():
    """graph.py:291 [drop] the AssertionError: the engine accumulates a leaf's gradient
    itself; applying the leaf's AccumulateGrad Node like another Node is an internal error."""
    x = tg.ones(2, requires_grad=True)
    node = (x * 2).grad_fn.next_functions[0][0]
    with pytest.raises(AssertionError, match="AccumulateGrad is run by the engine"):
        node.apply([tg.ones(2)], False)


def test_arrays_of_takes_a_bare_tensor_none_or_a_list():
    """graph.py:370 [drop] / [boolop] / [compare]: arrays_of (an array rule's fallback to its
    Tensor rule) takes a rule's bare Tensor, bare None or list as one gradient per input."""
    from tapegrad.autograd.graph import arrays_of

    t = tg.tensor([1.0, 2.0])
    (a,) = arrays_of(t)
    assert a is t._data
    assert arrays_of(None) == (None,)
    got = arrays_of([t, None])
    assert len(got) == 2 and got[0] is t._data and got[1] is None


def test_a_view_used_after_its_base_changed_in_place_is_recorded_again(torch_mod):
    """graph.py:467 [drop] ``fn = _refresh_view(...)``: an op with several outputs (split,
    recorded by make_results) on a view taken before its base was modified in place
    records the view afresh from the base, as torch does."""
    grads = []
    for lib in (torch_mod, tg):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        base = x * 1
        v = base[0:2]
        base.mul_(2)
        a, b = v.split(1)
        y = a * 3 + b
        y.sum().backward()
        grads.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_array_equal(grads[1][0], grads[0][0])
    np.testing.assert_array_equal(grads[1][1], grads[0][1])


def test_a_multi_output_node_whose_complex_rule_is_replaced_drops_its_array_rule(monkeypatch):
    """graph.py:714 [drop] ``backward, array_backward = guarded, None``: when the complex
    guard (Note [Complex autograd guard]) records another rule for a Node with several
    outputs, the op's array rule (written for the plain rule) is not used. No multi-output
    op is HOLOMORPHIC or REPLACED yet, so the guard is given one for split here."""
    from tapegrad.ops import complex_guard

    def doubled(inputs):
        return lambda *grads: (tg.cat([g * 2 for g in grads]),)

    monkeypatch.setitem(complex_guard.REPLACED, "SplitBackward", doubled)
    monkeypatch.setattr(complex_guard, "SAME", complex_guard.SAME - {"SplitBackward"})
    z = tg.tensor([1 + 1j, 2 - 1j, 3j, 4.0], requires_grad=True)
    a, b = z.split(2)
    (a.abs().sum() + b.abs().sum()).backward()
    want = 2 * z.detach().numpy() / np.abs(z.detach().numpy())
    np.testing.assert_allclose(z.grad.numpy(), want, rtol=1e-6)


# -- autograd/forward_ad.py -----------------------------------------------------------------


def test_make_dual_refuses_a_tangent_of_another_dtype():
    """forward_ad.py:192 [drop] the RuntimeError: tapegrad refuses a tangent whose float dtype
    is not the primal's (torch keeps the tangent's dtype: a deviation, docs/testing.md)."""
    fwAD = tg.autograd.forward_ad
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="tangent's dtype float64 must match the primal's"):
            fwAD.make_dual(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 2.0], dtype=tg.float64))


def test_forward_ad_through_bfloat16():
    """A bug fixed (forward_ad.py, _propagate/_derived took only kind "f" as float): a dual
    cast to bfloat16 crashed with AttributeError; now it carries a bfloat16 tangent, as in
    torch (whose first forward-mode call takes seconds: the numbers are checked against
    the derivative here). Also covers forward_ad.py:299 (the dead tangent cast, removed)."""
    fwAD = tg.autograd.forward_ad
    with fwAD.dual_level():
        d = fwAD.make_dual(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 0.3]))
        b = d.to(tg.bfloat16)
        y = ((b * 3).sin()).float()
        tb, ty = fwAD.unpack_dual(b).tangent, fwAD.unpack_dual(y).tangent
    assert tb.dtype == tg.bfloat16 and ty.dtype == tg.float32
    np.testing.assert_array_equal(tb.float().numpy(), [1.0, 0.30078125])  # 0.3 in bfloat16
    want = 3 * np.cos(3 * np.array([1.0, 2.0])) * np.array([1.0, 0.30078125])
    np.testing.assert_allclose(ty.detach().numpy(), want, rtol=2e-2)


def test_jacfwd_falls_back_when_a_batched_rule_loses_the_batch_dimension():
    """forward_ad.py:329 [drop] the BatchingError: jacfwd's batched tangents meet an op's
    backward rule whose gradient lacks the batch prefix (it flattens it away); the Jacobian
    is then computed per column. (A Function's gradient is checked before, in function.py.)"""
    from tapegrad.autograd.graph import make_result

    def rule(g):
        return (g.reshape(-1) * 2,)

    def op(x):
        return make_result(x._data * 2, (x,), rule, "TestBackward")

    jac = tg.func.jacfwd(op)(tg.tensor([1.0, 2.0]))
    np.testing.assert_array_equal(jac.numpy(), 2 * np.eye(2))


def _ldl_solve_rule(lib):
    A = lib.tensor([[4.0, 1.0], [1.0, 3.0]], dtype=lib.float64)
    LD, piv = lib.linalg.ldl_factor(A)

    class Solve(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return lib.linalg.ldl_solve(LD, piv, x)

        @staticmethod
        def backward(ctx, g):
            return lib.linalg.ldl_solve(LD, piv, g)  # A is symmetric

    return Solve, LD, piv


def test_ldl_solve_has_no_derivative_like_torch(torch_mod):
    """ldl.py:28 [drop] the RuntimeError of linalg_ldl_solve's backward (torch's message)."""
    for lib in (torch_mod, tg):
        _, LD, piv = _ldl_solve_rule(lib)
        b = lib.ones(2, 1, dtype=lib.float64, requires_grad=True)
        x = lib.linalg.ldl_solve(LD, piv, b)
        with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_solve is not"):
            x.sum().backward()


def test_jvp_through_a_rule_that_cannot_be_differentiated_names_the_node():
    """forward_ad.py:346 [drop] ``raise _no_rule(node) from exc``: a custom backward written
    with an op that has no derivative (ldl_solve) gives no tangent: NotImplementedError."""
    Solve, _, _ = _ldl_solve_rule(tg)
    b = tg.ones(2, 1, dtype=tg.float64)
    with pytest.raises(NotImplementedError, match="SolveBackward has no JVP rule"):
        tg.func.jvp(Solve.apply, (b,), (tg.ones_like(b),))


def test_jvp_through_a_once_differentiable_backward_is_refused():
    """A bug fixed (forward_ad._derived): a @once_differentiable backward's outputs require
    grad but are not recorded in terms of the output gradient, so the derived tangent was
    silently zero; now NotImplementedError names the Node."""
    from tapegrad.autograd.function import once_differentiable

    class Once(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            return g * 2

    x = tg.tensor([1.0, 2.0, 3.0])
    with pytest.raises(NotImplementedError, match="OnceBackward has no JVP rule"):
        tg.func.jvp(Once.apply, (x,), (tg.ones(3),))


# -- autograd/function.py, grad_mode.py -----------------------------------------------------


def test_function_forward_returning_no_tensor_is_a_type_error():
    """function.py:189 [drop] the TypeError (torch returns the value: a deviation kept,
    docs/testing.md)."""

    class NoTensor(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return 3.0

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="NoTensor.forward must return a Tensor or a tuple"):
        NoTensor.apply(tg.ones(2, requires_grad=True))


def test_once_differentiable_backward_returning_no_tensor(torch_mod):
    """function.py:352 [drop] ``return outputs``: a @once_differentiable backward that returns
    only None under create_graph gives no gradient, as in torch."""
    for lib in (torch_mod, tg):

        class Nothing(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            @lib.autograd.function.once_differentiable
            def backward(ctx, g):
                return None

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = Nothing.apply(x)
        got = lib.autograd.grad(y.pow(2).sum(), x, create_graph=True, allow_unused=True)
        assert got == (None,)


def test_set_multithreading_enabled_clone_like_torch(torch_mod):
    """grad_mode.py:57 [drop] ``return type(self)(self.mode)``: clone() gives a new context
    manager with the same mode, as torch's."""
    for lib in (torch_mod, tg):
        mode = lib.autograd.grad_mode.set_multithreading_enabled
        try:
            twin = mode(False).clone()
            assert type(twin) is mode and twin is not None
            assert lib.autograd.is_multithreading_enabled() is False
            with mode(True):
                assert lib.autograd.is_multithreading_enabled() is True
        finally:
            mode(True)


# -- autograd/profiler.py, profiler_util.py -------------------------------------------------


def _profiled(lib):
    P = lib.autograd.profiler
    with P.profile() as prof:
        with P.record_function("a_fairly_long_outer_range_name"):
            with P.record_function("inner"):
                pass
        with P.record_function("inner"):
            pass
    return prof


def _names(table):
    """The Name cells of a profiler table (its rows between the second and third rules)."""
    lines = table.split("\n")
    rules = [i for i, line in enumerate(lines) if line.startswith("---")]
    width = lines[rules[0]].index(" ")
    return [line[:width].strip() for line in lines[rules[1] + 1 : rules[2]]]


def test_profiler_table_options_like_torch(torch_mod):
    """profiler.py:178 [drop] (profile.table), profiler_util.py:156 [drop] / [compare] (the
    top-level filter) and :170 (the cut of a long name): the rows, the cut names, the
    top-level banner and the rule widths are torch's (a fix: tapegrad sized the Name column
    after dropping nested rows, cut at the column width, not at max_name_column_width - 3,
    printed no banner, and its '=' rules were 2 longer)."""
    tables = []
    for lib in (torch_mod, tg):
        prof = _profiled(lib)
        tables.append(
            [
                prof.table(top_level_events_only=True, max_name_column_width=20),
                prof.table(max_name_column_width=22),
                prof.table(max_name_column_width=40),
            ]
        )
    for want, got in zip(*tables):
        assert _names(got) == _names(want)
        w, g = want.split("\n"), got.split("\n")
        assert [len(line) for line in g[:-2]] == [len(line) for line in w[:-2]]
        assert g[0] == w[0] and g[1] == w[1]
    assert _names(tables[1][0]) == ["a_fairly_long_out...", "inner"]


def test_profile_summaries_and_events():
    """profiler.py:162 (events), :169 (total_average), :190 [drop] / [compare] (__str__),
    profiler_util.py:139-143 (EventList.total_average), :89 and :121 (the reprs), :118
    (FunctionEventAvg +=), :203 (str of an EventList)."""
    prof = _profiled(tg)
    events = prof.events()
    assert [e.key for e in events] == ["a_fairly_long_outer_range_name", "inner", "inner"]
    assert repr(events[0]).startswith("<FunctionEvent id=0 name=a_fairly_long_outer_range_name ")
    assert repr(events[0]).endswith("cpu_children=[1]>")
    total = prof.total_average()
    assert total.key == "Total" and total.count == 3
    assert total.cpu_time_total == pytest.approx(sum(e.cpu_time_total for e in events))
    assert repr(total).startswith("<FunctionEventAvg key=Total self_cpu_time=")
    assert repr(total).endswith("count=3>")
    avg = prof.key_averages()[1]
    assert avg.key == "inner" and avg.count == 2
    same = avg
    avg += prof.key_averages()[1]
    assert avg is same and avg.count == 4
    assert str(prof) == prof.table() and str(events) == events.table()
    unfinished = tg.autograd.profiler.profile()
    assert str(unfinished) == repr(unfinished)


def test_profiler_reentry_and_disabled_like_torch(torch_mod):
    """profiler.py:115 [drop] the RuntimeError (entered twice), :125 [drop] / [const]
    ``return False`` (a disabled profile lets exceptions through), :203 and :206 (emit_nvtx
    disabled: ``with ... as e`` gives None, as torch's (a fix: tapegrad gave the object),
    and exceptions pass), as torch."""
    for lib in (torch_mod, tg):
        P = lib.autograd.profiler
        prof = P.profile()
        with prof:
            with pytest.raises(RuntimeError, match="Profiler context manager is not reentrant"):
                prof.__enter__()
        with pytest.raises(ValueError, match="through"):
            with P.profile(enabled=False):
                raise ValueError("through")
        with P.emit_nvtx(enabled=False) as entered:
            assert entered is None
        with pytest.raises(ValueError, match="through"):
            with P.emit_nvtx(enabled=False):
                raise ValueError("through")
