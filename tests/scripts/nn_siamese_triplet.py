"""Metric learning: an embedding network trained with TripletMarginLoss, evaluated with
CosineSimilarity and PairwiseDistance; also CosineEmbeddingLoss and MarginRankingLoss on the
same embeddings; F.normalize outputs."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(37)
centers = rng.standard_normal((4, 8)) * 2
def sample(k, n):
    return torch.tensor((centers[k] + 0.5 * rng.standard_normal((n, 8))).astype(np.float32))


# (no bias on the embedding layer: distances ignore a common shift, so its gradient is zero
# up to rounding, noise that Adam would amplify)
net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4, bias=False))
g = np.random.default_rng(38)
with torch.no_grad():
    for p in net.parameters():
        p.copy_(torch.tensor(g.uniform(-0.4, 0.4, size=tuple(p.shape)), dtype=torch.float32))
triplet = nn.TripletMarginLoss(margin=1.0, p=2)
opt = torch.optim.Adam(net.parameters(), lr=5e-3)
for it in range(40):
    ks = rng.integers(0, 4, 16)
    other = (ks + rng.integers(1, 4, 16)) % 4
    a = torch.cat([sample(k, 1) for k in ks])
    p = torch.cat([sample(k, 1) for k in ks])
    n = torch.cat([sample(k, 1) for k in other])
    loss = triplet(net(a), net(p), net(n))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 10 == 0 or it == 39:
        print(f"iter {it:2d} triplet loss {loss.item():.6f}")

with torch.no_grad():
    e1, e2, e3 = net(sample(0, 5)), net(sample(0, 5)), net(sample(2, 5))
    cos = nn.CosineSimilarity(dim=1)
    dist = nn.PairwiseDistance(p=2)
    print("same-class cosine:", cos(e1, e2))
    print("other-class cosine:", cos(e1, e3))
    print("distances:", dist(e1, e2).mean().item(), dist(e1, e3).mean().item())
    print("normalized:", F.normalize(e1[:2], dim=1))
    target = torch.tensor([1, 1, -1, -1, 1])
    print("cosine embedding loss:", nn.CosineEmbeddingLoss(margin=0.2)(e1, e3, target).item())
    print("margin ranking loss:", nn.MarginRankingLoss(0.5)(dist(e1, e3), dist(e1, e2),
                                                           torch.ones(5)).item())
