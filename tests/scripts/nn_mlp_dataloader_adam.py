"""MLP classifier on synthetic blobs: nn.Sequential, TensorDataset + DataLoader, Adam,
CrossEntropyLoss, a train/eval loop with model.eval() + torch.no_grad() accuracy.

Parameters are initialised from a numpy generator (the same values under any library), the
data loader does not shuffle (a fixed numpy permutation per epoch goes through `sampler=`).
"""
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

rng = np.random.default_rng(0)
centers = rng.normal(size=(4, 10)) * 2.0
X_np = np.concatenate([c + rng.normal(size=(64, 10)) for c in centers]).astype(np.float32)
y_np = np.repeat(np.arange(4), 64)

model = nn.Sequential(
    nn.Linear(10, 32),
    nn.ReLU(),
    nn.Linear(32, 32),
    nn.Tanh(),
    nn.Linear(32, 4),
)
print(model)


def init_params(m, seed):
    g = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in m.named_parameters():
            bound = 1.0 / np.sqrt(p.shape[-1]) if p.dim() > 1 else 0.1
            p.copy_(torch.tensor(g.uniform(-bound, bound, size=tuple(p.shape)),
                                 dtype=torch.float32))


init_params(model, 1)
print("parameters:", sum(p.numel() for p in model.parameters()))

dataset = TensorDataset(torch.from_numpy(X_np), torch.from_numpy(y_np))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

for epoch in range(6):
    order = rng.permutation(len(dataset)).tolist()
    loader = DataLoader(dataset, batch_size=32, sampler=order)
    model.train()
    total, n = 0.0, 0
    for xb, yb in loader:
        optimizer.zero_grad()
        out = model(xb)
        loss = criterion(out, yb)
        loss.backward()
        optimizer.step()
        total += loss.item() * xb.size(0)
        n += xb.size(0)
    model.eval()
    with torch.no_grad():
        logits = model(dataset.tensors[0])
        acc = (logits.argmax(dim=1) == dataset.tensors[1]).float().mean().item()
    print(f"epoch {epoch}: train loss {total / n:.6f} accuracy {acc:.4f} batches {len(loader)}")

with torch.no_grad():
    probs = torch.softmax(model(dataset.tensors[0][:3]), dim=1)
print("probabilities:", probs)
print("state dict:", [(k, tuple(v.shape)) for k, v in model.state_dict().items()])
