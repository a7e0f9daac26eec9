"""Dtype handling in models: model.double() / .float() / .to(dtype) convert parameters and
floating buffers in place (the same Parameter objects, so an optimizer built before keeps
working), integer buffers keep their dtype, float64 training for a stiff least-squares problem,
set_default_dtype, and the error for integer dtypes."""
import numpy as np
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
rng = np.random.default_rng(49)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(rng.uniform(-0.5, 0.5, size=tuple(p.shape)), dtype=torch.float32))
w_before = model[0].weight
opt = torch.optim.SGD(model.parameters(), lr=0.05)
model.double()
print("same parameter object:", model[0].weight is w_before, model[0].weight.dtype)
print("buffers:", {n: str(b.dtype) for n, b in model.named_buffers()})
X = torch.tensor(rng.standard_normal((20, 3)))
Y = X @ torch.tensor([[1e-3], [2.0], [-3.0]], dtype=torch.float64) + 1e-4
for step in range(40):
    opt.zero_grad()
    loss = ((model(X) - Y) ** 2).mean()
    loss.backward()
    opt.step()
print(f"float64 training loss {loss.item():.12f} dtype {loss.dtype}")
model.float()
print("back to float32:", [str(p.dtype) for p in model.parameters()])
with torch.no_grad():
    print("float32 loss:", ((model(X.float()) - Y.float()) ** 2).mean().item())
model.to(torch.float64)
print("to(float64):", model[1].running_var.dtype, model[1].num_batches_tracked.dtype)
try:
    model.to(torch.int32)
except TypeError as e:
    print("TypeError:", e)
torch.set_default_dtype(torch.float64)
lin = nn.Linear(2, 2)
print("default float64 layer:", lin.weight.dtype, torch.zeros(1).dtype)
torch.set_default_dtype(torch.float32)
print("restored default:", nn.Linear(2, 2).weight.dtype)
