"""Logistic regression from scratch with manual gradient descent (tutorial style).

Covers: from_numpy, sigmoid/log loss, `w -= lr * w.grad` under no_grad, grad.zero_(),
comparison/bool/long conversions, F.binary_cross_entropy and its grad_fn repr.
"""
import numpy as np
import torch

rng = np.random.default_rng(0)
n = 200
X_np = np.concatenate([rng.normal(-1.0, 1.0, size=(n // 2, 2)),
                       rng.normal(1.5, 1.0, size=(n // 2, 2))]).astype(np.float32)
y_np = np.concatenate([np.zeros(n // 2), np.ones(n // 2)]).astype(np.float32)

X = torch.from_numpy(X_np)
y = torch.from_numpy(y_np).unsqueeze(1)
print("X:", X.shape, X.dtype, "y:", y.shape)

w = torch.zeros(2, 1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
lr = 0.1

def forward(x):
    return torch.sigmoid(x @ w + b)

for epoch in range(101):
    y_pred = forward(X)
    loss = -(y * torch.log(y_pred) + (1 - y) * torch.log(1 - y_pred)).mean()
    loss.backward()
    with torch.no_grad():
        w -= lr * w.grad
        b -= lr * b.grad
        w.grad.zero_()
        b.grad.zero_()
    if epoch % 20 == 0:
        with torch.no_grad():
            acc = ((forward(X) > 0.5).float() == y).float().mean()
        print(f"epoch {epoch:3d}  loss {loss.item():.6f}  acc {acc.item():.3f}")

print("w =", w)
print("b =", b)
print(loss)
# compare against builtin BCE
y_pred = forward(X)
bce = torch.nn.functional.binary_cross_entropy(y_pred, y)
print("builtin bce", bce, bce.grad_fn)
pred_labels = (y_pred >= 0.5).long().squeeze()
print("predicted positives:", pred_labels.sum().item(), pred_labels.dtype)
print("confusion:", [[int(((pred_labels == i) & (y.squeeze().long() == j)).sum()) for j in range(2)] for i in range(2)])
