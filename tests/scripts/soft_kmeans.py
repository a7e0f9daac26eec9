"""Soft k-means / GMM-like soft assignments with logsumexp and pairwise distances.

Covers: broadcasting with None-indexing, logsumexp (including an all -inf row), softmax
responsibilities, argmax counts, cdist, gradients through an EM-style M-step.
"""
import numpy as np
import torch

rng = np.random.default_rng(5)
centers_true = np.array([[0, 0], [3, 3], [-3, 2]], dtype=np.float32)
pts = np.concatenate([c + rng.normal(scale=0.5, size=(40, 2)) for c in centers_true]).astype(np.float32)
X = torch.from_numpy(pts)
C = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], requires_grad=True)
beta = 2.0

def pairwise_sq(X, C):
    return ((X[:, None, :] - C[None, :, :]) ** 2).sum(-1)   # (N, K)

for it in range(30):
    D = pairwise_sq(X, C)
    # soft-min energy: -1/beta * logsumexp(-beta * D)
    energy = -(torch.logsumexp(-beta * D, dim=1) / beta).mean()
    energy.backward()
    with torch.no_grad():
        C -= 0.5 * C.grad
        C.grad.zero_()
    if it % 10 == 0 or it == 29:
        print(f"it {it:2d} energy {energy.item():.6f}")
print("centers", C)

with torch.no_grad():
    D = pairwise_sq(X, C)
    R = torch.softmax(-beta * D, dim=1)
    hard = R.argmax(1)
    counts = torch.stack([(hard == j).sum() for j in range(3)])
print("counts", counts, counts.dtype)
print("resp[:3]", R[:3])

# alternative distance formulations should agree
D1 = pairwise_sq(X, C.detach())
D2 = (X ** 2).sum(1, keepdim=True) - 2 * X @ C.detach().T + (C.detach() ** 2).sum(1)
D3 = torch.cdist(X, C.detach()) ** 2
print("dist agree", torch.allclose(D1, D2, atol=1e-4), torch.allclose(D1, D3, atol=1e-4))

# EM-style M-step with gradient through responsibilities
Cg = C.detach().clone().requires_grad_()
R = torch.softmax(-beta * pairwise_sq(X, Cg), dim=1)
newC = (R.T @ X) / R.sum(0).unsqueeze(1)
shift = (newC - Cg).norm(dim=1).sum()
shift.backward()
print("M-step shift", shift.item(), "grad", Cg.grad)
lse = torch.logsumexp(torch.tensor([[-float('inf'), -float('inf')], [0.0, 1.0]]), dim=1)
print("logsumexp with -inf row", lse)
