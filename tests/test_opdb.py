"""PyTorch's operator database as the oracle (tests/opdb_harness.py does the work).

Every float64 CPU OpInfo of ``torch.testing._internal.common_methods_invocations.op_db``
that tapegrad exports runs its first sample inputs and reference inputs through both
libraries; values, shapes, dtypes and input gradients must match. OpInfos tapegrad does not
export yet are counted by ``tools/opdb_coverage.py`` (the pass rate), not failed here.

Two reviewed lists, each entry with its reason; nothing else is left out:

* ``SKIP``: OpInfos deliberately not compared.
* ``KNOWN_FAILURES``: exported ops that do not match yet, each naming what is missing. An
  entry that starts passing fails the test, so the list only shrinks.
"""

import pytest

SKIP: dict[str, str] = {
    # Deliberately different from PyTorch, on purpose and documented.
    "as_strided_scatter": (
        "PyTorch 2.13's gradient for input is wrong (it fails torch's own gradcheck: g where "
        "src landed, zero elsewhere); tapegrad's is the true one (zero where src landed). "
        "Forward and src gradient are compared in tests/test_view_ops.py"
    ),
    "chalf": (
        "complex32 (chalf): NumPy has no half-precision complex dtype, so tapegrad has none; "
        "Tensor.chalf() raises a TypeError saying so (tests/test_complex.py)"
    ),
}

KNOWN_FAILURES: dict[str, str] = {
    # nn.functional
    # found when the issue-10b/11 branches merged
    "sparse.mm.reduce": (
        "sparse CSR tensors: tapegrad has no SparseCsr layout to convert torch's inputs to"
    ),
    "to_sparse": (
        "to_sparse: the torch result is a sparse COO tensor, which the harness cannot "
        "compare (no NumPy view)"
    ),
}


# op_db split in parts that pytest-xdist can spread over the workers. One part: since
# Note [op_db's stack walk] all of op_db takes ~10 s of CPU, and every worker running a
# part pays ~2 s to build op_db first.
SHARDS = 1


@pytest.mark.parametrize("shard", range(SHARDS))
def test_opdb_matches_torch(shard):
    """Every exported op of this shard of op_db matches, the known failures still fail, and
    the elementwise tables' ops are really compared (op_db loads once per worker)."""
    pytest.importorskip("torch", reason="PyTorch is not installed: op_db comparison skipped")
    import torch  # noqa: PLC0415

    from .opdb_harness import full_name, load_op_db, run_opinfo  # noqa: PLC0415 - torch inside

    ops = load_op_db()
    names = {full_name(op) for op in ops}
    unknown = sorted(n for n in KNOWN_FAILURES if n not in names)
    assert not unknown, f"KNOWN_FAILURES names no OpInfo: {unknown}"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: worker threads only spin against the other worker
    try:
        results = {}
        for op in ops[shard::SHARDS]:
            name = full_name(op)
            if name not in SKIP and op.name not in SKIP:
                results[name] = run_opinfo(op)
    finally:
        torch.set_num_threads(threads)
    failed = {
        name: detail
        for name, (status, detail) in results.items()
        if status == "fail" and name not in KNOWN_FAILURES
    }
    assert not failed, "ops that differ from PyTorch's op_db:\n" + "\n".join(
        f"  {name}: {detail}" for name, detail in sorted(failed.items())
    )
    fixed = sorted(n for n in KNOWN_FAILURES if results.get(n, ("",))[0] == "pass")
    assert not fixed, f"these pass now: remove them from KNOWN_FAILURES: {fixed}"
    passed = {n for n, (status, _) in results.items() if status == "pass"}
    for name in ("asin", "atan2", "xlogy", "lerp", "special.i1e", "nan_to_num", "logit"):
        if name in results:
            assert name in passed, f"{name}: {results.get(name)}"


