"""Contrastive / triplet losses with pairwise distances, and benchmark objectives (Ackley, Rastrigin)
-- including the classic 'NaN gradient at zero distance' pitfalls people post about.

Covers: gradients at kinks and ties (sqrt/norm at 0, max/amax/maximum ties, abs/relu/clamp at 0,
median, sort), torch.where with log, softplus threshold, F.normalize / cosine_similarity,
a descent loop rebuilding a leaf each step.
Edited from the audit version: ackley at the origin is float32 cancellation noise (-20 - e + 20
+ e); it is printed rounded.
"""
import math
import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(12)
emb = torch.tensor(rng.normal(size=(6, 4)), dtype=torch.float32, requires_grad=True)
labels = torch.tensor([0, 0, 1, 1, 2, 2])

# naive pairwise euclidean distance: sqrt at the zero diagonal -> NaN gradient
diff = emb.unsqueeze(1) - emb.unsqueeze(0)
dist = diff.pow(2).sum(-1).sqrt()
same = labels.unsqueeze(0) == labels.unsqueeze(1)
margin = 1.0
loss = torch.where(same, dist.pow(2), F.relu(margin - dist).pow(2)).mean()
loss.backward()
print("naive loss", loss.item(), "grad has nan:", torch.isnan(emb.grad).any().item())
print(emb.grad[0])

# the usual fix: add eps inside sqrt
emb.grad = None
dist = (diff.pow(2).sum(-1) + 1e-12).sqrt()
loss = torch.where(same, dist.pow(2), F.relu(margin - dist).pow(2)).mean()
loss.backward()
print("eps loss", loss.item(), "grad", emb.grad[0])

# norm-based distance (norm backward at exactly zero)
emb.grad = None
dist = torch.norm(emb[:, None, :] - emb[None, :, :], dim=-1)
dist.sum().backward()
print("norm-dist grad", emb.grad[0])
emb.grad = None
v = torch.zeros(3, requires_grad=True)
v.norm().backward()
print("grad of norm at 0:", v.grad)
w = torch.zeros(3, requires_grad=True)
torch.linalg.vector_norm(w).backward()
print("vector_norm at 0:", w.grad)

# triplet loss with hardest negative mining via max/min and masking
emb2 = F.normalize(emb, dim=1)
d = 2 - 2 * emb2 @ emb2.T
hardest_pos = (d * same.float()).max(dim=1).values
hardest_neg = (d + same.float() * 1e6).min(dim=1).values
trip = F.relu(hardest_pos - hardest_neg + 0.2).mean()
trip.backward()
print("triplet", trip.item(), emb.grad.abs().sum().item())
print("cosine sim", F.cosine_similarity(emb[0:1], emb[1:2]).item())

# ties in max / amax / maximum and kinks at 0
t = torch.tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
t.max().backward();            print("max() ties:", t.grad)
t.grad = None; t.amax().backward(); print("amax ties:", t.grad)
t.grad = None; t.max(dim=0).values.backward(); print("max(dim) ties:", t.grad)
t.grad = None; torch.maximum(t, torch.tensor([1.0, 3.0, 0.0, 5.0])).sum().backward(); print("maximum ties:", t.grad)
z = torch.tensor([-1.0, 0.0, 1.0], requires_grad=True)
(z.abs().sum() + z.relu().sum() + z.clamp(min=0.0).sum() + z.clamp(-1, 1).sum()).backward()
print("kinks at 0 / bounds:", z.grad)
z.grad = None; z.sqrt().sum().backward(); print("sqrt grad", z.grad)
z.grad = None; (z ** 0.5).sum().backward(); print("pow .5 grad", z.grad)
z.grad = None; (z.abs() ** 0).sum().backward(); print("pow 0 grad", z.grad)
z.grad = None; torch.where(z > 0, z.log(), torch.zeros_like(z)).sum().backward(); print("where-log grad", z.grad)
z.grad = None; F.softplus(z * 30, beta=1, threshold=20).sum().backward(); print("softplus thr grad", z.grad)
z.grad = None; (z.sign() * z).sum().backward(); print("sign grad", z.grad)
z.grad = None; z.median().backward(); print("median grad", z.grad)
z.grad = None; torch.sort(z * torch.tensor([1.0, 0.0, 1.0]))[0].cumsum(0).sum().backward(); print("sort ties grad", z.grad)

# benchmark objectives
def ackley(x):
    d = x.shape[-1]
    return (-20 * torch.exp(-0.2 * torch.sqrt((x ** 2).sum(-1) / d))
            - torch.exp(torch.cos(2 * math.pi * x).sum(-1) / d) + 20 + math.e)

def rastrigin(x):
    return 10 * x.shape[-1] + (x ** 2 - 10 * torch.cos(2 * math.pi * x)).sum(-1)

pts = torch.tensor([[0.0, 0.0], [0.5, -1.5], [2.0, 1.0]], requires_grad=True)
val = ackley(pts)
val.sum().backward()
# ackley(0) = -20 - e + 20 + e cancels to float32 round-off (+-1e-6, sign depends on the last
# bit of exp(1.0)): print the minimum rounded, the other values and the (NaN) gradient as is
print("ackley", round(val[0].item(), 4), val[1:], pts.grad)
pts.grad = None
val = rastrigin(pts)
val.sum().backward()
print("rastrigin", val, pts.grad)
x = torch.tensor([2.0, 1.0], requires_grad=True)
for i in range(100):
    f = rastrigin(x)
    gx, = torch.autograd.grad(f, x)
    x = (x - 0.002 * gx).detach().requires_grad_()
print("rastrigin descent", x, rastrigin(x).item())
