"""MNIST-sized synthetic classification: 784-256-10 MLP, batch 512, a few SGD steps with momentum,
plus weight tying / transposed-operand arithmetic that large models use.

Covers: F.gelu / F.dropout(p=0) / F.cross_entropy on a large batch, momentum buffers updated in
place, elementwise ops mixing A and A.T, trace, float64 1000x1000 elementwise graphs.
"""
import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(15)
N, D, H, K = 2048, 784, 256, 10
X = torch.tensor(rng.normal(size=(N, D)), dtype=torch.float32)
true_W = rng.normal(size=(D, K)).astype(np.float32)
y = torch.from_numpy((X.numpy() @ true_W).argmax(1))
W1 = torch.tensor(rng.normal(size=(D, H)) * np.sqrt(2.0 / D), dtype=torch.float32, requires_grad=True)
b1 = torch.zeros(H, requires_grad=True)
W2 = torch.tensor(rng.normal(size=(H, K)) * np.sqrt(1.0 / H), dtype=torch.float32, requires_grad=True)
b2 = torch.zeros(K, requires_grad=True)
params = [W1, b1, W2, b2]
vel = [torch.zeros_like(p) for p in params]
bs, lr, mom = 512, 0.05, 0.9
for epoch in range(3):
    for i in range(0, N, bs):
        xb, yb = X[i:i + bs], y[i:i + bs]
        h = F.gelu(xb @ W1 + b1)
        h = F.dropout(h, p=0.0, training=True)
        logits = h @ W2 + b2
        loss = F.cross_entropy(logits, yb) + 1e-4 * (W1 * W1).sum()
        for p in params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p, v in zip(params, vel):
                v.mul_(mom).add_(p.grad)
                p.sub_(lr * v)
    with torch.no_grad():
        acc = ((F.gelu(X @ W1 + b1) @ W2 + b2).argmax(1) == y).float().mean()
    print(f"epoch {epoch} loss {loss.item():.5f} acc {acc.item():.4f}")
print("W1 grad stats", W1.grad.abs().mean().item(), W1.grad.std().item())

# big elementwise ops with transposed operands (symmetrisation, residuals, tied weights)
A = torch.tensor(rng.normal(size=(H, H)), dtype=torch.float32, requires_grad=True)
Bm = torch.tensor(rng.normal(size=(H, H)), dtype=torch.float32, requires_grad=True)
S = (A + A.t()) / 2
R = A.t() - Bm
Q = Bm * A.T
Dv = A / (Bm.t().abs() + 1.0)
tot = (S * 1.0).pow(2).sum() + R.abs().sum() + Q.sum() + Dv.sum() + (A.T @ Bm).trace()
tot.backward()
print("tot", tot.item())
print("dA", A.grad.sum().item(), A.grad[0, :4])
print("dB", Bm.grad.sum().item(), Bm.grad[:4, 0])
big = torch.tensor(rng.normal(size=(1000, 1000)), dtype=torch.float64, requires_grad=True)
z = (torch.exp(-big ** 2) * torch.sin(big.T) + torch.tanh(big) / (1 + big.T ** 2)).sum()
z.backward()
print("big z", z.item(), big.grad.sum().item(), big.grad[0, :3])
big32 = big.detach().float().requires_grad_()
z32 = (torch.log1p(big32.exp()) - big32.sigmoid() * big32.t()).mean()
z32.backward()
print("big32", z32.item(), big32.grad.sum().item())
