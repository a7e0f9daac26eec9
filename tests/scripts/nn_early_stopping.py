"""Early stopping: train/validation split with random_split over a fixed generator, a
validation metric driving ReduceLROnPlateau, the best model kept with copy.deepcopy of the
state_dict, patience-based stopping, restoring the best weights at the end."""
import copy

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Subset, TensorDataset

rng = np.random.default_rng(41)
X = rng.standard_normal((120, 3)).astype(np.float32)
Y = (np.sin(X[:, :1] * 2) + X[:, 1:2] ** 2 + 0.1 * rng.standard_normal((120, 1))).astype(np.float32)
ds = TensorDataset(torch.tensor(X), torch.tensor(Y))
perm = rng.permutation(120).tolist()
train_ds, val_ds = Subset(ds, perm[:90]), Subset(ds, perm[90:])
train_loader = DataLoader(train_ds, batch_size=30)
val_loader = DataLoader(val_ds, batch_size=15)

model = nn.Sequential(nn.Linear(3, 24), nn.ELU(), nn.Linear(24, 1))
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(rng.uniform(-0.5, 0.5, size=tuple(p.shape)), dtype=torch.float32))
opt = torch.optim.Adam(model.parameters(), lr=0.03)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1)
loss_fn = nn.MSELoss()
best, best_state, bad, patience = float("inf"), None, 0, 4
for epoch in range(40):
    model.train()
    for xb, yb in train_loader:
        opt.zero_grad()
        loss_fn(model(xb), yb).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        val = sum(loss_fn(model(xb), yb).item() * len(xb) for xb, yb in val_loader) / len(val_ds)
    sched.step(val)
    improved = val < best - 1e-4
    if improved:
        best, best_state, bad = val, copy.deepcopy(model.state_dict()), 0
    else:
        bad += 1
    print(f"epoch {epoch:2d} val {val:.6f} lr {opt.param_groups[0]['lr']:.5f} "
          f"{'*' if improved else ''}")
    if bad >= patience:
        print("early stop at epoch", epoch)
        break
model.load_state_dict(best_state)
with torch.no_grad():
    val = sum(loss_fn(model(xb), yb).item() * len(xb) for xb, yb in val_loader) / len(val_ds)
print(f"restored best val {val:.6f} (recorded {best:.6f})")
print("best state is a copy:", best_state["0.weight"] is not model[0].weight)
