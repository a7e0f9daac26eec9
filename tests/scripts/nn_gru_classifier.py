"""GRU sequence classifier on variable-length sequences: pad_sequence, pack_padded_sequence
(enforce_sorted=False), bidirectional GRU, final hidden states, BCEWithLogitsLoss, RMSprop."""
import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

rng = np.random.default_rng(5)


def make_batch(n):
    seqs, labels = [], []
    for _ in range(n):
        length = int(rng.integers(3, 9))
        label = int(rng.integers(0, 2))
        base = np.cumsum(rng.normal(size=(length, 3)) * 0.3 + (0.2 if label else -0.2), axis=0)
        seqs.append(torch.tensor(base, dtype=torch.float32))
        labels.append(float(label))
    return seqs, torch.tensor(labels)


class GRUClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(3, 12, batch_first=True, bidirectional=True)
        self.out = nn.Linear(24, 1)

    def forward(self, seqs):
        lengths = torch.tensor([len(s) for s in seqs])
        padded = pad_sequence(seqs, batch_first=True)
        packed = pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
        packed_out, h = self.gru(packed)
        unpacked, out_lengths = pad_packed_sequence(packed_out, batch_first=True)
        feats = torch.cat([h[0], h[1]], dim=1)
        return self.out(feats).squeeze(1), unpacked, out_lengths


model = GRUClassifier()
g = np.random.default_rng(2)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(g.uniform(-0.3, 0.3, size=tuple(p.shape)), dtype=torch.float32))
print(model)
opt = torch.optim.RMSprop(model.parameters(), lr=0.01)
criterion = nn.BCEWithLogitsLoss()
for it in range(25):
    seqs, labels = make_batch(8)
    logits, unpacked, lens = model(seqs)
    loss = criterion(logits, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 5 == 0:
        acc = ((logits > 0).float() == labels).float().mean().item()
        print(f"iter {it} loss {loss.item():.6f} acc {acc:.3f} padded {tuple(unpacked.shape)} "
              f"lengths {lens.tolist()}")
with torch.no_grad():
    seqs, labels = make_batch(16)
    logits, _, _ = model(seqs)
print("eval probabilities:", torch.sigmoid(logits[:5]))