def test_lists_are_reviewed():
    for table in (SKIP, KNOWN_FAILURES):
        for name, reason in table.items():
            assert reason and reason != "not implemented yet", f"{name!r} needs a reason"


def test_attention_dropout_is_the_only_difference():
    """op_db's sdpa sample 2 and multi_head_attention_forward sample 0 use dropout_p=0.5, so
    their values are random draws (compared by shape only); without dropout the values match
    torch, and with it the mean over many draws converges to the dropout-free result."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    import numpy as np  # noqa: PLC0415

    import tapegrad as tg  # noqa: PLC0415

    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, n, 4, dtype=torch.float64, generator=gen) for n in (3, 5, 5))
    tq, tk, tv = (tg.tensor(x.numpy()) for x in (q, k, v))
    sdpa = tg.nn.functional.scaled_dot_product_attention
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).numpy()
    np.testing.assert_allclose(sdpa(tq, tk, tv, is_causal=True)._data, want, atol=1e-12)
    draws = [sdpa(tq, tk, tv, is_causal=True, dropout_p=0.5)._data for _ in range(3000)]
    np.testing.assert_allclose(np.mean(draws, axis=0), want, atol=0.15)


def test_eigh_and_hermitian_pinv_gradients_match_torch_on_a_nonsymmetric_input():
    """Silent wrong gradients found by op_db: eigh's gradient is symmetric (as PyTorch's),
    and pinv(hermitian=True) takes PyTorch's pinv_backward at the full input."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    import numpy as np  # noqa: PLC0415

    import tapegrad as tg  # noqa: PLC0415

    gen = torch.Generator().manual_seed(1)
    a = torch.randn(4, 4, dtype=torch.float64, generator=gen, requires_grad=True)
    w = torch.randn(4, 4, dtype=torch.float64, generator=gen)
    at = tg.tensor(a.detach().numpy(), requires_grad=True)
    wt = tg.tensor(w.numpy())
    L, V = torch.linalg.eigh(a)
    (want,) = torch.autograd.grad((L * w[0]).sum() + (V * V * w).sum(), a)
    L2, V2 = tg.linalg.eigh(at)
    (got,) = tg.autograd.grad((L2 * wt[0]).sum() + (V2 * V2 * wt).sum(), [at])
    np.testing.assert_allclose(got._data, want.numpy(), atol=1e-10)
    (want,) = torch.autograd.grad((torch.linalg.pinv(a, hermitian=True) * w).sum(), a)
    (got,) = tg.autograd.grad((tg.linalg.pinv(at, hermitian=True) * wt).sum(), [at])
    np.testing.assert_allclose(got._data, want.numpy(), atol=1e-9)


def test_conv_transpose2d_output_padding_past_the_stride_input_gradient():
    """output_padding >= stride (allowed when below the dilation): the input gradient has
    the input's shape and torch's values (it had an extra column before)."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    import numpy as np  # noqa: PLC0415

    import tapegrad as tg  # noqa: PLC0415

    gen = torch.Generator().manual_seed(2)
    x = torch.randn(2, 2, 4, 4, dtype=torch.float64, generator=gen, requires_grad=True)
    w = torch.randn(2, 2, 4, 5, dtype=torch.float64, generator=gen)
    kw = dict(stride=(3, 2), padding=(1, 2), output_padding=(2, 3), groups=2, dilation=(4, 4))
    out = torch.nn.functional.conv_transpose2d(x, w, **kw)
    g = torch.randn(out.shape, dtype=torch.float64, generator=gen)
    (want,) = torch.autograd.grad((out * g).sum(), x)
    xt = tg.tensor(x.detach().numpy(), requires_grad=True)
    ours = tg.nn.functional.conv_transpose2d(xt, tg.tensor(w.numpy()), **kw)
    (got,) = tg.autograd.grad((ours * tg.tensor(g.numpy())).sum(), [xt])
    np.testing.assert_allclose(got._data, want.numpy(), atol=1e-10)
