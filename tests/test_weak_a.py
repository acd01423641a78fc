"""Tests for conditions no test decided both ways (tools/weakmut.py, list A of issue 18):
each is seen to fail on its mutant. Labels name the condition's file and line."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import batched
from tapegrad.autograd.function import once_differentiable


def _no_row_loop(monkeypatch):
    def row_loop(*args, **kwargs):
        raise AssertionError("the batched pass was rejected: one backward per row ran")

    monkeypatch.setattr(batched, "_row_loop", row_loop)


def test_batched_grad_rows_whose_combination_overflows_float32_stay_batched(monkeypatch):
    """batched.py:100 (``err <= rtol * scale``): rows near float32's max whose random
    combination overflows to inf in the probe (err and scale both inf) do not reject the
    batched pass; each row is its own vector-Jacobian product (torch's: the row itself, for
    x * 1.0)."""
    _no_row_loop(monkeypatch)
    v = np.zeros((3, 2), np.float32)
    v[0] = 3e38
    v[2] = 1.0
    x = tg.ones(2, requires_grad=True)
    (g,) = tg.autograd.grad(x * 1.0, x, tg.tensor(v), is_grads_batched=True)
    np.testing.assert_array_equal(g.numpy(), v)


class _WrongSquareAndNone(tg.autograd.Function):
    """x² and a None output, with a backward that forgets the factor 2."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x, None

    @staticmethod
    def backward(ctx, g, *rest):
        (x,) = ctx.saved_tensors
        return g * x


def test_check_graph_blames_a_function_that_also_returns_a_non_tensor():
    """checkgraph.py:219: the replay keeps the float Tensors among a Function's outputs and
    skips the None beside them, so the wrong backward is still found."""
    x = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64, requires_grad=True)
    with tg.autograd.checkable():
        y, _ = _WrongSquareAndNone.apply(x)
    report = tg.autograd.check_graph(y.sum(), raise_exception=False)
    assert report is not None and report.name == "_WrongSquareAndNoneBackward"


def test_check_graph_with_zero_tolerances_passes_an_exact_zero_derivative():
    """checkgraph.py:264 (``>``): sign's derivative is 0 and so are its central differences,
    exactly; a disagreement of 0 is within tolerances of 0."""
    x = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64, requires_grad=True)
    with tg.autograd.checkable():
        y = x.sign()
    assert tg.autograd.check_graph(y, rtol=0.0, atol=0.0, raise_exception=False) is None


class _ScaleBy(tg.autograd.Function):
    """x * 0.01 whose backward is 1 % too large."""

    @staticmethod
    def forward(ctx, x):
        return x * 0.01

    @staticmethod
    def backward(ctx, g):
        return g * 0.0101


def test_check_graph_tolerance_is_relative_to_the_derivative_size():
    """checkgraph.py:264 (``rtol * max(...)``): a 1 % error in a small directional derivative
    (~0.01) is far outside ``atol + rtol * |derivative|`` and is reported."""
    x = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64, requires_grad=True)
    with tg.autograd.checkable():
        y = _ScaleBy.apply(x)
    report = tg.autograd.check_graph(y, raise_exception=False)
    assert report is not None and report.name == "_ScaleByBackward"
    assert abs(report.analytic - 1.01 * report.numeric) < 1e-6 * abs(report.numeric)


def test_make_dual_refuses_a_non_tensor_tangent():
    """forward_ad.py:179: a Python number as the tangent is refused up front (torch fails
    with an AttributeError reading it; tapegrad's TypeError names the problem)."""
    fwad = tg.autograd.forward_ad
    with fwad.dual_level():
        with pytest.raises(TypeError, match="expected Tensors for the primal and the tangent"):
            fwad.make_dual(tg.ones(2), 3.0)


