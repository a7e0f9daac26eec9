"""tapegrad.utils.data against torch.utils.data (the oracle) and, without torch, against the
documented behaviour: batches, collation of every sample type, samplers, lengths, error
messages, random_split sizes, iterable datasets."""
import collections
import math

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.utils import data as tdata

try:
    import torch
    from torch.utils import data as pdata
except ImportError:  # pragma: no cover
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def convert(x):
    """A comparable form of a (nested) batch: tensors -> (dtype name, shape, values)."""
    if hasattr(x, "dtype") and hasattr(x, "tolist") and hasattr(x, "shape"):
        return ("T", str(x.dtype).replace("tapegrad", "torch"), tuple(x.shape), x.tolist())
    if isinstance(x, dict):
        return (type(x).__name__, {k: convert(v) for k, v in x.items()})
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return ("nt", type(x).__name__, tuple(convert(v) for v in x))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [convert(v) for v in x])
    return x


Point = collections.namedtuple("Point", "x y")


def samples(lib):
    rng = np.random.default_rng(0)
    return {
        "tensors": [lib.tensor(rng.standard_normal(3).astype(np.float32)) for _ in range(5)],
        "numpy": [rng.standard_normal((2, 2)) for _ in range(5)],
        "floats": [0.5 * i for i in range(5)],
        "ints": list(range(5)),
        "bools": [True, False, True, True, False],
        "np_scalars": [np.float32(i) for i in range(5)],
        "strings": ["a", "b", "c", "d", "e"],
        "tuples": [(lib.tensor([i]), float(i), "s%d" % i) for i in range(5)],
        "dicts": [{"x": lib.tensor([i, i]), "y": i} for i in range(5)],
        "ordered": [collections.OrderedDict(b=i, a=float(i)) for i in range(5)],
        "namedtuples": [Point(lib.tensor(float(i)), i) for i in range(5)],
        "lists": [[i, float(i)] for i in range(5)],
    }


@needs_torch
@pytest.mark.parametrize("kind", sorted(samples(tg)))
@pytest.mark.parametrize("batch_size,drop_last", [(2, False), (2, True), (5, False), (None, False)])
def test_batches_match_torch(kind, batch_size, drop_last):
    if batch_size is None and drop_last:
        pytest.skip("invalid")
    t = list(pdata.DataLoader(samples(torch)[kind], batch_size=batch_size, drop_last=drop_last))
    g = list(tdata.DataLoader(samples(tg)[kind], batch_size=batch_size, drop_last=drop_last))
    assert convert(g) == convert(t)


@needs_torch
def test_tensor_dataset_with_sampler_and_batch_sampler_match_torch():
    x = np.arange(20.0).reshape(10, 2)
    y = np.arange(10)
    order = [3, 1, 4, 1, 5, 9, 2, 6]
    for lib, dmod in ((torch, pdata), (tg, tdata)):
        ds = dmod.TensorDataset(lib.tensor(x), lib.tensor(y))
        a = list(dmod.DataLoader(ds, batch_size=3, sampler=order))
        b = list(dmod.DataLoader(ds, batch_sampler=[[0, 2], [9], [4, 5, 6]]))
        c = list(dmod.DataLoader(ds, batch_size=4, collate_fn=lambda batch: len(batch)))
        d = list(dmod.DataLoader(dmod.Subset(ds, [8, 7]), batch_size=2))
        e = list(dmod.DataLoader(dmod.ConcatDataset([ds, ds]), batch_size=7, drop_last=True))
        res = convert([a, b, c, d, e, len(dmod.DataLoader(ds, batch_size=3)),
                       len(dmod.DataLoader(ds, batch_size=3, drop_last=True))])
        if lib is torch:
            expected = res
    assert res == expected


