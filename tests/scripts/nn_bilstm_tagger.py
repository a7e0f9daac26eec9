"""Part-of-speech style tagger: Embedding with padding_idx, bidirectional 2-layer LSTM,
per-token Linear, log_softmax + NLLLoss(ignore_index=-100) over padded positions, pad_sequence
of variable-length sentences, Adagrad; per-token accuracy ignoring padding."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

words = "the a dog cat runs sleeps quickly quietly big small".split()
tags = {"the": 0, "a": 0, "dog": 1, "cat": 1, "runs": 2, "sleeps": 2, "quickly": 3,
        "quietly": 3, "big": 4, "small": 4}
w2i = {w: i + 1 for i, w in enumerate(words)}
rng = np.random.default_rng(35)


def sentence():
    n = int(rng.integers(3, 7))
    s = [words[int(rng.integers(0, 2))]]
    if rng.uniform() < 0.5:
        s.append(words[int(rng.integers(8, 10))])
    s.append(words[int(rng.integers(2, 4))])
    s.append(words[int(rng.integers(4, 6))])
    while len(s) < n:
        s.append(words[int(rng.integers(6, 8))])
    return s


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(len(words) + 1, 12, padding_idx=0)
        self.lstm = nn.LSTM(12, 10, num_layers=2, bidirectional=True, batch_first=True)
        self.out = nn.Linear(20, 5)

    def forward(self, x):
        h, _ = self.lstm(self.emb(x))
        return F.log_softmax(self.out(h), dim=-1)


model = Tagger()
g = np.random.default_rng(36)
with torch.no_grad():
    for name, p in model.named_parameters():
        p.copy_(torch.tensor(g.uniform(-0.3, 0.3, size=tuple(p.shape)), dtype=torch.float32))
    model.emb.weight[0].zero_()
opt = torch.optim.Adagrad(model.parameters(), lr=0.1)
loss_fn = nn.NLLLoss(ignore_index=-100)
for it in range(25):
    sents = [sentence() for _ in range(8)]
    x = pad_sequence([torch.tensor([w2i[w] for w in s]) for s in sents], batch_first=True)
    y = pad_sequence([torch.tensor([tags[w] for w in s]) for s in sents], batch_first=True,
                     padding_value=-100)
    logp = model(x)
    loss = loss_fn(logp.reshape(-1, 5), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 5 == 0 or it == 24:
        mask = y != -100
        acc = ((logp.argmax(-1) == y) & mask).sum().item() / mask.sum().item()
        print(f"iter {it:2d} loss {loss.item():.6f} token acc {acc:.4f} batch {tuple(x.shape)}")
print("padding embedding row:", model.emb.weight[0])
