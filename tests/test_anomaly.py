"""Anomaly mode: NaN/inf in backward named with the creating line; the masked-branch trap."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import graph


def test_log_zero_names_node_and_line():
    x = tg.tensor([0.0, 1.0, 2.0], requires_grad=True)
    with tg.autograd.detect_anomaly():
        y = x.log()  # CREATING-LINE-LOG
        loss = (y * 2.0).sum()
        with pytest.raises(RuntimeError) as err:
            loss.backward()
    msg = str(err.value)
    assert "LogBackward" in msg and "inf" in msg
    assert "test_anomaly.py" in msg and "CREATING-LINE-LOG" in msg
    assert "test_log_zero_names_node_and_line" in msg
    assert "masked" not in msg  # a genuine infinite derivative, not the where trap


def test_without_anomaly_mode_no_error():
    x = tg.tensor([0.0, 1.0], requires_grad=True)
    x.log().sum().backward()
    assert np.isinf(x.grad.numpy()[0])


def test_where_trap_is_explained(torch_mod):
    data = [-1.0, 0.5, 4.0]
    x = tg.tensor(data, requires_grad=True)
    with tg.autograd.detect_anomaly():
        y = tg.where(x > 0, x.sqrt(), 0.0)  # WHERE-LINE
        with pytest.raises(RuntimeError) as err:
            y.sum().backward()
    msg = str(err.value)
    assert "SqrtBackward" in msg and "nan" in msg
    assert "masked-branch trap" in msg and "'where'" in msg and "WhereBackward" in msg
    assert "WHERE-LINE" in msg
    # PyTorch gives NaN too (0 * inf): the behaviour we explain is real.
    tx = torch_mod.tensor(data, requires_grad=True)
    torch_mod.where(tx > 0, tx.sqrt(), 0.0).sum().backward()
    assert np.isnan(tx.grad.numpy()[0])
    x2 = tg.tensor(data, requires_grad=True)
    tg.where(x2 > 0, x2.sqrt(), 0.0).sum().backward()
    np.testing.assert_array_equal(np.isnan(x2.grad.numpy()), np.isnan(tx.grad.numpy()))


def test_double_where_fix_passes():
    x = tg.tensor([-1.0, 0.5, 4.0], requires_grad=True)
    with tg.autograd.detect_anomaly():
        safe = tg.where(x > 0, x, 1.0)
        tg.where(x > 0, safe.sqrt(), 0.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.5 / np.sqrt(0.5), 0.25])


def test_masking_flag_is_generic():
    """Any consumer whose metadata says it masks is named, whatever its op."""
    x = tg.tensor([-1.0, 4.0], requires_grad=True)
    with tg.autograd.detect_anomaly():
        s = x.sqrt()
        y = s * tg.tensor([0.0, 1.0])  # a mask written as a product
        y.grad_fn.metadata["masking"] = "masked_fill"
        with pytest.raises(RuntimeError, match="'masked_fill'"):
            y.sum().backward()


def test_mode_restored_and_set_detect_anomaly():
    assert not tg.autograd.is_anomaly_enabled()
    with tg.autograd.detect_anomaly():
        assert tg.autograd.is_anomaly_enabled() and graph.ANOMALY["enabled"]
        with tg.autograd.set_detect_anomaly(False):
            assert not tg.autograd.is_anomaly_enabled()
        assert tg.autograd.is_anomaly_enabled()
    assert not tg.autograd.is_anomaly_enabled() and not graph.ANOMALY["enabled"]

    @tg.autograd.detect_anomaly()
    def run():
        return tg.autograd.is_anomaly_enabled()

    assert run() and not tg.autograd.is_anomaly_enabled()


def test_nodes_record_cheap_locations():
    with tg.autograd.detect_anomaly():
        y = tg.ones(2, requires_grad=True).exp()
    where = y.grad_fn.metadata["where"]
    assert all(isinstance(f, tuple) and len(f) == 3 for f in where)
    assert where[0][0].endswith("test_anomaly.py")
    assert where[0][2] == "test_nodes_record_cheap_locations"
    assert tg.ones(2, requires_grad=True).exp().grad_fn.metadata is None


def test_nan_from_custom_function_names_it():
    class Bad(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    with tg.autograd.detect_anomaly():
        y = Bad.apply(tg.ones(2, requires_grad=True))
        with pytest.raises(RuntimeError, match="BadBackward.*nan"):
            y.sum().backward()
