"""Multinomial logistic regression with cross-entropy on three Gaussian-like blobs."""

import torch
import torch.nn.functional as F

n_per, n_cls, dim = 40, 3, 2
centers = torch.tensor([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
i = torch.arange(n_per * n_cls, dtype=torch.float32)
noise = torch.stack([torch.sin(i * 1.3), torch.cos(i * 0.7)], dim=1) * 0.8
labels = torch.arange(n_cls).repeat_interleave(n_per)
X = centers[labels] + noise

W = torch.zeros(dim, n_cls, requires_grad=True)
b = torch.zeros(n_cls, requires_grad=True)
lr = 0.5
history = []
for epoch in range(100):
    logits = X @ W + b
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    with torch.no_grad():
        W -= lr * W.grad
        b -= lr * b.grad
        W.grad.zero_()
        b.grad.zero_()
    history.append(loss.item())

with torch.no_grad():
    probs = F.softmax(X @ W + b, dim=1)
    pred = probs.argmax(dim=1)
    accuracy = (pred == labels).float().mean().item()
print("loss", history[-1], "accuracy", accuracy)
results = {"loss": history, "accuracy": accuracy, "W": W.detach().numpy().tolist(),
           "probs": probs[:5].numpy().tolist()}
