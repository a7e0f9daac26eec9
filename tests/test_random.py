"""torch.manual_seed + tapegrad's random factories, in-place samplers, nn.init, dropout,
samplers and DataLoader shuffling against torch's CPU random stream (MT19937 and torch's
transforms), bit for bit.

Values checked in below come from torch 2.13 (CPU, AVX2 build) so the stream is tested without
torch; the rest compares with torch itself when it is installed."""
import hashlib
import pickle

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.creation import _torch_avx2


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _np(x):
    if isinstance(x, (list, tuple)):
        return [_np(v) for v in x]
    if hasattr(x, "detach"):
        x = x.detach()
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


def _same(a, b):
    """Equal bit for bit (values, NaNs, dtypes, shapes)."""
    a, b = _np(a), _np(b)
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    assert a.dtype == b.dtype and a.shape == b.shape
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    assert np.array_equal(a.view(np.uint8) if a.dtype.kind == "f" else a,
                          b.view(np.uint8) if b.dtype.kind == "f" else b), (a, b)


def both(torch, fn, seed=0):
    """fn(tapegrad) and fn(torch), each right after manual_seed(seed), then one more draw from
    each default stream (so the number of draws consumed is compared too)."""
    tg.manual_seed(seed)
    torch.manual_seed(seed)
    a, b = fn(tg), fn(torch)
    _same(a, b)
    _same(tg.rand(2, dtype=tg.float64), torch.rand(2, dtype=torch.float64))
    return a


def _bits(x):
    x = _np(x)
    return [hex(v) for v in x.view(np.uint32 if x.dtype == np.float32 else np.uint64).ravel()]


# ----------------------------------------------------------------------------- checked-in values
def test_checked_in_rand_randint_randperm():
    tg.manual_seed(0)
    assert _bits(tg.rand(5)) == ["0x3efe1558", "0x3f44aa2f", "0x3db533a8", "0x3e073300",
                                 "0x3e9d6686"]
    tg.manual_seed(1)
    assert _bits(tg.randn(5, dtype=tg.float64)) == [
        "0x3fe529cc078113da", "0x3fd11548d02b8fe5", "0x3faf94295e129d76", "0x3fe3e1d4e0e48b01",
        "0xbfdcec06fed14fff"]
    tg.manual_seed(2)
    assert _bits(tg.randn(17, dtype=tg.float64))[-3:] == [
        "0x3fd4783b4283bb82", "0x3ff5a065b2e47fd9", "0xbfd5f3c02587a88e"]
    tg.manual_seed(3)
    assert tg.randint(0, 1000, (8,)).tolist() == [986, 48, 737, 667, 360, 280, 840, 525]
    tg.manual_seed(4)
    assert tg.randperm(10).tolist() == [0, 4, 9, 6, 7, 3, 2, 8, 1, 5]
    tg.manual_seed(5)
    assert tg.empty(12).bernoulli_(0.4).int().tolist() == [0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1]
    tg.manual_seed(6)
    assert tg.empty(3, dtype=tg.int64).random_().tolist() == [
        7246990587097631433, 6123946491034445780, 5925631456464534893]


@pytest.mark.skipif(not _torch_avx2(), reason="torch's AVX2 float32 Box-Muller values")
def test_checked_in_randn_float32_avx2():
    tg.manual_seed(0)
    assert _bits(tg.randn(20)) == [
        "0xbf901b85", "0xbf93808a", "0xbe804bd6", "0xbede255d", "0x3f194d8b", "0xbfc70d5b",
        "0xbeaec6ca", "0x3fed2f4e", "0x3eefaa55", "0xbe217f5f", "0x3fb8c9db", "0x3e8837a1",
        "0x3fb1d6c0", "0x3fcb0d00", "0x3f72409c", "0xbf57fb33", "0x3f6e8c30", "0x3fa12737",
        "0x4000519a", "0x3d5c1b3a"]


