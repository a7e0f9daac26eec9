"""Two-layer MLP on synthetic 3-class spiral data, manual SGD, cross-entropy.

Covers: bincount, F.relu / cross_entropy (reduction, label_smoothing) / one_hot / log_softmax /
softmax, `p.grad = None`, argmax accuracy. A torch.randn init is made only to check its
properties (shape, flags); no random value is printed.
"""
import math
import numpy as np
import torch
import torch.nn.functional as F

torch.manual_seed(0)
rng = np.random.default_rng(1)
N, D, K, H = 60, 2, 3, 16
X_np = np.zeros((N * K, D), dtype=np.float32)
y_np = np.zeros(N * K, dtype=np.int64)
for j in range(K):
    ix = range(N * j, N * (j + 1))
    r = np.linspace(0.0, 1, N)
    t = np.linspace(j * 4, (j + 1) * 4, N) + rng.normal(size=N) * 0.2
    X_np[ix] = np.c_[r * np.sin(t), r * np.cos(t)]
    y_np[ix] = j
X = torch.tensor(X_np)
y = torch.tensor(y_np)
print(X.shape, y.shape, y.dtype, torch.bincount(y))

# random init path: just check it runs and has the right properties
W1r = (torch.randn(D, H) * 0.1).requires_grad_()
print("random init:", W1r.shape, W1r.requires_grad, W1r.is_leaf, W1r.grad_fn)

# deterministic init for the comparison
W1 = torch.tensor(rng.normal(size=(D, H)) * 0.5, dtype=torch.float32, requires_grad=True)
b1 = torch.zeros(H, requires_grad=True)
W2 = torch.tensor(rng.normal(size=(H, K)) * 0.5, dtype=torch.float32, requires_grad=True)
b2 = torch.zeros(K, requires_grad=True)
params = [W1, b1, W2, b2]

lr = 1.0
for it in range(200):
    hidden = F.relu(X @ W1 + b1)
    scores = hidden @ W2 + b2
    loss = F.cross_entropy(scores, y)
    reg = 1e-3 * sum((p ** 2).sum() for p in (W1, W2))
    total = loss + reg
    for p in params:
        p.grad = None
    total.backward()
    with torch.no_grad():
        for p in params:
            p -= lr * p.grad
    if it % 40 == 0:
        pred = scores.argmax(dim=1)
        acc = (pred == y).float().mean().item()
        print(f"iter {it}: loss={loss.item():.5f} reg={reg.item():.5f} acc={acc:.3f}")

# one-hot / manual CE should match builtin
logits = (F.relu(X @ W1 + b1) @ W2 + b2)
onehot = F.one_hot(y, num_classes=K).float()
manual = -(onehot * F.log_softmax(logits, dim=1)).sum(dim=1).mean()
builtin = F.cross_entropy(logits, y)
print("manual CE", manual.item(), "builtin", builtin.item(), torch.allclose(manual, builtin))
print("onehot dtype", F.one_hot(y).dtype, F.one_hot(y).shape)
print("grad norms:", [round(p.grad.norm().item(), 5) for p in params])
print("CE per-sample first 5:", F.cross_entropy(logits, y, reduction="none")[:5])
print("label smoothing:", F.cross_entropy(logits, y, label_smoothing=0.1).item())
probs = F.softmax(logits, dim=-1)
print("probs row sums", probs.sum(1)[:3], probs.max(dim=1).values[:3])