class Squares(tdata.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(i * i for i in range(self.n))

    def __len__(self):
        return self.n


def test_iterable_dataset_batches():
    dl = tdata.DataLoader(Squares(7), batch_size=3)
    assert [b.tolist() for b in dl] == [[0, 1, 4], [9, 16, 25], [36]]
    assert len(dl) == 3
    assert [b.tolist() for b in tdata.DataLoader(Squares(7), batch_size=3, drop_last=True)] == \
        [[0, 1, 4], [9, 16, 25]]
    chained = list(tdata.ChainDataset([Squares(2), Squares(3)]))
    assert chained == [0, 1, 0, 1, 4]


def test_shuffle_is_a_permutation_each_epoch_and_generator_reproducible():
    ds = tdata.TensorDataset(tg.arange(20))
    g1 = tg.Generator().manual_seed(5)
    g2 = tg.Generator().manual_seed(5)
    e1 = [b[0].tolist() for b in tdata.DataLoader(ds, batch_size=20, shuffle=True, generator=g1)]
    e2 = [b[0].tolist() for b in tdata.DataLoader(ds, batch_size=20, shuffle=True, generator=g2)]
    assert e1 == e2 and sorted(e1[0]) == list(range(20)) and e1[0] != list(range(20))
    dl = tdata.DataLoader(ds, batch_size=20, shuffle=True)
    a, b = next(iter(dl))[0].tolist(), next(iter(dl))[0].tolist()
    assert sorted(a) == sorted(b) == list(range(20)) and a != b


def test_random_split_lengths_and_disjointness():
    parts = tdata.random_split(range(10), [0.5, 0.3, 0.2], generator=tg.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [5, 3, 2]
    assert sorted(i for p in parts for i in p) == list(range(10))
    parts = tdata.random_split(range(7), [0.5, 0.5])
    assert [len(p) for p in parts] == [4, 3]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the "
                                         "input dataset!"):
        tdata.random_split(range(5), [2, 2])


def test_samplers():
    assert list(tdata.SequentialSampler(range(4))) == [0, 1, 2, 3]
    bs = tdata.BatchSampler(range(7), 3, False)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6]] and len(bs) == 3
    assert list(tdata.BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    rs = tdata.RandomSampler(range(10), replacement=True, num_samples=40,
                             generator=tg.Generator().manual_seed(1))
    draws = list(rs)
    assert len(draws) == 40 and all(0 <= d < 10 for d in draws)
    w = list(tdata.WeightedRandomSampler([0.0, 1.0, 0.0], 5))
    assert w == [1, 1, 1, 1, 1]
    sub = list(tdata.SubsetRandomSampler([10, 20, 30]))
    assert sorted(sub) == [10, 20, 30]


@needs_torch
@pytest.mark.parametrize("make", [
    lambda m, ds: m.DataLoader(ds, sampler=[0, 1], shuffle=True),
    lambda m, ds: m.DataLoader(ds, batch_sampler=[[0]], batch_size=2),
    lambda m, ds: m.DataLoader(ds, batch_size=None, drop_last=True),
    lambda m, ds: m.DataLoader(ds, num_workers=-1),
    lambda m, ds: m.DataLoader(ds, prefetch_factor=2),
    lambda m, ds: m.DataLoader(ds, persistent_workers=True),
    lambda m, ds: m.BatchSampler(range(3), 0, False),
    lambda m, ds: m.RandomSampler(ds, num_samples=0),
    lambda m, ds: m.TensorDataset(ds.tensors[0], ds.tensors[0][:2]),
    lambda m, ds: list(m.DataLoader([[1, 2], [3]], batch_size=2)),
    lambda m, ds: list(m.DataLoader([object(), object()], batch_size=2)),
    lambda m, ds: list(m.DataLoader([np.array(["a"]), np.array(["b"])], batch_size=2)),
    lambda m, ds: setattr(m.DataLoader(ds), "batch_size", 3),
])
def test_errors_match_torch(make):
    def run(lib, m):
        ds = m.TensorDataset(lib.zeros(4, 2))
        try:
            make(m, ds)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e).split(" found ")[0]
        return None
    t, g = run(torch, pdata), run(tg, tdata)
    assert t is not None and g == t


def test_default_collate_types_without_torch():
    b = tdata.default_collate([{"a": 1.0, "b": np.array([1, 2])}, {"a": 2.0, "b": np.array([3, 4])}])
    assert b["a"].dtype == tg.float64 and b["a"].tolist() == [1.0, 2.0]
    assert b["b"].dtype == tg.int64 and b["b"].tolist() == [[1, 2], [3, 4]]
    assert tdata.default_collate([(1, "x"), (2, "y")])[1] == ("x", "y")
    assert tdata.default_convert(np.array([1.5]))[0].item() == 1.5
    assert tdata.get_worker_info() is None
    assert math.isclose(float(tdata.default_collate([np.float32(0.5), np.float32(1)])[0]), 0.5)