def test_checked_in_linear_dropout_shuffle_state():
    tg.manual_seed(7)
    lin = tg.nn.Linear(3, 2)
    assert _bits(lin.weight) == ["0x3d252be8", "0xbeb211cf", "0x3e3c4108", "0x3e398258",
                                 "0xbe9dfe3f", "0xbdb1377f"]
    assert _bits(lin.bias) == ["0xbead2c36", "0x3e1966ea"]
    tg.manual_seed(8)
    assert tg.nn.functional.dropout(tg.ones(10), 0.5).tolist() == [
        0.0, 0.0, 2.0, 2.0, 0.0, 2.0, 0.0, 2.0, 2.0, 0.0]
    tg.manual_seed(9)
    loader = tg.utils.data.DataLoader(list(range(10)), batch_size=4, shuffle=True)
    assert [b.tolist() for b in loader] == [[9, 5, 4, 7], [3, 1, 0, 8], [2, 6]]
    tg.manual_seed(123)
    tg.randn(3)         # leaves a cached normal in the state
    state = np.asarray(tg.get_rng_state()).tobytes()
    assert len(state) == 5056
    assert hashlib.sha256(state).hexdigest() == (
        "58972a30826f169967ba0d00ac53610a129bf403268b5092ef0592a1534f4e84")


# ----------------------------------------------------------------------------- generator API
def test_generator_api_without_torch():
    g = tg.Generator()
    assert g.initial_seed() == 67280421310721
    assert g.manual_seed(-1) is g and g.initial_seed() == 2 ** 64 - 1
    with pytest.raises(RuntimeError, match="Overflow"):
        g.manual_seed(2 ** 64)
    s = g.seed()
    assert g.initial_seed() == s
    st = g.get_state()
    a = tg.randn(7, generator=g)
    g.set_state(st)
    _same(tg.randn(7, generator=g), a)
    g2 = pickle.loads(pickle.dumps(g))
    _same(tg.rand(40, generator=g2), tg.rand(40, generator=g))
    with pytest.raises(RuntimeError, match="size to be 3"):
        g.set_state(tg.zeros(3, dtype=tg.uint8))
    with pytest.raises(RuntimeError, match="RNG state must be a torch.ByteTensor"):
        g.set_state(tg.zeros(5056))
    bad = np.asarray(st).copy()
    bad[8:12] = 0                   # left = 0
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        g.set_state(tg.from_numpy(bad))
    with pytest.raises(TypeError, match="expected a torch.Generator"):
        tg.rand(3, generator=3)


# ----------------------------------------------------------------------------- against torch
SIZES = [1, 15, 16, 17, 100, 1000]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("seed", [0, 42, 2 ** 40 + 7])
def test_rand(torch, n, dtype, seed):
    both(torch, lambda m: m.rand(n, dtype=getattr(m, dtype)), seed)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("seed", [0, 42, -3])
def test_randn(torch, n, dtype, seed):
    both(torch, lambda m: m.randn(n, dtype=getattr(m, dtype)), seed)
    # the scalar path's cached normal carries over between calls
    both(torch, lambda m: [m.randn(3, dtype=getattr(m, dtype)), m.randn(n, dtype=getattr(m, dtype)),
                           m.randn(1, dtype=getattr(m, dtype))], seed)


@pytest.mark.parametrize("n", [5, 16, 33, 1000])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normal_and_uniform_with_parameters(torch, n, dtype):
    both(torch, lambda m: m.empty(n, dtype=getattr(m, dtype)).normal_(0.3, 1.7))
    both(torch, lambda m: m.empty(n, dtype=getattr(m, dtype)).uniform_(-0.123, 0.456))
    both(torch, lambda m: m.normal(0.5, 3.0, (n,), dtype=getattr(m, dtype)))
    both(torch, lambda m: m.normal(m.arange(float(n), dtype=getattr(m, dtype)), 2.0))
    both(torch, lambda m: m.normal(1.5, m.arange(float(n), dtype=getattr(m, dtype))))
    both(torch, lambda m: m.normal(m.ones(n, dtype=getattr(m, dtype)),
                                   m.arange(float(n), dtype=getattr(m, dtype))))
    both(torch, lambda m: m.empty(n, dtype=getattr(m, dtype)).uniform_(2.0, 2.0))


_LIMIT = {"int64": 2 ** 63, "int32": 2 ** 31, "float32": 2 ** 24, "float64": 2 ** 53, "uint8": 256}


_RANGES = [(0, 10), (-5, 3), (0, 2 ** 28 - 1), (3, 2 ** 28 + 3), (0, 2 ** 31 - 1), (0, 2 ** 33),
           (-2 ** 40, 2 ** 40)]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype,args", [
    (d, r) for d in ("int64", "int32", "float32", "float64", "uint8") for r in _RANGES
    if r[1] <= _LIMIT[d] and not (r[0] < 0 and d == "uint8")])
