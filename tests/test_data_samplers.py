"""tg.utils.data as a package (issue 12): samplers (lazy), DataLoader options, worker
processes, IterableDataset, ConcatDataset, and DistributedSampler, compared with torch."""

import time

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.utils.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_convert,
    get_worker_info,
)
from tapegrad.utils.data.distributed import DistributedSampler


def test_submodules_hold_the_classes():
    import tapegrad.utils.data.dataloader as dl
    import tapegrad.utils.data.dataset as dsm
    import tapegrad.utils.data.sampler as sm

    assert dl.DataLoader is DataLoader and dsm.Subset is Subset
    assert sm.RandomSampler is RandomSampler and dl.default_collate is tg.utils.data.default_collate


def test_sequential_and_batch_samplers_match_torch(torch_mod):
    tdata = torch_mod.utils.data
    for n, size, drop in [(7, 3, False), (7, 3, True), (6, 2, False), (1, 4, False)]:
        ours = BatchSampler(SequentialSampler(range(n)), size, drop)
        theirs = tdata.BatchSampler(tdata.SequentialSampler(range(n)), size, drop)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_sampler_errors_match_torch(torch_mod):
    tdata = torch_mod.utils.data
    cases = [
        ("RandomSampler", (range(3),), {"replacement": 1}, TypeError, "replacement should be"),
        ("RandomSampler", (range(3),), {"num_samples": 0}, ValueError, "num_samples should be"),
        ("BatchSampler", (range(3), 0, False), {}, ValueError, "batch_size should be"),
        ("BatchSampler", (range(3), 2, 1), {}, ValueError, "drop_last should be"),
        ("WeightedRandomSampler", ([[1.0]], 2), {}, ValueError, "weights should be a 1d"),
        ("WeightedRandomSampler", ([1.0, 2.0], 0), {}, ValueError, "num_samples should be"),
    ]
    for name, args, kwargs, exc, pattern in cases:
        with pytest.raises(exc, match=pattern):
            getattr(tdata, name)(*args, **kwargs)
        with pytest.raises(exc, match=pattern):
            getattr(tg.utils.data, name)(*args, **kwargs)


def test_random_samplers():
    s = RandomSampler(range(10))
    a, b = list(s), list(s)
    assert sorted(a) == sorted(b) == list(range(10)) and a != b and len(s) == 10
    chained = list(RandomSampler(range(4), num_samples=10))
    assert len(chained) == 10 and sorted(chained[:4]) == sorted(chained[4:8]) == [0, 1, 2, 3]
    with_repl = list(RandomSampler(range(3), replacement=True, num_samples=100))
    assert len(with_repl) == 100 and set(with_repl) == {0, 1, 2}
    g = tg.Generator().manual_seed(5)
    assert list(RandomSampler(range(9), generator=g)) != list(RandomSampler(range(9), generator=g))
    same = [list(RandomSampler(range(9), generator=tg.Generator().manual_seed(5))) for _ in "ab"]
    assert same[0] == same[1]
    assert sorted(SubsetRandomSampler([4, 8, 15])) == [4, 8, 15]
    w = list(WeightedRandomSampler(tg.tensor([0.0, 2.0, 0.0, 1.0]), 3000))
    assert set(w) == {1, 3} and abs(w.count(1) / 3000 - 2 / 3) < 0.04
    no_repl = list(WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False))
    assert sorted(no_repl) == [0, 1, 2]


def test_samplers_are_consumed_lazily():
    """A huge or endless sampler yields its first batch at once (it used to hang)."""
    ds = TensorDataset(tg.arange(10))

    class Endless:
        def __iter__(self):
            i = 0
            while True:
                yield i % 10
                i += 1

    start = time.perf_counter()
    (batch,) = next(iter(DataLoader(ds, batch_size=4, sampler=RandomSampler(ds, True, 10**10))))
    assert batch.shape == (4,)
    assert len(RandomSampler(ds, True, 10**10)) == 10**10
    (batch,) = next(iter(DataLoader(ds, batch_size=3, sampler=Endless())))
    assert batch.tolist() == [0, 1, 2]
    assert next(iter(RandomSampler(ds, num_samples=10**10))) in range(10)
    assert time.perf_counter() - start < 2.0


