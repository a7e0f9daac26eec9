"""A two-layer network trained with hand-written SGD under no_grad (the classic pattern)."""
import math

import torch

N, D_in, H, D_out = 64, 10, 32, 3
# deterministic data and initialisation (random streams differ between libraries)
x = torch.sin(torch.arange(N * D_in, dtype=torch.float32).reshape(N, D_in) * 0.37)
y = torch.cos(torch.arange(N * D_out, dtype=torch.float32).reshape(N, D_out) * 0.11)
w1 = (torch.cos(torch.arange(D_in * H, dtype=torch.float32).reshape(D_in, H)) / math.sqrt(D_in))
w2 = (torch.sin(torch.arange(H * D_out, dtype=torch.float32).reshape(H, D_out)) / math.sqrt(H))
b1 = torch.zeros(H)
w1.requires_grad_()
w2.requires_grad_()
b1.requires_grad_(True)

learning_rate = 1e-2
losses = []
for t in range(200):
    h = (x.mm(w1) + b1).clamp(min=0)
    y_pred = h @ w2
    loss = (y_pred - y).pow(2).mean()
    losses.append(loss.item())
    loss.backward()
    with torch.no_grad():
        w1 -= learning_rate * w1.grad
        w2 -= learning_rate * w2.grad
        b1 -= learning_rate * b1.grad
        w1.grad.zero_()
        w2.grad.zero_()
        b1.grad = None
    if t % 50 == 0:
        print(t, loss.item())

results = {"losses": losses, "w1": w1.detach().numpy().tolist(), "w2": w2.detach().numpy().tolist()}
print("final loss", losses[-1])