def test_once_differentiable_backward_with_two_inputs_keeps_both_grads(torch_mod):
    """function.py:322: under create_graph both gradients of a two-input once_differentiable
    backward come back (torch's values), and differentiating either raises torch's error."""
    results = []
    for mod, od in ((torch_mod, torch_mod.autograd.function.once_differentiable),
                    (tg, once_differentiable)):  # fmt: skip

        class Mul(mod.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * b

            @staticmethod
            @od
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                return g * b, g * a

        a = mod.tensor([1.0, 2.0], requires_grad=True)
        b = mod.tensor([3.0, 4.0], requires_grad=True)
        v = mod.tensor([1.0, 10.0], requires_grad=True)
        ga, gb = mod.autograd.grad(Mul.apply(a, b), (a, b), v, create_graph=True)
        results.append((ga.detach().numpy(), gb.detach().numpy()))
        for g in (ga, gb):
            with pytest.raises(RuntimeError, match="differentiate twice"):
                g.sum().backward(retain_graph=True)
    np.testing.assert_array_equal(results[1][0], results[0][0])
    np.testing.assert_array_equal(results[1][1], results[0][1])


def test_gradgradcheck_passes_non_tensor_arguments_through(torch_mod):
    """gradcheck.py:232: an int among the inputs (the exponent) is handed to the function as
    it is, as torch's gradgradcheck does."""
    x0 = np.array([0.5, -1.5, 2.0])
    assert torch_mod.autograd.gradgradcheck(
        lambda x, k: x**k, (torch_mod.tensor(x0, requires_grad=True), 3)
    )
    x = tg.tensor(x0, requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda x, k: x**k, (x, 3))


def test_jit_cache_keys_parameters_by_signature_not_identity():
    """signature.py:42: a Parameter (a Tensor subclass) is a leaf of the call, keyed by its
    shape and dtype: a second Parameter of the same shape replays the same program with
    its own values."""
    p = tg.nn.Parameter(tg.ones(2))
    q = tg.nn.Parameter(tg.full((2,), 3.0))
    f = tg.jit.cache(lambda t: t * 2)
    with tg.no_grad():
        for _ in range(3):
            np.testing.assert_array_equal(f(p).numpy(), [2, 2])
            np.testing.assert_array_equal(f(q).numpy(), [6, 6])
    assert f.cache_info().currsize == 1


def test_explicit_complex_to_real_conversion_keeps_the_real_part(torch_mod, monkeypatch):
    """arithmetic.py:960 and a fix: ``.to(float64)`` / ``.double()`` called by the user on a
    complex tensor keep its real part and warn once a process, as torch (tapegrad did not
    warn; torch's warning is TORCH_WARN_ONCE, so it is not checked here); an implicit cast
    raises."""
    from tapegrad.ops import arithmetic

    monkeypatch.setattr(arithmetic, "_COMPLEX_TO_REAL_WARNED", [False])
    z = [1 + 2j, 3 - 1j]
    theirs = torch_mod.tensor(z).to(torch_mod.float64).numpy()
    with pytest.warns(UserWarning, match="discards the imaginary part") as record:
        np.testing.assert_array_equal(tg.tensor(z).to(tg.float64).numpy(), theirs)
        np.testing.assert_array_equal(tg.tensor(z).double().numpy(), theirs)
    assert len(record) == 1 and record[0].filename == __file__


def _profile_with_clock(monkeypatch, ticks, names):
    """A profile of nested record_function ranges ``names`` (outermost first) read on a
    clock that returns ``ticks`` in turn (origin, each start, then each end)."""
    from types import SimpleNamespace

    from tapegrad.autograd import profiler

    it = iter(ticks)
    monkeypatch.setattr(profiler, "time", SimpleNamespace(perf_counter_ns=lambda: next(it)))
    prof = profiler.profile()
    with prof:
        ranges = [profiler.record_function(n) for n in names]
        for r in ranges:
            r.__enter__()
        for r in reversed(ranges):
            r.__exit__(None, None, None)
    return prof


def test_profiler_nests_a_range_that_ends_with_its_parent(monkeypatch):
    """profiler.py:144: a range that ends on the same clock tick as the one enclosing it is
    still its child (torch nests ranges by containment)."""
    prof = _profile_with_clock(monkeypatch, [0, 1000, 2000, 3000, 3000], ["outer", "inner"])
    outer, inner = prof.events()
    assert (outer.name, inner.name) == ("outer", "inner")
    assert inner.cpu_parent is outer and outer.cpu_children == [inner]
    assert outer.self_cpu_time_total == 1.0


def test_profiler_table_of_zero_total_time_shows_nan_shares(monkeypatch):
    """profiler_util.py:22: with a total CPU time of 0 the shares read "NaN", as torch's
    _format_time_share (no division by zero); a total of 1 us is a plain 100.00 %."""
    prof = _profile_with_clock(monkeypatch, [0, 5, 5], ["step"])
    assert "NaN" in prof.table() and "%" not in prof.table().split("step")[1]
    prof = _profile_with_clock(monkeypatch, [0, 5000, 6000], ["step"])
    assert "100.00%" in prof.table() and "NaN" not in prof.table()


def _rows(table):
    lines = table.splitlines()[3:]
    return [line for line in lines if line and not line.startswith(("-", "Self CPU time"))]


@pytest.mark.parametrize("row_limit, shown", [(None, 3), (-1, 3), (0, 0), (1, 1), (2, 2)])
def test_profiler_table_row_limit_as_torch(monkeypatch, row_limit, shown):
    """profiler_util.py:161: torch's table stops after ``row_limit`` rows: 0 shows none,
    a negative limit or None shows all."""
    prof = _profile_with_clock(monkeypatch, [0, 1000, 2000, 3000, 4000, 5000, 6000],
                               ["a", "b", "c"])  # fmt: skip
    rows = _rows(prof.table(row_limit=row_limit))
    assert len(rows) == shown


@pytest.mark.parametrize("length, cut", [(50, False), (51, False), (52, True), (53, True)])
def test_profiler_table_cuts_names_of_width_minus_three_as_torch(monkeypatch, length, cut):
    """profiler_util.py:170: torch cuts a name of ``max_name_column_width - 3`` characters
    or more to that many and appends "..." (55 by default: 52 characters are cut)."""
    name = "n" * (length - 1) + "z"
    prof = _profile_with_clock(monkeypatch, [0, 1000, 2000], [name])
    (row,) = _rows(prof.table())
    shown = row.split()[0]
    assert shown == (name[:52] + "..." if cut else name)


def test_arrays_of_hands_over_a_fresh_gradient_only_when_it_is_not_shared():
    """graph.py:381: a fresh Tensor (Note [Fresh gradients]) that a Tensor rule returns for
    one input alone becomes a fresh array the engine may add into in place; returned for two
    inputs it must not, else accumulating one input's gradient would change the other's.
    (No built-in rule reached through arrays_of hands out fresh Tensors today: the contract
    is checked on arrays_of itself.)"""
    from tapegrad.autograd import graph

    saved = graph.OWNED.current
    try:
        for grads, fresh in (("a",), True), (("a", "b"), True), (("a", "a"), False):
            graph.OWNED.current = {0: None}  # a running backward's dict (non-empty)
            made = {k: graph.fresh_grad(np.ones(2)) for k in set(grads)}
            out = graph.arrays_of(tuple(made[k] for k in grads))
            assert (id(out[0]) in graph.OWNED.current) is fresh, grads
    finally:
        graph.OWNED.current = saved


@pytest.mark.parametrize("wrap", [lambda a: [a], lambda a: {"k": a}], ids=["list", "dict"])
def test_saved_arrays_follow_containers_three_levels_deep(wrap):
    """memory.py:94 and :97: the arrays a backward closure captures are found inside lists,
    tuples and dicts nested up to three levels; what lies deeper is not looked at."""
    from tapegrad.autograd.graph import make_result
    from tapegrad.autograd.memory import saved_arrays

    x = tg.ones(2, requires_grad=True)
    kept, deep = np.zeros(3), np.zeros(5)
    three, four = wrap(wrap(wrap(kept))), wrap(wrap(wrap(wrap(deep))))

    def backward(g):
        assert three and four
        return (g,)

    y = make_result(x._data * 2, (x,), backward, "NestedBackward")
    found = [id(a) for a in saved_arrays(y.grad_fn)]
    assert id(kept) in found and id(deep) not in found


@pytest.mark.parametrize(
    "op",
    [
        lambda m: m.tensor([1, 120], dtype=m.int8) < 100,
        lambda m: m.tensor([1, 120], dtype=m.int8).clamp(max=100),
        lambda m: m.tensor([1, 120], dtype=m.int8).masked_fill(m.tensor([True, False]), 100),
        lambda m: m.tensor([1, 30000], dtype=m.int16) < 20000,
        lambda m: m.tensor([1, 2**31 - 1], dtype=m.int32).clamp(min=2**30 + 5),
    ],
)
def test_python_ints_in_the_upper_half_of_a_signed_dtype_keep_their_value(torch_mod, op):
    """_int_scalars.py:53: a Python int between 2**(bits-2) and 2**(bits-1) fits the signed
    dtype as it is: compared, clamped to and filled with its own value, as torch."""
    ours, theirs = op(tg), op(torch_mod)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


@pytest.mark.parametrize("value", [-(2**63) - 1, -(2**64), 2**64, 2**65 - 1])
def test_python_ints_beyond_64_bits_overflow_as_torch(torch_mod, value):
    """_int_scalars.py:49: an int outside [-2**63, 2**64) is not wrapped to the tensor's
    dtype: adding it raises OverflowError, as torch."""
    with pytest.raises(OverflowError):
        torch_mod.tensor([5]) + value
    with pytest.raises(OverflowError):
        tg.tensor([5]) + value


def _same_dtype_name(ours, theirs):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


@pytest.mark.parametrize(
    "op",
    [
        lambda m: m.tensor([True, False]).add(2.5, alpha=2),
        lambda m: m.tensor([True, False]).add(3, alpha=2),
        lambda m: m.tensor([1, 2]).add(True, alpha=2),
        lambda m: m.tensor([1.0, 2.0]).add(True, alpha=2),
        lambda m: m.tensor([True, False]).add(True, alpha=True),
        lambda m: m.tensor([1, 2], dtype=m.int16).add(300, alpha=2),
        lambda m: m.tensor([1, 2], dtype=m.int16).sub(3, alpha=-2),
        lambda m: m.tensor([1.0, 2.0], dtype=m.float16).add(3, alpha=2),
    ],
)
def test_add_and_sub_with_a_number_and_alpha_promote_as_torch(torch_mod, op):
    """arithmetic.py:280 and :292: a number beside a bool, int16 or half tensor, scaled by
    alpha, stays a weak scalar: torch's values and result dtype."""
    ours, theirs = op(tg), op(torch_mod)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    _same_dtype_name(ours, theirs)


@pytest.mark.parametrize(
    "a, b",
    [((1 + 1j, 2j), 0.5), (1 + 1j, (0.5, 1.0))],
    ids=["complex-tensor-0d-float", "0d-complex-float-tensor"],
)
@pytest.mark.parametrize("cdt", ["complex64", "complex128"])
def test_logaddexp_of_complex_and_a_0d_float_promotes_as_torch(torch_mod, a, b, cdt):
    """_table.py:243: logaddexp with a complex and a float operand, one of them 0-d, is
    complex; a dimensioned complex keeps its width, a 0-d one takes the float's."""
    res = []
    for m in (torch_mod, tg):
        res.append(m.logaddexp(m.tensor(a, dtype=getattr(m, cdt)), m.tensor(b, dtype=m.float64)))
    np.testing.assert_allclose(res[1].numpy(), res[0].numpy(), rtol=1e-6)
    _same_dtype_name(res[1], res[0])


@pytest.mark.parametrize("first_complex", [True, False])
def test_heaviside_of_complex_and_float_is_refused_as_complex(torch_mod, first_complex):
    """binary_table.py:105: one complex operand is enough for torch's complex message
    (not the one about different dtypes)."""
    for m in (torch_mod, tg):
        a, b = m.tensor([1 + 1j]), m.tensor([0.5])
        with pytest.raises(RuntimeError, match="not yet implemented for complex tensors"):
            m.heaviside(*((a, b) if first_complex else (b, a)))


@pytest.mark.parametrize("shapes", [((0,), (3,)), ((2, 0), (1, 3))])
def test_broadcast_shapes_of_a_zero_size_against_another_size_is_a_mismatch(torch_mod, shapes):
    """broadcasting.py:51: a size of 0 is not negative: 0 against 3 is a mismatch, torch's
    RuntimeError (not the ValueError for negative sizes)."""
    with pytest.raises(RuntimeError):
        torch_mod.broadcast_shapes(*shapes)
    with pytest.raises(RuntimeError, match="must match"):
        tg.broadcast_shapes(*shapes)


@pytest.mark.parametrize("side", ["prepend", "append"])
def test_diff_with_only_prepend_or_append_uses_it(torch_mod, side):
    """calculus.py:52: one extra tensor beside the input is joined to it before differencing."""
    x, extra = [1.0, 4.0, 9.0], [0.0, -2.0]
    theirs = torch_mod.diff(torch_mod.tensor(x), **{side: torch_mod.tensor(extra)})
    ours = tg.diff(tg.tensor(x), **{side: tg.tensor(extra)})
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_histogramdd_of_no_points_with_more_dims_than_points_axis(torch_mod):
    """counting.py:182: the number of dimensions binned is the LAST size: (2, 0, 2) holds no
    points of 2 dimensions, binned into a (2, 2) histogram of zeros over [0, 1], as torch."""
    theirs = torch_mod.histogramdd(torch_mod.zeros(2, 0, 2), bins=2)
    ours = tg.histogramdd(tg.zeros(2, 0, 2), bins=2)
    np.testing.assert_array_equal(ours.hist.numpy(), theirs.hist.numpy())
    for o, t in zip(ours.bin_edges, theirs.bin_edges, strict=True):
        np.testing.assert_array_equal(o.numpy(), t.numpy())


@pytest.mark.parametrize("rng", [(0.0, float("inf")), (float("-inf"), 1.0)])
def test_histogram_range_with_one_infinite_end_is_refused(torch_mod, rng):
    """counting.py:42: either end infinite is refused, with torch's RuntimeError."""
    with pytest.raises(RuntimeError, match="is not finite"):
        torch_mod.histogram(torch_mod.tensor([0.5, 0.7]), bins=3, range=rng)
    with pytest.raises(RuntimeError, match="is not finite"):
        tg.histogram(tg.tensor([0.5, 0.7]), bins=3, range=rng)


@pytest.mark.parametrize("edges", [[0.5], [0.5, 1.0]])
def test_histogramdd_bins_tensor_of_one_edge_is_zero_bins(torch_mod, edges):
    """counting.py:75 and a fix: one edge makes no bin, torch's RuntimeError "bins must be > 0"
    (tapegrad returned an empty histogram); two edges make one bin."""
    for m in (torch_mod, tg):
        x, bins = m.tensor([[0.7, 0.2], [0.9, 0.6]]), [m.tensor([0.0, 1.0]), m.tensor(edges)]
        if len(edges) == 1:
            with pytest.raises(RuntimeError, match="bins must be > 0, but got 0 for dimension 1"):
                m.histogramdd(x, bins=bins)
        else:
            np.testing.assert_array_equal(m.histogramdd(x, bins=bins).hist.numpy(), [[1.0]])


@pytest.mark.parametrize(
    "a, atol",
    [([[1.0, 0.0], [0.0, 1e-20]], 0.0), ([[1e17, 0.0], [0.0, 10.0]], 0.5)],
    ids=["atol-0-keeps-default-rtol", "atol-0.5-drops-rtol"],
)
def test_pinv_tolerance_defaults_follow_torch(torch_mod, a, atol):
    """decomp.py:262: rtol defaults to eps * max(m, n) unless atol > 0 is given: with
    atol=0 a singular value of 1e-20 is still cut, with atol=0.5 a value of 10 beside 1e17
    is kept (no relative cut), as torch."""
    theirs = torch_mod.linalg.pinv(torch_mod.tensor(a, dtype=torch_mod.float64), atol=atol)
    ours = tg.linalg.pinv(tg.tensor(a, dtype=tg.float64), atol=atol)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=0)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 3), (1, 3), (3, 1)])