def test_dataloader_option_errors_match_torch(torch_mod):
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(3))

    cases = [
        ((range(3),), {"num_workers": -1}, "num_workers option should be non-negative"),
        ((range(3),), {"batch_sampler": [[0]], "batch_size": 2}, "mutually exclusive"),
        ((range(3),), {"sampler": [0], "shuffle": True}, "mutually exclusive with shuffle"),
        ((range(3),), {"batch_size": None, "drop_last": True}, "disables auto-batching"),
        ((range(3),), {"prefetch_factor": 2}, "prefetch_factor"),
        ((range(3),), {"persistent_workers": True}, "persistent_workers"),
        ((range(3),), {"timeout": -1}, "timeout"),
    ]
    for args, kwargs, pattern in cases:
        with pytest.raises(ValueError, match=pattern):
            torch_mod.utils.data.DataLoader(*args, **kwargs)
        with pytest.raises(ValueError, match=pattern):
            DataLoader(*args, **kwargs)
    for kwargs in [{"shuffle": True}, {"sampler": [0]}, {"batch_sampler": [[0]]}]:
        with pytest.raises(ValueError, match="IterableDataset: expected unspecified"):
            DataLoader(Stream(), **kwargs)


def test_batch_sampler_collate_fn_and_lengths(torch_mod):
    batches = [[0, 3], [5], [1, 2, 4]]
    ours = [b.tolist() for b in DataLoader(list(range(10, 16)), batch_sampler=batches)]
    tloader = torch_mod.utils.data.DataLoader(list(range(10, 16)), batch_sampler=batches)
    theirs = [b.tolist() for b in tloader]
    assert ours == theirs == [[10, 13], [15], [11, 12, 14]]
    assert len(DataLoader(range(10), batch_size=3, drop_last=True)) == 3
    assert list(DataLoader(range(5), batch_size=2, collate_fn=sum)) == [1, 5, 4]
    single = list(DataLoader([np.ones(2), np.zeros(2)], batch_size=None))
    assert all(isinstance(s, tg.Tensor) for s in single)


