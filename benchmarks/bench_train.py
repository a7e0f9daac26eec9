"""Training-step time: tapegrad against PyTorch eager (CPU), same run, same machine.

    python benchmarks/bench_train.py                  # full run (a few minutes)
    python benchmarks/bench_train.py --quick          # fewer repeats
    python benchmarks/bench_train.py --profile lstm   # cProfile of tapegrad's step (top 25)
    python benchmarks/bench_train.py --ab transformer # also tapegrad without nn's fused entries

Workloads (one timed call = zero_grad, forward, loss, backward, optimizer step):

  mlp          784-256-10 MLP (ReLU), batch 64, CrossEntropyLoss, Adam
  lstm         char-LSTM: Embedding(65, 32), LSTM(32, 128), Linear(128, 65); seq 64, batch 32,
               CrossEntropyLoss, Adam, clip_grad_norm_(1.0)
  transformer  2-layer TransformerEncoder (d=64, 4 heads, ff 128, batch_first) with a causal
               mask, token embedding (vocab 64), seq 64, batch 16, CrossEntropyLoss, AdamW
  cnn          Conv2d(1,8,3)-ReLU-MaxPool2d(2)-Conv2d(8,16,3)-ReLU-MaxPool2d(2)-Linear(400,10),
               input (32, 1, 28, 28), CrossEntropyLoss, SGD momentum 0.9
  adam step    Adam.step() alone on the MLP's parameters (203,530 floats), gradients set once
  sgd step     SGD(momentum=0.9).step() alone on the same parameters

Both libraries start from the same parameters (from numpy); before timing, the losses of the
first three steps are compared. tapegrad and torch repeats are interleaved; the table shows
medians over repeats (each repeat runs the call for at least 200 ms, 50 ms with --quick) and
ratio = torch / tapegrad: > 1 means tapegrad is faster. Both libraries run on one thread:
NUMBA_NUM_THREADS, OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS and TAPEGRAD_THREADS
are set to 1 before numpy is imported, and torch.set_num_threads(1) (--torch-threads N gives
torch N threads instead; TRAIN_BENCH_THREADS=default keeps every library's default).
"""
import os

if os.environ.get("TRAIN_BENCH_THREADS") != "default":
    for _k in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "MKL_NUM_THREADS", "TAPEGRAD_THREADS"):
        os.environ[_k] = "1"

import argparse
import cProfile
import math
import pstats
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import tapegrad  # noqa: E402

try:
    import torch
except ImportError:  # torch is an optional peer
    torch = None


def _init(lib, model, seed):
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                bound = 1.0 / math.sqrt(p.shape[1] * (p[0][0].numel() if p.dim() > 2 else 1))
            else:
                bound = 0.05
            p.copy_(lib.tensor(rng.uniform(-bound, bound, size=tuple(p.shape)).astype(
                np.float32)))
    return model


def mlp(lib):
    nn = lib.nn
    model = _init(lib, nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)), 1)
    rng = np.random.default_rng(2)
    x = lib.tensor(rng.standard_normal((64, 784)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, 64))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def lstm(lib):
    nn = lib.nn

    class CharLSTM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(65, 32)
            self.lstm = nn.LSTM(32, 128, batch_first=True)
            self.head = nn.Linear(128, 65)

        def forward(self, x):
            h, _ = self.lstm(self.emb(x))
            return self.head(h)

    model = _init(lib, CharLSTM(), 3)
    rng = np.random.default_rng(4)
    x = lib.tensor(rng.integers(0, 65, (32, 64)))
    y = lib.tensor(rng.integers(0, 65, (32, 64)))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x).reshape(-1, 65), y.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss
    return step


def transformer(lib):
    nn = lib.nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(64, 64)
            layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
            self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(64, 64)

        def forward(self, x, mask):
            return self.head(self.enc(self.emb(x), mask=mask, is_causal=True))

    model = _init(lib, LM(), 5)
    with lib.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.fill_(1.0)
                m.bias.zero_()
    rng = np.random.default_rng(6)
    x = lib.tensor(rng.integers(0, 64, (16, 64)))
    y = lib.tensor(rng.integers(0, 64, (16, 64)))
    mask = nn.Transformer.generate_square_subsequent_mask(64)
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x, mask).reshape(-1, 64), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss
    return step