def test_randint(torch, n, dtype, args):
    lo, hi = args
    both(torch, lambda m: m.randint(lo, hi, (n,), dtype=getattr(m, dtype)))
    both(torch, lambda m: m.randint_like(m.zeros(n, dtype=getattr(m, dtype)), lo, hi))


@pytest.mark.parametrize("n", [0, 1, 2, 15, 16, 17, 100, 1000, 5000])
def test_randperm(torch, n):
    both(torch, lambda m: m.randperm(n))
    both(torch, lambda m: m.randperm(n, dtype=m.int32, generator=m.Generator().manual_seed(n)))


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8", "bool", "float32",
                                   "float64"])
def test_random_(torch, dtype):
    both(torch, lambda m: m.empty(40, dtype=getattr(m, dtype)).random_())
    both(torch, lambda m: m.empty(40, dtype=getattr(m, dtype)).random_(2))
    both(torch, lambda m: m.empty(40, dtype=getattr(m, dtype)).random_(0, 1))
    if dtype != "bool":
        both(torch, lambda m: m.empty(40, dtype=getattr(m, dtype)).random_(3, None))
        both(torch, lambda m: m.empty(40, dtype=getattr(m, dtype)).random_(-1 if dtype[0] in "if"
                                                                            else 0, to=7))
    if dtype == "int64":
        both(torch, lambda m: m.empty(40, dtype=m.int64).random_(-2 ** 63, None))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_distributions_in_place(torch, dtype):
    def mk(m):
        return m.empty(100, dtype=getattr(m, dtype))
    both(torch, lambda m: mk(m).bernoulli_(0.3))
    both(torch, lambda m: mk(m).bernoulli_(m.linspace(0, 1, 100, dtype=getattr(m, dtype))))
    both(torch, lambda m: mk(m).bernoulli_(m.linspace(0, 1, 100)))
    both(torch, lambda m: m.bernoulli(m.linspace(0, 1, 100, dtype=getattr(m, dtype))))
    both(torch, lambda m: m.bernoulli(mk(m), 0.7))
    both(torch, lambda m: mk(m).exponential_(2.5))
    both(torch, lambda m: mk(m).geometric_(0.3))
    both(torch, lambda m: mk(m).cauchy_(1.0, 2.0))
    both(torch, lambda m: mk(m).log_normal_(0.5, 0.25))
    both(torch, lambda m: [m.randn(1, dtype=getattr(m, dtype)), mk(m).log_normal_()])


def test_multinomial(torch):
    w = [0.1, 2.0, 0.0, 3.0, 1.0, 0.5]
    both(torch, lambda m: m.multinomial(m.tensor(w), 4))
    both(torch, lambda m: m.multinomial(m.tensor(w), 1))
    both(torch, lambda m: m.multinomial(m.tensor(w, dtype=m.float64), 50, replacement=True))
    both(torch, lambda m: m.multinomial(m.tensor([w, w[::-1]]), 30, True))
    both(torch, lambda m: m.multinomial(m.tensor([w, w[::-1]]), 3))


def test_like_and_generator_arguments(torch):
    both(torch, lambda m: [m.rand_like(m.zeros(3, 20)), m.randn_like(m.zeros(40, dtype=m.float64)),
                           m.randint_like(m.zeros(2, 9), 4, 9)])
    both(torch, lambda m: [
        m.rand(20, generator=m.Generator().manual_seed(11)),
        m.randn(33, generator=m.Generator().manual_seed(12)),
        m.randint(0, 5, (9,), generator=m.Generator().manual_seed(13)),
        m.normal(0.0, 1.0, (4,), generator=m.Generator().manual_seed(14)),
        m.empty(30).uniform_(generator=m.Generator().manual_seed(15)),
        m.empty(30).normal_(generator=m.Generator().manual_seed(16)),
        m.bernoulli(m.full((9,), 0.5), generator=m.Generator().manual_seed(17)),
        m.multinomial(m.ones(5), 2, generator=m.Generator().manual_seed(18))])
    assert tg.Generator().initial_seed() == torch.Generator().initial_seed()


def test_non_contiguous_fill_order(torch):
    both(torch, lambda m: m.empty(10, 20).t().uniform_())
    both(torch, lambda m: m.empty(10, 20, dtype=m.float64).t().normal_())
    both(torch, lambda m: m.empty(4, 5, 6).permute(2, 0, 1).random_(100))
    both(torch, lambda m: m.empty(8, 6)[:, ::2].bernoulli_(0.5))


