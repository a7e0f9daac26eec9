"""Skip-gram word2vec with negative sampling: two Embedding tables, logsigmoid of dot
products for positive and sampled negative context words (negatives drawn in numpy), SparseAdam
avoided (plain Adam), nearest neighbours by cosine similarity."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

corpus = ("king queen man woman king man queen woman prince princess boy girl "
          "prince boy princess girl king prince queen princess") .split() * 5
vocab = sorted(set(corpus))
idx = {w: i for i, w in enumerate(vocab)}
ids = np.array([idx[w] for w in corpus])
pairs = [(ids[i], ids[j]) for i in range(len(ids)) for j in range(max(0, i - 2),
                                                                      min(len(ids), i + 3))
         if i != j]
pairs = np.array(pairs)
rng = np.random.default_rng(47)


class SkipGram(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.inp = nn.Embedding(n, d)
        self.ctx = nn.Embedding(n, d)

    def forward(self, center, context, negatives):
        v = self.inp(center)                                   # (B, d)
        pos = F.logsigmoid((v * self.ctx(context)).sum(1))
        neg = F.logsigmoid(-torch.bmm(self.ctx(negatives), v.unsqueeze(2)).squeeze(2)).sum(1)
        return -(pos + neg).mean()


model = SkipGram(len(vocab), 6)
g = np.random.default_rng(48)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(g.uniform(-0.5, 0.5, size=tuple(p.shape)), dtype=torch.float32))
opt = torch.optim.Adam(model.parameters(), lr=0.02)
for epoch in range(6):
    order = rng.permutation(len(pairs))
    total = 0.0
    for b in range(0, len(order), 64):
        sel = pairs[order[b:b + 64]]
        neg = torch.tensor(rng.integers(0, len(vocab), (len(sel), 3)))
        loss = model(torch.tensor(sel[:, 0]), torch.tensor(sel[:, 1]), neg)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * len(sel)
    print(f"epoch {epoch} loss {total / len(pairs):.6f}")
with torch.no_grad():
    emb = F.normalize(model.inp.weight, dim=1)
    sims = emb @ emb.t()
    for w in ("king", "girl"):
        top = sims[idx[w]].topk(3).indices.tolist()
        print(w, "->", [vocab[i] for i in top])
