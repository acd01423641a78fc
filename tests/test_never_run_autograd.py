"""autograd/ statements that no test ran (tools/mutation_gaps.py on the line map of main
13cab2e), each now run and checked against torch or the documented rule."""

import pytest

import tapegrad as tg


def test_check_graph_skips_a_node_whose_replay_does_not_reproduce():
    # dropout's replay draws another mask: check_graph skips it (its recorded output is
    # not reproduced) instead of blaming a correct graph; cat's list argument is replayed
    # in float64 like a single tensor
    with tg.autograd.checkable():
        x = tg.randn(3, 4, dtype=tg.float64, requires_grad=True)
        y = tg.nn.functional.dropout(x, 0.5)
        z = (tg.cat([y, x * 2]) ** 2).sum()
    assert tg.autograd.check_graph(z) is None


def test_make_dual_of_an_integer_primal_raises_like_torch(torch_mod):
    outs = []
    for lib in (torch_mod, tg):
        fw = lib.autograd.forward_ad
        with fw.dual_level(), pytest.raises(ValueError) as err:
            fw.make_dual(lib.tensor([1, 2]), lib.tensor([1, 1]))
        outs.append(str(err.value))
    assert "make_dual" in outs[1] and "int64" in outs[1]