def cnn(lib):
    nn = lib.nn
    model = _init(lib, nn.Sequential(
        nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 10)), 7)
    rng = np.random.default_rng(8)
    x = lib.tensor(rng.standard_normal((32, 1, 28, 28)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, 32))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def _opt_only(name):
    def make(lib):
        nn = lib.nn
        model = _init(lib, nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)), 9)
        rng = np.random.default_rng(10)
        for p in model.parameters():
            p.grad = lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 1e-3)
        if name == "adam":
            opt = lib.optim.Adam(model.parameters(), lr=1e-3)
        else:
            opt = lib.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)

        def step():
            opt.step()
            return None
        return step
    return make


WORKLOADS = {"mlp": mlp, "lstm": lstm, "transformer": transformer, "cnn": cnn,
             "adam step": _opt_only("adam"), "sgd step": _opt_only("sgd")}


def _time(fn, min_time):
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time:
            return dt / n
        n = max(n * 2, int(n * min_time / max(dt, 1e-9)) + 1)


def _fmt(s):
    return "%.3f ms" % (s * 1e3) if s >= 1e-3 else "%.1f us" % (s * 1e6)


def check(name):
    """Losses of the first three steps in both libraries (same parameters and data)."""
    if torch is None:
        return None
    a, b = WORKLOADS[name](tapegrad), WORKLOADS[name](torch)
    diffs = []
    for _ in range(3):
        la, lb = a(), b()
        if la is None:
            return None
        la, lb = float(la.detach()), float(lb.detach())
        diffs.append(abs(la - lb) / max(1.0, abs(lb)))
    return max(diffs)


def _unfused(step):
    """``step`` with tapegrad.nn's fused entries off (nn/_fused.py: the compositions)."""
    from tapegrad.nn import _fused

    def call():
        _fused.ENABLED[0] = False
        try:
            return step()
        finally:
            _fused.ENABLED[0] = True
    return call


def run(names, reps, min_time, ab=False):
    rows = []
    for name in names:
        ok = check(name)
        steps = {"tapegrad": WORKLOADS[name](tapegrad)}
        if ab:
            steps["unfused"] = _unfused(WORKLOADS[name](tapegrad))
        if torch is not None:
            steps["torch"] = WORKLOADS[name](torch)
        for s in steps.values():          # warm-up (compilation, caches)
            for _ in range(3):
                s()
        samples = {k: [] for k in steps}
        for _ in range(reps):
            for k, s in steps.items():
                samples[k].append(_time(s, min_time))
        med = {k: float(np.median(v)) for k, v in samples.items()}
        ratio = med["torch"] / med["tapegrad"] if "torch" in med else float("nan")
        rows.append((name, med["tapegrad"], med.get("torch"), ratio, ok))
        print("%-12s tapegrad %-11s torch %-11s ratio %5.2fx   first-steps loss diff %s"
              % (name, _fmt(med["tapegrad"]), _fmt(med["torch"]) if "torch" in med else "-",
                 ratio, "%.1e" % ok if ok is not None else "-"), flush=True)
        if ab and "torch" in med:
            print("%-12s unfused  %-11s ratio %5.2fx   (fused / unfused time %.2f)"
                  % ("", _fmt(med["unfused"]), med["torch"] / med["unfused"],
                     med["tapegrad"] / med["unfused"]), flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--torch-threads", type=int, default=None)
    ap.add_argument("--profile", choices=sorted(WORKLOADS), default=None)
    ap.add_argument("--ab", action="store_true",
                    help="also time tapegrad with nn's fused entries off (interleaved)")
    ap.add_argument("names", nargs="*", choices=sorted(WORKLOADS) + [[]], default=[])
    args = ap.parse_args(argv)
    if torch is not None and args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    elif torch is not None and os.environ.get("TRAIN_BENCH_THREADS") != "default":
        torch.set_num_threads(1)
    if args.profile:
        step = WORKLOADS[args.profile](tapegrad)
        for _ in range(3):
            step()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(20):
            step()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        return 0
    names = args.names or list(WORKLOADS)
    reps, min_time = (5, 0.05) if args.quick else (9, 0.2)
    print("tapegrad %s (%s numba threads), torch %s (%s threads), numpy %s, load %.2f" % (
        tapegrad.__version__, tapegrad.get_num_threads(),
        torch.__version__ if torch else "absent",
        torch.get_num_threads() if torch else "-", np.__version__, os.getloadavg()[0]))
    rows = run(names, reps, min_time, args.ab)
    print("\n| workload | tapegrad | torch | ratio (torch / tapegrad) |")
    print("|---|---|---|---|")
    for name, tg_t, t_t, ratio, _ in rows:
        print("| %s | %s | %s | %.2fx |" % (name, _fmt(tg_t), _fmt(t_t) if t_t else "-", ratio))
    return 0


if __name__ == "__main__":
    sys.exit(main())
