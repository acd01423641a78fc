"""Tests for the gaps the fresh mutation sample of seed 1805 found (docs/mutation-run-seed1805.md).

Each was seen to fail with its mutant applied and to pass without it.
"""

import inspect
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import anomaly


class _WrongSquare(tg.autograd.Function):
    """x² with a backward that forgets the factor 2."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x


def _wrong_graph():
    x = tg.tensor([[0.5, -0.25, 1.5]], dtype=tg.float64, requires_grad=True)
    y = _WrongSquare.apply(x.tanh())  # WRONG-NODE
    return y.sum()


def test_check_graph_report_says_where_the_wrong_node_was_created():
    # autograd/anomaly.py:179 (`not where` -> `where` survived): the report's "created
    # at" location was never checked, only the traceback printed after it
    with tg.autograd.checkable():
        out = _wrong_graph()
    report = tg.autograd.check_graph(out, raise_exception=False)
    assert report is not None and report.name == "_WrongSquareBackward"
    lines, first = inspect.getsourcelines(_wrong_graph)
    line = first + next(i for i, t in enumerate(lines) if "WRONG-NODE" in t)
    assert report.where == f"{__file__}:{line} in _wrong_graph"
    assert f"created at {report.where}," in str(report)
    # a graph built without a creation record says so, rather than failing
    plain = _wrong_graph()
    assert anomaly.short_where(plain.grad_fn) == "<unknown location>"


@pytest.mark.parametrize("shape", [(), (3,)])
def test_rot90_of_fewer_than_two_dims_names_the_rank_like_torch(torch_mod, shape):
    # ops/shape_more.py:268 (the rank check dropped survived): a 0-d input then failed
    # later with "rotation dims to be different" (a RuntimeError too), a 1-D one with
    # an IndexError; torch's error names the rank
    errs = []
    for lib in (torch_mod, tg):
        with pytest.raises(Exception) as err:
            lib.rot90(lib.zeros(shape), 1, (0, 1))
        errs.append((type(err.value), str(err.value)))
    assert errs[1][0] is errs[0][0] is RuntimeError
    assert errs[1][1].startswith("rot90: ") and errs[1][1].endswith(errs[0][1])
    assert errs[0][1].endswith(f"total dims = {len(shape)}")


@pytest.mark.parametrize("op", ["sigmoid", "tanh"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_first_backward_of_its_dtype_matches_torch(torch_mod, monkeypatch, op, dtype):
    # ops/fused_backward.py:52 (`one = _one(y.dtype)` dropped survived, on a line the
    # map saw no test run): the constant 1 of each dtype is cached by whichever of
    # tanh/sigmoid runs a backward first in the process, so the other's miss path ran
    # only when the test order allowed it. With the cache empty, each op's first backward
    from tapegrad.ops import fused_backward

    monkeypatch.setattr(fused_backward, "_ONES", {})
    x = np.linspace(-2.0, 2.0, 7)
    grads = []
    for lib in (torch_mod, tg):
        t = lib.tensor(x, dtype=getattr(lib, dtype), requires_grad=True)
        getattr(t, op)().backward(lib.tensor(np.arange(7.0), dtype=getattr(lib, dtype)))
        grads.append(t.grad.detach().numpy())
    assert grads[1].dtype == grads[0].dtype
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


@pytest.mark.parametrize("input_grad", [True, False])
def test_backward_hooks_get_grad_output_as_a_tuple_like_torch(torch_mod, input_grad):
    # nn/_hooks.py:159 (`grad_output = tuple(grad_output)` dropped survived): the hooks
    # then got a list; torch passes tuples (a hook may add to it or unpack it as one)
    seen = []
    for lib in (torch_mod, tg):
        m = lib.nn.Linear(2, 2)
        m.register_full_backward_pre_hook(lambda mod, go: seen.append(("pre", type(go))))
        m.register_full_backward_hook(lambda mod, gi, go: seen.append(("full", type(gi), type(go))))
        with warnings.catch_warnings():  # torch: the hook fires with no input needing grad
            warnings.simplefilter("ignore", UserWarning)
            m(lib.ones(1, 2, requires_grad=input_grad)).sum().backward()
    half = len(seen) // 2
    assert seen[half:] == seen[:half] == [("pre", tuple), ("full", tuple, tuple)]


_INT_MATRIX_OPS = {
    "svd": lambda lib, a: lib.linalg.svd(a),
    "svdvals": lambda lib, a: lib.linalg.svdvals(a),
    "Tensor.svd": lambda lib, a: a.svd(),
    "qr": lambda lib, a: lib.linalg.qr(a),
    "pinv": lambda lib, a: lib.linalg.pinv(a),
    "matrix_rank": lambda lib, a: lib.linalg.matrix_rank(a),
}


@pytest.mark.parametrize("dtype", ["int64", "bool"])
@pytest.mark.parametrize("op", sorted(_INT_MATRIX_OPS))
def test_decompositions_refuse_integer_matrices_like_torch(torch_mod, op, dtype):
    # ops/decomp.py:66 (the cast of a non-float input, `!=` -> `==`, survived): it showed
    # a bug, svd/qr/pinv/matrix_rank of an integer or bool matrix returned float32
    # results where torch raises; fixed (the mutant is now equivalent: the cast only
    # copies a complex matrix to its own dtype)
    errs = []
    for lib in (torch_mod, tg):
        a = lib.tensor([[2, 1], [1, 3]], dtype=getattr(lib, dtype))
        with pytest.raises(RuntimeError) as err:
            _INT_MATRIX_OPS[op](lib, a)
        errs.append(str(err.value))
    torch_name = {"int64": "Long", "bool": "Bool"}[dtype]
    assert errs[1].endswith(f"Got {torch_name}") and errs[1].startswith("linalg.")
    if op in ("svd", "svdvals", "Tensor.svd", "qr"):  # torch's text there
        assert errs[1] == errs[0]
