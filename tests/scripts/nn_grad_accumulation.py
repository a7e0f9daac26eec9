"""Gradient accumulation over micro-batches (loss / accumulation_steps, optimizer.step every
k micro-batches), zero_grad(set_to_none=False) vs None, gradient clipping by value and by norm
before the step, and a check that accumulated gradients equal the full-batch gradient."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(40)
X = torch.tensor(rng.standard_normal((32, 4)).astype(np.float32))
Y = torch.tensor(rng.integers(0, 2, 32))
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(rng.uniform(-0.5, 0.5, size=tuple(p.shape)), dtype=torch.float32))
loss_fn = nn.CrossEntropyLoss()

full = loss_fn(model(X), Y)
full.backward()
full_grads = [p.grad.clone() for p in model.parameters()]
model.zero_grad(set_to_none=False)
print("after zero_grad(set_to_none=False):", [p.grad.abs().sum().item() for p in model.parameters()])
for i in range(4):
    (loss_fn(model(X[i * 8:(i + 1) * 8]), Y[i * 8:(i + 1) * 8]) / 4).backward()
print("accumulated == full batch:",
      all(torch.allclose(p.grad, g, atol=1e-6) for p, g in zip(model.parameters(), full_grads)))
model.zero_grad()
print("after zero_grad():", [p.grad for p in model.parameters()])

opt = torch.optim.SGD(model.parameters(), lr=0.5)
accum = 4
for step in range(24):
    i = step % 4
    loss = loss_fn(model(X[i * 8:(i + 1) * 8]), Y[i * 8:(i + 1) * 8]) / accum
    loss.backward()
    if (step + 1) % accum == 0:
        norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
        nn.utils.clip_grad_value_(model.parameters(), clip_value=0.2)
        largest = max(p.grad.abs().max().item() for p in model.parameters())
        opt.step()
        opt.zero_grad()
        with torch.no_grad():
            full = loss_fn(model(X), Y).item()
        print(f"update {(step + 1) // accum}: pre-clip norm {norm.item():.6f} "
              f"max |grad| {largest:.6f} full loss {full:.6f}")
vec = nn.utils.parameters_to_vector(model.parameters())
print("parameter vector:", vec.shape, round(vec.norm().item(), 5))