def test_pinv_of_empty_and_single_row_or_column_matrices(torch_mod, shape):
    """decomp.py:273: an empty matrix's pseudo-inverse is the empty transpose (gradient: empty
    zeros); a single row or column is an ordinary one, as torch."""
    a = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    ta = torch_mod.tensor(a, requires_grad=True)
    ga = tg.tensor(a, requires_grad=True)
    tp, gp = torch_mod.linalg.pinv(ta), tg.linalg.pinv(ga)
    np.testing.assert_allclose(gp.detach().numpy(), tp.detach().numpy(), rtol=1e-12, atol=1e-15)
    (tp * tp).sum().backward()
    (gp * gp).sum().backward()
    np.testing.assert_allclose(ga.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize(
    "kwargs", [{"hermitian": True}, {"atol": [1.0, 2.0]}], ids=["hermitian", "atol-tensor"]
)
def test_pinv_of_an_empty_matrix_ignores_hermitian_and_tolerances(torch_mod, kwargs):
    """decomp.py:273 (``or``): a (0, 3) matrix's pseudo-inverse is the empty (3, 0), whatever
    hermitian and the tolerances say, as torch."""
    shapes = []
    for m in (torch_mod, tg):
        kw = {k: m.tensor(v) if isinstance(v, list) else v for k, v in kwargs.items()}
        shapes.append(tuple(m.linalg.pinv(m.zeros(0, 3), **kw).shape))
    assert shapes[1] == shapes[0] == (3, 0)


def test_batched_grad_through_einsum_with_one_subscript_letter_left(monkeypatch):
    """einsum.py:252: an equation that uses 51 of the 52 letters leaves exactly one for the
    batch dim of a batched backward, enough: the batched pass runs (each row of the result
    is the row of grad_outputs times the other operand)."""
    import string

    _no_row_loop(monkeypatch)
    letters = string.ascii_letters[:51]
    x = tg.ones(*(1,) * 50, 3, requires_grad=True)
    w = tg.tensor([1.0, 2.0, 3.0])
    y = tg.einsum(f"{letters},{letters[-1]}->{letters}", x, w)
    v = np.arange(6.0, dtype=np.float32).reshape((2,) + (1,) * 50 + (3,))
    (g,) = tg.autograd.grad(y, x, tg.tensor(v), is_grads_batched=True)
    np.testing.assert_array_equal(g.numpy(), v * np.array([1.0, 2.0, 3.0], np.float32))


@pytest.mark.parametrize("scale, raises", [(0.00995, False), (0.01005, True)])
def test_eig_backward_phase_check_tolerance_is_torchs(torch_mod, scale, raises):
    """eig.py:102: torch refuses a gradient of the eigenvectors whose Vᴴ gV has an imaginary
    diagonal beyond 1e-2 (allclose to 0 with atol 1e-2); gV = i·s·V puts exactly s there."""
    a = np.array([[2.0, 1.0], [0.5, 3.0]])
    for m in (torch_mod, tg):
        A = m.tensor(a, requires_grad=True)
        _, V = m.linalg.eig(A)
        gV = (V * (1j * scale)).detach()
        if raises:
            with pytest.raises(RuntimeError, match="specified up to multiplication by e"):
                m.autograd.grad(V, A, gV)
        else:
            m.autograd.grad(V, A, gV)
