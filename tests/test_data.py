"""tg.utils.data: TensorDataset, DataLoader batching/shuffling, collate, random_split."""

import collections

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.utils.data import DataLoader, Dataset, Subset, TensorDataset, random_split

N = 10


def _dataset():
    x = tg.tensor(np.arange(N * 3, dtype=np.float32).reshape(N, 3))
    y = tg.arange(N)
    return TensorDataset(x, y)


def _rows(batches):
    """The sample ids (the y values) in the order a loader produced them."""
    return [int(v) for _, y in batches for v in y.numpy()]


def test_tensor_dataset_indexing_and_length():
    ds = _dataset()
    assert len(ds) == N
    x, y = ds[4]
    np.testing.assert_array_equal(x.numpy(), [12.0, 13.0, 14.0])
    assert y.item() == 4 and x.dtype == np.float32 and y.dtype == np.int64
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(tg.zeros(3, 2), tg.zeros(4))


def test_batches_in_order_with_a_partial_last_batch():
    loader = DataLoader(_dataset(), batch_size=4)
    batches = list(loader)
    assert len(loader) == len(batches) == 3
    assert [tuple(x.shape) for x, _ in batches] == [(4, 3), (4, 3), (2, 3)]
    assert isinstance(batches[0], list)  # as torch: a batch of tuples collates into a list
    assert _rows(batches) == list(range(N))
    np.testing.assert_array_equal(batches[2][0].numpy(), np.arange(24, 30).reshape(2, 3))


def test_drop_last():
    loader = DataLoader(_dataset(), batch_size=4, drop_last=True)
    batches = list(loader)
    assert len(loader) == len(batches) == 2
    assert _rows(batches) == list(range(8))


def test_shuffle_is_a_permutation_and_changes_between_epochs():
    loader = DataLoader(_dataset(), batch_size=3, shuffle=True)
    first, second = _rows(loader), _rows(loader)
    assert sorted(first) == sorted(second) == list(range(N))
    assert first != second and first != list(range(N))


def test_shuffle_is_reproducible_with_a_generator_or_the_global_seed():
    def order(generator):
        return _rows(DataLoader(_dataset(), batch_size=4, shuffle=True, generator=generator))

    assert order(tg.Generator(3)) == order(tg.Generator(3))
    assert order(tg.Generator(3)) != order(tg.Generator(4))
    tg.manual_seed(11)
    a = order(None)
    tg.manual_seed(11)
    assert order(None) == a


def test_batches_are_copies():
    ds = _dataset()
    x, _ = next(iter(DataLoader(ds, batch_size=2)))
    x._data[...] = -1
    assert ds.tensors[0].numpy()[0, 0] == 0.0


def test_custom_dataset_with_default_collate_matches_torch(torch_mod):
    class Samples:
        def __init__(self, m):
            self.m = m

        def __len__(self):
            return 5

        def __getitem__(self, i):
            feats = self.m.tensor([float(i), 2.0 * i])
            return {"x": feats, "label": i, "w": 0.5 * i, "flag": i % 2 == 0, "name": f"s{i}"}

    ours = list(DataLoader(Samples(tg), batch_size=2))
    theirs = list(torch_mod.utils.data.DataLoader(Samples(torch_mod), batch_size=2))
    assert len(ours) == len(theirs) == 3
    for a, b in zip(ours, theirs, strict=True):
        assert a.keys() == b.keys()
        assert a["name"] == b["name"]
        for key in ("x", "label", "w", "flag"):
            np.testing.assert_array_equal(a[key].numpy(), b[key].numpy())
            assert str(a[key].dtype) == str(b[key].dtype).replace("torch.", "")


def test_collate_of_tuples_numpy_and_namedtuples():
    Pair = collections.namedtuple("Pair", "a b")

    class Items(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return Pair(np.full(2, i, dtype=np.float32), (i, [i, i + 1]))

    batch = next(iter(DataLoader(Items(), batch_size=4)))
    assert isinstance(batch, Pair)
    np.testing.assert_array_equal(batch.a.numpy()[:, 0], [0, 1, 2, 3])
    assert isinstance(batch.b, list)
    np.testing.assert_array_equal(batch.b[1][1].numpy(), [1, 2, 3, 4])


def test_collate_fn_sampler_and_unbatched():
    ds = _dataset()
    sizes = list(DataLoader(ds, batch_size=3, collate_fn=len))
    assert sizes == [3, 3, 3, 1]
    loader = DataLoader(ds, batch_size=2, sampler=[9, 0, 5])
    assert len(loader) == 2 and _rows(loader) == [9, 0, 5]
    single = list(DataLoader(ds, batch_size=None))
    assert len(single) == N and single[3][1].item() == 3 and single[3][0].shape == (3,)


def test_invalid_arguments():
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(_dataset(), batch_size=0)
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(_dataset(), sampler=[0], shuffle=True)

    class Bad(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return object()

    with pytest.raises(TypeError, match="default_collate"):
        next(iter(DataLoader(Bad(), batch_size=2)))


def test_random_split_lengths_and_fractions():
    ds = _dataset()
    parts = random_split(ds, [3, 7], generator=tg.Generator(0))
    assert [len(p) for p in parts] == [3, 7]
    ids = sorted(int(p[i][1].item()) for p in parts for i in range(len(p)))
    assert ids == list(range(N))
    parts = random_split(ds, [0.33, 0.33, 0.34], generator=tg.Generator(0))
    assert [len(p) for p in parts] == [4, 3, 3]  # torch gives the remainder to the first parts
    with pytest.raises(ValueError, match="does not equal"):
        random_split(ds, [3, 3])
    again = random_split(ds, [3, 7], generator=tg.Generator(0))
    assert again[0].indices == random_split(ds, [3, 7], generator=tg.Generator(0))[0].indices


def test_subset_batches_equal_per_sample_batches():
    ds = _dataset()
    sub = Subset(Subset(ds, [9, 8, 7, 6, 5, 4]), [5, 0, 2])
    fast = list(DataLoader(sub, batch_size=2))
    slow = list(DataLoader(sub, batch_size=2, collate_fn=tg.utils.data.default_collate))
    assert _rows(fast) == _rows(slow) == [4, 9, 7]
    for (xf, _), (xs, _) in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(xf.numpy(), xs.numpy())