def test_state_matches_torch_and_moves_both_ways(torch):
    for draws in (lambda m: None, lambda m: m.randn(3), lambda m: m.rand(700),
                  lambda m: m.randn(5, dtype=m.float64)):
        tg.manual_seed(99)
        torch.manual_seed(99)
        draws(tg)
        draws(torch)
        _same(tg.get_rng_state(), torch.get_rng_state())
    # torch's state into tapegrad, tapegrad's into torch (with a cached normal)
    torch.manual_seed(5)
    torch.randn(1, dtype=torch.float64)
    tg.set_rng_state(tg.from_numpy(torch.get_rng_state().numpy()))
    _same(tg.randn(3, dtype=tg.float64), torch.randn(3, dtype=torch.float64))
    tg.manual_seed(6)
    tg.randn(1)
    torch.set_rng_state(torch.from_numpy(np.asarray(tg.get_rng_state())))
    _same(tg.randn(3), torch.randn(3))
    _same(tg.rand(1000), torch.rand(1000))
    assert tg.initial_seed() == torch.initial_seed() == 6
    g, h = tg.Generator(), torch.Generator()
    g.manual_seed(3)
    h.manual_seed(3)
    tg.rand(13, generator=g)
    torch.rand(13, generator=h)
    _same(g.get_state(), h.get_state())


# ----------------------------------------------------------------------------- nn
MODULES = {
    "Linear": lambda m: m.nn.Linear(20, 30),
    "Bilinear": lambda m: m.nn.Bilinear(5, 6, 7),
    "Conv1d": lambda m: m.nn.Conv1d(3, 8, 5),
    "Conv2d": lambda m: m.nn.Conv2d(3, 8, 3, groups=1),
    "ConvTranspose2d": lambda m: m.nn.ConvTranspose2d(4, 6, 3),
    "Embedding": lambda m: m.nn.Embedding(50, 16, padding_idx=0),
    "EmbeddingBag": lambda m: m.nn.EmbeddingBag(50, 16),
    "RNN": lambda m: m.nn.RNN(10, 20),
    "LSTM": lambda m: m.nn.LSTM(10, 20, num_layers=2, bidirectional=True),
    "GRU": lambda m: m.nn.GRU(10, 20, batch_first=True),
    "LSTMCell": lambda m: m.nn.LSTMCell(10, 20),
    "MultiheadAttention": lambda m: m.nn.MultiheadAttention(16, 4),
    "TransformerEncoderLayer": lambda m: m.nn.TransformerEncoderLayer(16, 4, 32),
    "TransformerDecoderLayer": lambda m: m.nn.TransformerDecoderLayer(16, 4, 32),
    "Sequential": lambda m: m.nn.Sequential(m.nn.Linear(784, 256), m.nn.ReLU(),
                                             m.nn.Linear(256, 10)),
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_default_initialisation(torch, name):
    both(torch, lambda m: list(MODULES[name](m).parameters()), seed=3)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,call", [
    ("kaiming_uniform_", lambda m, w: m.nn.init.kaiming_uniform_(w, a=0.1)),
    ("kaiming_normal_", lambda m, w: m.nn.init.kaiming_normal_(w, mode="fan_out")),
    ("xavier_uniform_", lambda m, w: m.nn.init.xavier_uniform_(w)),
    ("xavier_normal_", lambda m, w: m.nn.init.xavier_normal_(w, gain=2.0)),
    ("normal_", lambda m, w: m.nn.init.normal_(w, 0.1, 0.02)),
    ("uniform_", lambda m, w: m.nn.init.uniform_(w, -0.1, 0.3)),
    ("trunc_normal_", lambda m, w: m.nn.init.trunc_normal_(w, std=0.02)),
    ("trunc_normal_narrow", lambda m, w: m.nn.init.trunc_normal_(w, 0.5, 1.0, -0.1, 0.2)),
    ("sparse_", lambda m, w: m.nn.init.sparse_(w, 0.3)),
])
def test_init(torch, dtype, name, call):
    both(torch, lambda m: call(m, m.empty(7, 9, dtype=getattr(m, dtype))))


