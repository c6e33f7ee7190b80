"""DataLoader, samplers and the built-in datasets."""
import gzip
import re

import numpy as np
import pytest

from funcgrad import data


def test_dataloader_batches_in_order_and_drop_last():
    x, y = np.arange(10.0), np.arange(10) * 10
    loader = data.DataLoader(data.ArrayDataset(x, y), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [len(b[0]) for b in batches] == [4, 4, 2]
    assert np.array_equal(np.concatenate([np.asarray(b[0]) for b in batches]), x)
    assert np.array_equal(np.asarray(batches[1][1]), [40, 50, 60, 70])
    loader = data.DataLoader(data.ArrayDataset(x, y), batch_size=4, drop_last=True)
    assert len(loader) == 2 and [len(b[0]) for b in loader] == [4, 4]


def test_shuffle_is_seeded_and_changes_every_epoch():
    ds = data.ArrayDataset(np.arange(50))
    a = data.DataLoader(ds, batch_size=50, shuffle=True, seed=3)
    b = data.DataLoader(ds, batch_size=50, shuffle=True, seed=3)
    (e0,), (e1,) = [np.asarray(b[0]) for b in a], [np.asarray(b[0]) for b in a]  # two whole epochs
    assert np.array_equal(e0, np.asarray(next(iter(b))[0]))
    assert not np.array_equal(e0, e1) and sorted(e0.tolist()) == list(range(50))
    c = data.DataLoader(ds, batch_size=50, shuffle=True, seed=4)
    assert not np.array_equal(e0, np.asarray(next(iter(c))[0]))


@pytest.mark.parametrize("prefetch", [0, 2])
def test_resume_mid_epoch_gives_the_same_batches(prefetch):
    ds = data.ArrayDataset(np.arange(30))
    straight = data.DataLoader(ds, batch_size=4, shuffle=True, seed=1, prefetch=prefetch)
    expected = [np.asarray(b[0]) for b in straight] + [np.asarray(b[0]) for b in straight]
    first = data.DataLoader(ds, batch_size=4, shuffle=True, seed=1, prefetch=prefetch)
    seen = [np.asarray(b[0]) for b in first]
    it = iter(first)
    seen += [np.asarray(next(it)[0]) for _ in range(3)]
    state = first.state_dict()
    assert state == {"epoch": 1, "batches_consumed": 3}
    resumed = data.DataLoader(ds, batch_size=4, shuffle=True, seed=1, prefetch=prefetch)
    resumed.load_state_dict(state)
    seen += [np.asarray(b[0]) for b in resumed]
    assert all(np.array_equal(a, b) for a, b in zip(seen, expected)) and len(seen) == len(expected)


def test_generic_dataset_collate_and_errors_in_workers():
    class Squares:
        def __len__(self):
            return 5

        def __getitem__(self, i):
            if i == 4:
                raise RuntimeError("bad example 4")
            return {"x": np.float32(i), "y": np.array([i, i * i])}

    loader = data.DataLoader(Squares(), batch_size=2)
    it = iter(loader)
    first = next(it)
    assert np.array_equal(np.asarray(first["y"]), [[0, 0], [1, 1]])
    next(it)
    with pytest.raises(RuntimeError, match="bad example 4"):
        next(it)
    ragged = [np.ones(2), np.ones(2), np.ones(3)]
    with pytest.raises(ValueError, match=r"got \(2,\) \(ndarray\) at entry 0 and \(3,\) \(ndarray\) at entry 2"):
        data.default_collate(ragged)


def test_distributed_sampler_shards_are_disjoint_and_cover():
    for n, replicas, drop_last in [(10, 3, False), (10, 3, True), (12, 4, False), (7, 2, False)]:
        shards = [list(data.DistributedSampler(n, replicas, r, shuffle=True, seed=5, drop_last=drop_last))
                  for r in range(replicas)]
        assert len({len(s) for s in shards}) == 1
        flat = [i for s in shards for i in s]
        if drop_last:
            assert len(set(flat)) == len(flat) == n - n % replicas
        else:
            assert set(flat) == set(range(n)) and len(flat) == -(-n // replicas) * replicas
        if n % replicas == 0:
            assert len(set(flat)) == len(flat)
    s = data.DistributedSampler(10, 2, 0, seed=1)
    e0 = list(s)
    s.set_epoch(1)
    assert e0 != list(s)
    with pytest.raises(ValueError, match="rank 2 is not in"):
        data.DistributedSampler(10, 2, 2)


def test_builtin_datasets():
    x, y = data.load("digits", "train")
    xt, yt = data.load("digits", "test")
    assert x.shape == (1438, 64) and xt.shape == (359, 64) and x.dtype == np.float32
    assert 0.0 <= x.min() and x.max() <= 1.0 and set(np.unique(y)) == set(range(10))
    assert data.load("digits", "test", flatten=False)[0].shape == (359, 1, 8, 8)
    sx, sy = data.load("spirals")
    assert sx.shape == (600, 2) and set(np.unique(sy)) == {0, 1, 2}
    lx, ly = data.load("linear")
    assert np.polyfit(lx[:, 0], ly[:, 0], 1) == pytest.approx([2, 1], abs=0.05)
    tokens, targets = data.load("sort", n=5, length=4)
    assert tokens.shape == (5, 8)
    full = np.concatenate([tokens, targets[:, -1:]], axis=1)
    assert np.array_equal(full[:, 5:], np.sort(full[:, :4], axis=1))
    assert (targets[:, :4] == data.IGNORE).all()
    with pytest.raises(ValueError, match="unknown dataset 'cifar'"):
        data.load("cifar")
    with pytest.raises(ValueError, match="split must be one of"):
        data.load("digits", "validation")


def _write_idx(path, array, magic_type=0x08):
    header = bytes([0, 0, magic_type, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    payload = header + array.astype(">u1" if magic_type == 0x08 else ">i4").tobytes()
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(payload)


def test_mnist_from_idx_files(tmp_path):
    images = np.random.default_rng(0).integers(0, 256, (5, 28, 28)).astype(np.uint8)
    labels = np.array([3, 1, 4, 1, 5], np.uint8)
    folder = tmp_path / "mnist"
    folder.mkdir()
    _write_idx(folder / "t10k-images-idx3-ubyte.gz", images)
    _write_idx(folder / "t10k-labels-idx1-ubyte", labels)
    x, y = data.load("mnist", "test", root=folder)
    assert x.shape == (5, 784) and np.allclose(x[0], images[0].reshape(-1) / 255.0)
    assert y.tolist() == [3, 1, 4, 1, 5]
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte.gz"):
        data.load("mnist", "train", root=folder)
    (folder / "t10k-labels-idx1-ubyte").write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x09abc")
    with pytest.raises(ValueError, match="header says shape"):
        data.load("mnist", "test", root=folder)


def test_array_dataset_checks_lengths():
    with pytest.raises(ValueError, match="differ in length"):
        data.ArrayDataset(np.zeros(3), np.zeros(4))


def test_subset_concat_and_random_split_follow_pytorch():
    x, y = np.arange(20.0).reshape(10, 2), np.arange(10)
    ds = data.TensorDataset(x, y)
    train, test = data.random_split(ds, [0.7, 0.3], seed=1)
    assert (len(train), len(test)) == (7, 3)
    assert sorted(train.indices + test.indices) == list(range(10))
    assert data.random_split(ds, [0.7, 0.3], seed=1)[0].indices == train.indices  # reproducible by seed
    assert [len(s) for s in data.random_split(ds, [0.34, 0.33, 0.33])] == [4, 3, 3]  # remainder to the first
    with pytest.raises(ValueError, match="summing"):
        data.random_split(ds, [3, 3])
    sub = data.Subset(ds, [4, 1])
    assert sub[0][1] == 4 and [b[1].tolist() for b in data.DataLoader(sub, 2)] == [[4, 1]]
    both = data.ConcatDataset([ds, sub])
    assert len(both) == 12 and both[11][1] == 1 and both[3][1] == 3
    with pytest.raises(IndexError, match="index 12 is out of range for a ConcatDataset of 12"):
        both[12]
    with pytest.raises(IndexError, match="out of range for a dataset of 10"):
        data.Subset(ds, [10])
    # a negative index counts from the end, as in Python and PyTorch's datasets; past the start it raises
    assert both[-1][1] == 1 and both[-12][1] == 0 and sub[-1][1] == 1 and data.Subset(ds, [-1, 0])[0][1] == 9
    assert data.StackDataset(ds, ds)[-2][0][1] == 8
    with pytest.raises(IndexError, match="index -13 is out of range for a ConcatDataset of 12"):
        both[-13]


def test_sampler_indices_are_checked():
    """A negative index wrapped to the last example, 2.7 became 2, 10**20 overflowed."""
    ds = data.ArrayDataset(np.arange(10))
    for bad, error, says in [([0, 1, -1], IndexError, "sampler index -1 is out of range for a dataset of 10"),
                             ([0, 2.7], TypeError, "sampler index 2.7 is not an integer"),
                             ([0, 10 ** 20], IndexError, "sampler index 100000000000000000000 is out of range"),
                             ([True], TypeError, "not an integer")]:
        with pytest.raises(error, match=says):
            list(data.DataLoader(ds, 2, sampler=bad))


class _Squares:
    def __len__(self):
        return 13

    def __getitem__(self, i):
        if i == 11:
            raise KeyError(f"example {i} is missing")
        return np.float32(i * i) + np.float32(np.random.random() * 0)


def test_worker_processes_give_the_same_batches_and_report_errors():
    ds = data.ArrayDataset(np.arange(40.0).reshape(20, 2), np.arange(20))
    single = [b[1].tolist() for b in data.DataLoader(ds, 3, shuffle=True, seed=5)]
    loader = data.DataLoader(ds, 3, shuffle=True, seed=5, num_workers=3)
    assert [b[1].tolist() for b in loader] == single
    first = data.DataLoader(ds, 3, shuffle=True, seed=5, num_workers=2)
    it = iter(first)
    head = [next(it)[1].tolist() for _ in range(2)]
    resumed = data.DataLoader(ds, 3, shuffle=True, seed=5, num_workers=2)
    resumed.load_state_dict(first.state_dict())
    it.close()
    assert head + [b[1].tolist() for b in resumed] == single[:2] + single[2:]
    with pytest.raises(KeyError, match=r"DataLoader worker 1 \(batch 5\): .*example 11 is missing.*traceback"):
        list(data.DataLoader(_Squares(), 2, num_workers=2))


@pytest.mark.parametrize("bad", [0, -2, 2.5, 2.0, True, "4"])
def test_a_batch_size_that_is_not_a_positive_integer_is_named(bad):
    ds = data.ArrayDataset(np.arange(10.0))
    for make in (lambda: data.DataLoader(ds, batch_size=bad), lambda: data.BatchSampler(range(10), bad, False)):
        with pytest.raises(ValueError, match=rf"batch_size must be an integer >= 1.*got {re.escape(repr(bad))}"):
            list(make())
    assert [b[0].tolist() for b in data.DataLoader(ds, batch_size=np.int64(4))][-1] == [8.0, 9.0]


def test_pytorchs_samplers_batch_sampler_and_loader_options():
    ds = data.ArrayDataset(np.arange(10.0), np.arange(10))
    batches = [b[1].tolist() for b in data.DataLoader(ds, batch_sampler=data.BatchSampler(data.SequentialSampler(ds),
                                                                                         4, False))]
    assert batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(data.DataLoader(ds, batch_sampler=data.BatchSampler(range(10), 4, True))) == 2
    subset = [i for b in data.DataLoader(ds, batch_size=3, sampler=data.SubsetRandomSampler([1, 3, 5, 7], 1))
              for i in b[1].tolist()]
    assert sorted(subset) == [1, 3, 5, 7]
    weights = np.array([0.0] * 5 + [1.0] * 5)
    drawn = list(data.WeightedRandomSampler(weights, 200))
    assert min(drawn) >= 5 and len(set(drawn)) == 5  # zero weight is never drawn
    assert sorted(data.WeightedRandomSampler(weights, 5, replacement=False)) == [5, 6, 7, 8, 9]
    heavy = np.bincount(list(data.WeightedRandomSampler([1.0, 3.0], 4000)), minlength=2) / 4000
    assert abs(heavy[1] - 0.75) < 0.03
    with_replacement = list(data.RandomSampler(ds, replacement=True, num_samples=50))
    assert len(with_replacement) == 50 and set(with_replacement) <= set(range(10))  # 50 of 10: must repeat
    with pytest.raises(ValueError, match="without replacement"):
        data.RandomSampler(ds, num_samples=11)
    assert sorted(data.RandomSampler(ds, 3)) == list(range(10))  # a dataset, as PyTorch's samplers take
    plain = [b[0].tolist() for b in data.DataLoader(ds, batch_size=4)]
    assert [b[0].tolist() for b in data.DataLoader(ds, batch_size=4, pin_memory=True, persistent_workers=True,
                                                    prefetch_factor=4)] == plain
    with pytest.raises(ValueError, match="batch_sampler makes the batches"):
        data.DataLoader(ds, batch_size=2, batch_sampler=[[0]])
    with pytest.raises(TypeError, match="second argument is the seed"):
        data.RandomSampler(ds, True)
    with pytest.raises(ValueError, match="non-negative"):
        data.WeightedRandomSampler([1.0, -1.0], 2)
    with pytest.raises(IndexError):
        list(data.DataLoader(ds, batch_sampler=[[0, 10]]))  # batch indices are checked too


def test_iterable_only_datasets_stream_in_their_order_and_resume():
    class Stream:  # PyTorch's IterableDataset: __iter__, no __getitem__
        def __iter__(self):
            for i in range(7):
                yield np.float32(i), i % 2

    loader = data.DataLoader(Stream(), batch_size=3)
    assert [b[0].tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [b[0].tolist() for b in data.DataLoader(Stream(), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    it = iter(loader)
    next(it)
    resumed = data.DataLoader(Stream(), batch_size=3)
    resumed.load_state_dict(loader.state_dict())
    assert [b[0].tolist() for b in resumed] == [[3, 4, 5], [6]]
    with pytest.raises(ValueError, match="gives its own order"):
        data.DataLoader(Stream(), shuffle=True)
    with pytest.raises(ValueError, match="num_workers=0"):
        data.DataLoader(Stream(), num_workers=2)
    with pytest.raises(TypeError, match="without __len__"):
        len(loader)


def test_streams_stacks_custom_samplers_and_unbatched_loading():
    """PyTorch's IterableDataset (+ chains streams), StackDataset, Dataset + Dataset, a Sampler
    subclass, batch_size=None (examples one at a time, uncollated) and default_collate's
    structure rules (named tuples kept, lists transposed, strings gathered)."""
    import collections

    class Count(data.IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(np.arange(self.n, dtype=np.float32))

    assert [b.numpy().tolist() for b in data.DataLoader(Count(3) + Count(2), batch_size=2)] == [
        [0.0, 1.0], [2.0, 0.0], [1.0]]
    scalars = list(data.DataLoader(Count(3), batch_size=None))
    assert [s.shape for s in scalars] == [()] * 3 and [float(s) for s in scalars] == [0.0, 1.0, 2.0]
    with pytest.raises(TypeError):
        data.IterableDataset()  # __iter__ is abstract
    stacked = data.StackDataset(x=data.ArrayDataset(np.arange(3)), y=data.ArrayDataset(np.arange(3) * 2))
    assert stacked[2] == {"x": (2,), "y": (4,)} and len(stacked) == 3
    with pytest.raises(ValueError, match="differ in length"):
        data.StackDataset(data.ArrayDataset(np.arange(3)), data.ArrayDataset(np.arange(4)))
    both = data.ArrayDataset(np.arange(3)) + data.ArrayDataset(np.arange(10, 14))
    assert len(both) == 7 and both[4] == (11,)

    class Backwards(data.Sampler):
        def __iter__(self):
            return iter([4, 0, 2])

    loader = data.DataLoader(data.ArrayDataset(np.arange(5) * 10), batch_size=2, sampler=Backwards())
    assert [b[0].numpy().tolist() for b in loader] == [[40, 0], [20]]
    Pair = collections.namedtuple("Pair", "x extra")

    class Named(data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return Pair(np.float32(i), [i, f"s{i}"])

    batch = next(iter(data.DataLoader(Named(), batch_size=3)))
    assert type(batch) is Pair and batch.x.numpy().tolist() == [0.0, 1.0, 2.0]
    assert batch.extra[0].numpy().tolist() == [0, 1, 2] and list(batch.extra[1]) == ["s0", "s1", "s2"]
    one = next(iter(data.DataLoader(Named(), batch_size=None)))
    assert type(one) is Pair and one.x.shape == () and one.extra == [0, "s0"]
    with pytest.raises(ValueError, match="mutually exclusive with drop_last"):
        data.DataLoader(Named(), batch_size=None, drop_last=True)
