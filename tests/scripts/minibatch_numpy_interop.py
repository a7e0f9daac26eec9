"""Linear regression with mini-batches, numpy interop, hooks, Parameter, decorators, early stopping.

Covers: nn.Parameter, register_hook (observing and rewriting grads), @torch.no_grad() as a
decorator, indexing with a tensor of indices, numpy scalars mixed with tensors, dtype promotion
with float64 data, from_numpy memory sharing vs tensor() copies, retain_grad, duplicate-index
gradient accumulation, boolean masks.
"""
import numpy as np
import torch
from torch.nn import Parameter

rng = np.random.default_rng(13)
N, D = 120, 3
X_np = rng.normal(size=(N, D))                         # float64
true_w = np.array([1.5, -2.0, 0.5])
y_np = X_np @ true_w + 0.3 + rng.normal(scale=0.1, size=N)

X = torch.from_numpy(X_np).float()
y = torch.tensor(y_np, dtype=torch.float32).view(-1, 1)
w = Parameter(torch.zeros(D, 1))
b = Parameter(torch.zeros(1))
print(w, b.requires_grad, isinstance(w, torch.Tensor))

grad_log = []
w.register_hook(lambda g: grad_log.append(g.norm().item()))
b.register_hook(lambda g: g * 0.5)                   # halve the bias gradient

@torch.no_grad()
def evaluate():
    return ((X @ w + b - y) ** 2).mean().item()

lrs = np.logspace(-1, -2, 5)                           # numpy float64 scalars
bs = 32
best, patience = float('inf'), 0
for epoch in range(5):
    perm = rng.permutation(N)
    lr = lrs[epoch]
    for i in range(0, N, bs):
        idx = torch.from_numpy(perm[i:i + bs])
        xb, yb = X[idx], y[idx]
        loss = ((xb @ w + b - yb) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
        w.grad.zero_()
        b.grad.zero_()
    val = evaluate()
    print(f"epoch {epoch} lr={lr:.4f} mse={val:.6f} w={w.view(-1).tolist()}")
    if val < best - 1e-4:
        best, patience = val, 0
    else:
        patience += 1
print("hook calls", len(grad_log), "last grad norm", round(grad_log[-1], 6))
print("learned", w.detach().numpy().ravel(), b.item())

# numpy scalars and float64 data mixing with float32 parameters
s = np.float64(0.5) * w
print("np.float64 * param:", type(s).__name__, s.dtype, s.requires_grad)
s2 = w * np.float32(2.0)
print(s2.dtype, s2.grad_fn.name())
Xd = torch.from_numpy(X_np)
mixed = Xd @ w.double()
print("mixed", mixed.dtype)
promo = Xd[:, :1] * w[0]
print("promoted", promo.dtype, promo.grad_fn.name())
promo.sum().backward()
print("grad dtype stays", w.grad.dtype, w.grad.view(-1))

# memory sharing
a = np.ones(3)
t = torch.from_numpy(a)
a[0] = 5
t[1] = 7
print(t, a)
u = torch.tensor(a)
a[2] = -1
print(u, torch.as_tensor(a))

# retain_grad on an intermediate, hooks on it
w.grad = None
h = X @ w
h.retain_grad()
h.register_hook(lambda g: print("hook on h: grad shape", tuple(g.shape), "sum", round(g.sum().item(), 5)))
out = (h ** 2 + b).sum()
out.backward()
print("h.grad[:3]", h.grad[:3].view(-1))
print("h.is_leaf", h.is_leaf, "w.is_leaf", w.is_leaf)
# duplicate indices accumulate in the gradient
w.grad = None
idx = torch.tensor([0, 0, 2, 0])
w.view(-1)[idx].sum().backward()
print("dup index grad", w.grad.view(-1))
# integer/boolean reductions
mask = X[:, 0] > 0
print(mask.sum(), mask.sum().dtype, mask.float().mean(), X[mask].shape, int(mask.sum()) + 1)
