"""Tabular data through a custom Dataset returning dict samples (categorical ids, numeric
features, a float target) and the default collate (dicts of stacked tensors, python floats
to float64), entity Embeddings concatenated with BatchNorm'd numeric features, BCEWithLogits;
a custom collate_fn as well."""
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

rng = np.random.default_rng(42)
N = 96
city = rng.integers(0, 5, N)
job = rng.integers(0, 3, N)
num = rng.standard_normal((N, 3)).astype(np.float32)
logit = 0.8 * (city == 2) - 0.6 * (job == 1) + num[:, 0] - 0.5 * num[:, 2]
label = (logit + 0.3 * rng.standard_normal(N) > 0).astype(np.float64)


class Tabular(Dataset):
    def __len__(self):
        return N

    def __getitem__(self, i):
        return {"city": int(city[i]), "job": torch.tensor(job[i]), "num": num[i],
                "y": float(label[i])}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.city = nn.Embedding(5, 3)
        self.job = nn.Embedding(3, 2)
        self.bn = nn.BatchNorm1d(3)
        self.mlp = nn.Sequential(nn.Linear(8, 12), nn.ReLU(), nn.Linear(12, 1))

    def forward(self, batch):
        h = torch.cat([self.city(batch["city"]), self.job(batch["job"]), self.bn(batch["num"])],
                      dim=1)
        return self.mlp(h).squeeze(1)


model = Model()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(rng.uniform(-0.5, 0.5, size=tuple(p.shape)), dtype=torch.float32))
loader = DataLoader(Tabular(), batch_size=32)
first = next(iter(loader))
print({k: (tuple(v.shape), str(v.dtype)) for k, v in first.items()})
opt = torch.optim.Adam(model.parameters(), lr=0.02)
crit = nn.BCEWithLogitsLoss()
for epoch in range(8):
    total = 0.0
    for batch in loader:
        opt.zero_grad()
        loss = crit(model(batch), batch["y"].float())
        loss.backward()
        opt.step()
        total += loss.item()
    print(f"epoch {epoch} mean loss {total / len(loader):.6f}")


def collate_pairs(samples):
    return torch.tensor([s["city"] for s in samples]), torch.stack([torch.from_numpy(s["num"])
                                                                    for s in samples])


cities, feats = next(iter(DataLoader(Tabular(), batch_size=5, collate_fn=collate_pairs)))
print("custom collate:", cities, feats.shape)
model.eval()
with torch.no_grad():
    probs = torch.sigmoid(model(next(iter(DataLoader(Tabular(), batch_size=4)))))
print("probabilities:", probs)
