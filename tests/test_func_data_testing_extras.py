"""torch.testing.assert_allclose (deprecated), torch.func.functionalize and
replace_all_batch_norm_modules_, torch.utils.data.StackDataset: against torch."""

import numpy as np
import pytest

import tapegrad as tg

# -- testing.assert_allclose ---------------------------------------------------------------

ALLCLOSE = [
    # (actual, expected, kwargs): float32's default rtol is 1e-4 (assert_close's is 1.3e-6)
    ([1.0, 2.0], [1.0, 2.0 + 1e-4], {}),
    ([1.0, 2.0], [1.0, 2.0 + 1e-3], {}),
    ([1.0, float("nan")], [1.0, float("nan")], {}),
    ([1.0, float("nan")], [1.0, float("nan")], {"equal_nan": False}),
    ([1, 2], [1, 3], {}),
    ([1.0, 2.0], [1.0, 2.5], {"rtol": 0.3, "atol": 0.0}),
    ([1.0, 2.0], [1.0, 2.5], {"msg": "custom message"}),
    (3.0, 3.00001, {}),
]


@pytest.mark.parametrize("actual,expected,kwargs", ALLCLOSE)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_assert_allclose_as_torch(torch_mod, actual, expected, kwargs, dtype):
    outcomes = []
    for m in (torch_mod, tg):
        if dtype == "int64" and not all(v == v and v == int(v) for v in np.ravel(actual)):
            pytest.skip("not integers")
        a = m.tensor(actual, dtype=getattr(m, dtype))
        with pytest.warns(FutureWarning) as record:
            try:
                m.testing.assert_allclose(a, expected, **kwargs)
                outcomes.append(None)
            except AssertionError as err:
                outcomes.append(str(err).splitlines()[0])
            except (RuntimeError, ValueError, TypeError) as err:
                outcomes.append(type(err).__name__)
        assert "assert_allclose()` is deprecated since 1.12" in str(record[0].message)
        assert record[0].filename == __file__
    assert outcomes[1] == outcomes[0]


# -- func.functionalize -------------------------------------------------------------------


def _mutating(x, y):
    z = x.clone()
    z.add_(y)
    x.mul_(2)
    return z, x.view(-1), {"s": z.sum(), "y": y.view(-1)}


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
def test_functionalize_keeps_results_and_input_mutations(torch_mod, remove):
    results = []
    for m in (torch_mod, tg):
        x, y = m.ones(2, 2), m.full((2, 2), 3.0)
        z, view, d = m.func.functionalize(_mutating, remove=remove)(x, y)
        view.add_(10)  # do the outputs still alias the inputs?
        d["y"].add_(100)
        results.append((z.tolist(), x.tolist(), view.tolist(), d["s"].item(), y.tolist()))
    assert results[1] == results[0]


def test_functionalize_under_grad_and_errors(torch_mod):
    f = lambda x: (x.clone().mul_(x)).sum()  # noqa: E731
    x = np.array([1.0, 2.0, 3.0])
    got = tg.func.grad(tg.func.functionalize(f))(tg.tensor(x))
    want = torch_mod.func.grad(torch_mod.func.functionalize(f))(torch_mod.tensor(x))
    np.testing.assert_allclose(got.numpy(), want.numpy())
    with pytest.raises(RuntimeError) as w:
        torch_mod.func.functionalize(f, remove="views")
    with pytest.raises(RuntimeError) as g:
        tg.func.functionalize(f, remove="views")
    assert str(g.value) == str(w.value)
    assert tg.func.functionalize(_mutating).__name__ == "_mutating"


# -- func.replace_all_batch_norm_modules_ --------------------------------------------------


def test_replace_all_batch_norm_modules_as_torch(torch_mod):
    states = []
    for m in (torch_mod, tg):
        inner = m.nn.Sequential(m.nn.BatchNorm1d(4, track_running_stats=False))
        net = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.BatchNorm1d(4), inner)
        assert m.func.replace_all_batch_norm_modules_(net) is net
        states.append(
            (
                sorted(net.state_dict()),
                [
                    (bn.track_running_stats, bn.running_mean, bn.running_var)
                    for bn in (net[1], net[2][0])
                ],
            )
        )
        net.train()
        out = net(m.ones(5, 3))  # batch statistics: works, records nothing
        assert tuple(out.shape) == (5, 4)
    assert states[1] == states[0]


# -- utils.data.StackDataset ---------------------------------------------------------------


class _Batched:
    """A dataset with __getitems__ (and one that returns the wrong count on request)."""

    def __init__(self, values, short=False):
        self.values, self.short = values, short

    def __len__(self):
        return len(self.values)

    def __getitem__(self, i):
        return self.values[i]

    def __getitems__(self, indices):
        out = [self.values[i] * 10 for i in indices]
        return out[:-1] if self.short else out


def test_stack_dataset_as_torch(torch_mod):
    for m in (torch_mod, tg):
        a, b = [1, 2, 3], ["x", "y", "z"]
        s = m.utils.data.StackDataset(a, b)
        assert len(s) == 3 and s[1] == (2, "y")
        d = m.utils.data.StackDataset(num=a, let=b)
        assert d[2] == {"num": 3, "let": "z"}
        assert s.__getitems__([0, 2]) == [(1, "x"), (3, "z")]
        assert m.utils.data.StackDataset(_Batched(a), b).__getitems__([0, 1]) == [
            (10, "x"),
            (20, "y"),
        ]
        assert m.utils.data.StackDataset(k=_Batched(a)).__getitems__([2]) == [{"k": 30}]
        ds = m.utils.data.TensorDataset(m.arange(3))
        batches = list(m.utils.data.DataLoader(m.utils.data.StackDataset(ds, a), batch_size=2))
        assert [[t[0][0].tolist(), t[1].tolist()] for t in batches] == [
            [[0, 1], [1, 2]],
            [[2], [3]],
        ]


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.utils.data.StackDataset([1], k=[1]),
        lambda m: m.utils.data.StackDataset(),
        lambda m: m.utils.data.StackDataset([1, 2], [1]),
        lambda m: m.utils.data.StackDataset(a=[1, 2], b=[1]),
        lambda m: m.utils.data.StackDataset(_Batched([1, 2], short=True)).__getitems__([0, 1]),
        lambda m: m.utils.data.StackDataset(k=_Batched([1, 2], short=True)).__getitems__([0]),
    ],
)
def test_stack_dataset_errors_as_torch(torch_mod, call):
    with pytest.raises(ValueError) as want:
        call(torch_mod)
    with pytest.raises(ValueError) as got:
        call(tg)
    assert str(got.value) == str(want.value)
