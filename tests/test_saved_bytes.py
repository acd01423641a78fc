"""tg.autograd.graph.saved_bytes: what a graph keeps alive for backward."""

import numpy as np

import tapegrad as tg
from tapegrad.autograd.graph import make_result, saved_bytes


def f32(*shape):
    return tg.tensor(np.random.standard_normal(shape).astype(np.float32))


def param(*shape):
    return f32(*shape).requires_grad_()


def test_tanh_layer_counts_input_and_output_not_parameters():
    w, b = param(8, 8), param(8)
    x = f32(4, 8)  # 128 bytes
    h = (x @ w.T + b).tanh()
    # matmul keeps x; add keeps only shapes; tanh keeps its output. w, w.T and b are parameters.
    assert saved_bytes(h) == 2 * 4 * 8 * 4


def test_buffer_shared_by_nodes_and_views_counts_once():
    w = param(4, 4)
    h = (f32(2, 4) @ w).tanh()
    g = h.reshape(8).reshape(2, 4)
    y = (g * g) * h.sqrt()  # g, h and the views share h's buffer
    per = 2 * 4 * 4
    # x, h (once), g*g's result (kept by the second mul), sqrt's output
    assert saved_bytes(y) == 4 * per


def test_leaf_without_grad_counts_and_parameter_used_as_data_does_not():
    w = param(16)
    mask = f32(16)
    y = w * mask  # mask: a leaf that does not require grad, kept alive by the graph
    assert saved_bytes(y) == 16 * 4
    z = mask * w.exp()  # w itself is never saved; exp's output is
    assert saved_bytes(z) == 2 * 16 * 4


def test_union_of_roots_and_released_nodes():
    w = param(3, 3)
    x = f32(5, 3)
    h = (x @ w).tanh()
    a, b = h.exp(), h.sigmoid()
    each = 5 * 3 * 4
    assert saved_bytes(a) == 3 * each and saved_bytes(b) == 3 * each
    assert saved_bytes([a, b]) == 4 * each  # x and h shared
    a.sum().backward(retain_graph=False)
    # that backward released the shared trunk too (as in PyTorch): b keeps only its output
    assert saved_bytes([a, b]) == each
    c = (x @ w).tanh()
    c.sum().backward()
    assert saved_bytes(c) == 0


def test_arrays_inside_captured_containers_count():
    x = param(10)
    kept = (f32(10), [f32(10)], {"k": f32(10)})

    def backward(g):
        assert kept is not None
        return (g,)

    y = make_result(x._data * 2, (x,), backward, "TupleBackward")
    assert saved_bytes(y) == 3 * 10 * 4


def test_float64_and_no_graph():
    x = tg.tensor(np.ones((6, 6)), requires_grad=True)  # float64
    assert saved_bytes(x) == 0  # a leaf: no graph behind it
    assert saved_bytes((x * 1.0).tanh()) == 36 * 8


def test_add_and_sub_keep_no_operands():
    a = param(32).exp()
    b = param(32).sigmoid()
    before = saved_bytes([a, b])
    assert saved_bytes([a + b, a - b]) == before