def test_orthogonal_draws_as_torch(torch):
    tg.manual_seed(1)
    torch.manual_seed(1)
    a = tg.nn.init.orthogonal_(tg.empty(6, 9, dtype=tg.float64))
    b = torch.nn.init.orthogonal_(torch.empty(6, 9, dtype=torch.float64))
    np.testing.assert_allclose(_np(a), _np(b), rtol=0, atol=1e-12)      # LAPACK's rounding
    _same(tg.rand(3), torch.rand(3))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_family(torch, dtype, p):
    def run(m):
        x = m.randn(8, 6, 5, 5, dtype=getattr(m, dtype))
        out = [m.nn.functional.dropout(x, p), m.nn.Dropout(p)(x), m.nn.Dropout2d(p)(x),
               m.nn.Dropout1d(p)(x[0]), m.nn.AlphaDropout(p).train()(x),
               m.nn.FeatureAlphaDropout(p).train()(x), m.dropout(x, p, True)]
        y = x.clone()
        m.nn.functional.dropout(y, p, inplace=True)
        return out + [y, m.nn.functional.dropout(x, p, training=False)]
    both(torch, run)


def test_dropout_in_recurrent_and_transformer_layers(torch):
    """Same masks (the outputs agree to float rounding: the layers' arithmetic is not bit for
    bit; a different mask would change them at O(1)), then the same stream position."""
    def run(m):
        m.manual_seed(4)
        lstm = m.nn.LSTM(4, 6, num_layers=2, dropout=0.3)
        layer = m.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.2)
        out, _ = lstm(m.randn(5, 3, 4))
        return [_np(out), _np(layer(m.randn(5, 3, 8))), _np(m.rand(5, dtype=m.float64))]
    a, b = run(tg), run(torch)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-5, atol=1e-5)
    _same(a[2], b[2])


# ----------------------------------------------------------------------------- data
def test_dataloader_shuffle_and_samplers(torch):
    def run(m):
        ds = m.utils.data.TensorDataset(m.arange(100), m.randn(100, 3))
        dl = m.utils.data.DataLoader(ds, batch_size=16, shuffle=True)
        epochs = [[b[0] for b in dl] for _ in range(3)]
        g = m.Generator().manual_seed(5)
        dl2 = m.utils.data.DataLoader(ds, batch_size=30, shuffle=True, generator=g)
        epochs2 = [b[0] for b in dl2]
        parts = [m.tensor(s.indices) for s in
                 m.utils.data.random_split(range(30), [0.5, 0.3, 0.2], generator=g)]
        parts2 = [m.tensor(s.indices) for s in m.utils.data.random_split(range(30), [10, 20])]
        ws = m.tensor(list(m.utils.data.WeightedRandomSampler([0.1, 0.5, 0.4], 10)))
        rs = m.tensor(list(m.utils.data.RandomSampler(range(10), replacement=True,
                                                      num_samples=40)))
        sub = m.tensor(list(m.utils.data.SubsetRandomSampler([3, 5, 7, 9])))
        return [x for e in epochs for x in e] + epochs2 + parts + parts2 + [ws, rs, sub]
    both(torch, run, seed=7)


def test_training_run_matches_torch(torch):
    """A seeded script (default init, randn data, shuffled batches, dropout, Adam) gives
    torch's losses (to float rounding: the arithmetic of the steps is not bit for bit)."""
    def run(m):
        m.manual_seed(0)
        x = m.randn(64, 10)
        y = (x[:, :3].sum(1) > 0).long()
        model = m.nn.Sequential(m.nn.Linear(10, 32), m.nn.ReLU(), m.nn.Dropout(0.2),
                                m.nn.Linear(32, 2))
        opt = m.optim.Adam(model.parameters(), lr=1e-2)
        dl = m.utils.data.DataLoader(m.utils.data.TensorDataset(x, y), batch_size=16,
                                     shuffle=True)
        losses = []
        for _ in range(3):
            for xb, yb in dl:
                loss = m.nn.functional.cross_entropy(model(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
        return np.array(losses)
    a, b = run(tg), run(torch)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_torch_random_module(torch):
    tg.random.manual_seed(21)
    torch.random.manual_seed(21)
    with tg.random.fork_rng():
        inner = tg.randn(40)
    with torch.random.fork_rng():
        torch.randn(40)
    _same(tg.randn(40), torch.randn(40))
    tg.manual_seed(21)
    _same(tg.randn(40), inner)
    assert tg.random.initial_seed() == 21
    _same(tg.random.get_rng_state(), tg.get_rng_state())
    assert tg.random.default_generator is tg.default_generator