def test_iterable_chain_and_concat_datasets(torch_mod):
    class Stream(IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

        def __len__(self):
            return self.n

    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(DataLoader(Stream(7), batch_size=3)) == 3
    assert len(list(DataLoader(Stream(7), batch_size=3, drop_last=True))) == 2
    assert [int(x) for x in DataLoader(Stream(3), batch_size=None)] == [0, 1, 2]
    assert list(ChainDataset([Stream(2), Stream(3)])) == [0, 1, 0, 1, 2]
    ours = ConcatDataset([range(3), range(10, 14)])
    theirs = torch_mod.utils.data.ConcatDataset([range(3), range(10, 14)])
    assert [ours[i] for i in range(-7, 7)] == [theirs[i] for i in range(-7, 7)]
    assert ours.cumulative_sizes == theirs.cumulative_sizes and len(ours) == 7
    with pytest.raises(IndexError):
        ours[7]
    both = TensorDataset(tg.arange(3)) + TensorDataset(tg.arange(5, 7))
    assert [int(x) for (x,) in DataLoader(both, batch_size=None)] == [0, 1, 2, 5, 6]
    with pytest.raises(AssertionError, match="IterableDataset"):
        ConcatDataset([Stream(2)])
    assert default_convert({"a": np.ones(1), "b": [np.zeros(1), "s"]})["b"][1] == "s"


class _Rows(Dataset):
    """Sample i: (i, a random number, the worker id) to see where and how it was loaded."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        info = get_worker_info()
        return i, float(tg.rand(1)), -1 if info is None else info.id


def test_workers_load_in_processes_in_sampler_order():
    ds = TensorDataset(tg.arange(24.0).reshape(12, 2), tg.arange(12))
    inline = list(DataLoader(ds, batch_size=5))
    workers = list(DataLoader(ds, batch_size=5, num_workers=2, timeout=30))
    assert len(inline) == len(workers) == 3
    for (xa, ya), (xb, yb) in zip(inline, workers, strict=True):
        np.testing.assert_array_equal(xa.numpy(), xb.numpy())
        assert ya.tolist() == yb.tolist()
    idx, rand, wid = next(iter(DataLoader(_Rows(), batch_size=4, num_workers=2)))
    assert idx.tolist() == [0, 1, 2, 3] and set(wid.tolist()) == {0}
    ids = [w for _, _, w in DataLoader(_Rows(), batch_size=2, num_workers=3) for w in w.tolist()]
    assert set(ids) == {0, 1, 2}
    assert set(w for _, _, ws in DataLoader(_Rows(), batch_size=2) for w in ws.tolist()) == {-1}


def test_worker_seeds_follow_the_loader_generator():
    def draws(seed):
        loader = DataLoader(_Rows(), batch_size=3, num_workers=2,
                            generator=tg.Generator().manual_seed(seed))  # fmt: skip
        return [r for _, rs, _ in loader for r in rs.tolist()]

    a = draws(1)
    assert draws(1) == a and draws(2) != a
    assert len(set(a)) == len(a)  # the workers draw different numbers


def test_worker_init_fn_and_errors_in_workers():
    class Checked(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i == 2:
                raise KeyError("no sample 2")
            return i

    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process"):
        list(DataLoader(Checked(), batch_size=1, num_workers=2))

    def bad_init(worker_id):
        raise ValueError(f"init failed in {worker_id}")

    with pytest.raises(ValueError, match="init failed"):
        list(DataLoader(range(4), num_workers=1, worker_init_fn=bad_init))


def test_iterable_dataset_with_workers_shards_by_worker_info(torch_mod):
    def make(m):
        class Shards(m.utils.data.IterableDataset):
            def __iter__(self):
                info = m.utils.data.get_worker_info()
                if info is None:
                    return iter(range(9))
                return iter(range(info.id, 9, info.num_workers))

        return Shards()

    ours = [b.tolist() for b in DataLoader(make(tg), batch_size=2, num_workers=2)]
    theirs = [
        b.tolist()
        for b in torch_mod.utils.data.DataLoader(make(torch_mod), batch_size=2, num_workers=2)
    ]
    assert ours == theirs


def test_distributed_sampler_matches_torch_without_shuffle(torch_mod):
    TorchSampler = torch_mod.utils.data.distributed.DistributedSampler
    cases = [(7, 3, False), (7, 3, True), (2, 5, False), (8, 4, False), (9, 2, True)]
    for n, replicas, drop in cases:
        for rank in range(replicas):
            ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop)
            theirs = TorchSampler(range(n), replicas, rank, shuffle=False, drop_last=drop)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)
            assert ours.total_size == theirs.total_size


def test_distributed_sampler_shuffles_one_permutation_per_epoch():
    def shards(epoch, seed=0, drop_last=False):
        out = []
        for rank in range(3):
            s = DistributedSampler(range(10), 3, rank, seed=seed, drop_last=drop_last)
            s.set_epoch(epoch)
            out.append(list(s))
        return out

    e0 = shards(0)
    assert [len(s) for s in e0] == [4, 4, 4]
    flat = [i for group in zip(*e0, strict=True) for i in group]
    assert sorted(flat[:10]) == list(range(10)) and flat[10:] == flat[:2]  # padded by repeating
    assert shards(0) == e0 and shards(1) != e0 and shards(0, seed=1) != e0
    kept = shards(0, drop_last=True)
    assert [len(s) for s in kept] == [3, 3, 3] and len(set(sum(kept, []))) == 9


def test_distributed_sampler_errors(torch_mod):
    with pytest.raises(RuntimeError, match="no process group is initialised"):
        DistributedSampler(range(5))
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1"):
        DistributedSampler(range(5), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="Invalid rank 2"):
        torch_mod.utils.data.distributed.DistributedSampler(range(5), num_replicas=2, rank=2)
