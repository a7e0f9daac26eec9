"""Connectionist temporal classification on a toy "speech" task: a GRU over frame features
emits per-frame class scores, log_softmax, nn.CTCLoss with variable input and target lengths
(blank = 0), Adam; greedy CTC decoding (collapse repeats, drop blanks)."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(53)
C, T, B = 5, 14, 6                                # classes incl. blank, frames, batch
proto = rng.standard_normal((C, 4)).astype(np.float32)


def make_batch():
    feats = np.zeros((T, B, 4), np.float32)
    targets, in_lens, tgt_lens = [], [], []
    for b in range(B):
        n = int(rng.integers(2, 5))
        seq = rng.integers(1, C, n)
        frames = []
        for s in seq:
            frames += [s] * int(rng.integers(2, 4))
        frames = frames[:T]
        for t, s in enumerate(frames):
            feats[t, b] = proto[s] + 0.2 * rng.standard_normal(4)
        targets.append(torch.tensor(seq))
        in_lens.append(len(frames))
        tgt_lens.append(n)
    return (torch.tensor(feats), torch.cat(targets), torch.tensor(in_lens),
            torch.tensor(tgt_lens))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 16, bidirectional=True)
        self.out = nn.Linear(32, C)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.out(h).log_softmax(-1)


model = Model()
g = np.random.default_rng(54)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(g.uniform(-0.3, 0.3, size=tuple(p.shape)), dtype=torch.float32))
ctc = nn.CTCLoss(blank=0, zero_infinity=True)
opt = torch.optim.Adam(model.parameters(), lr=0.02)
for it in range(25):
    x, targets, in_lens, tgt_lens = make_batch()
    log_probs = model(x)
    loss = ctc(log_probs, targets, in_lens, tgt_lens)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 5 == 0 or it == 24:
        print(f"iter {it:2d} ctc loss {loss.item():.6f}")
with torch.no_grad():
    x, targets, in_lens, tgt_lens = make_batch()
    best = model(x).argmax(-1).t().tolist()
decoded = []
for b, row in enumerate(best):
    out, prev = [], 0
    for s in row[:in_lens[b].item()]:
        if s != prev and s != 0:
            out.append(s)
        prev = s
    decoded.append(out)
print("decoded:", decoded)
print("targets:", [t.tolist() for t in targets.split(tgt_lens.tolist())])
print("per-sample losses:", nn.CTCLoss(reduction="none")(model(x), targets, in_lens, tgt_lens))
