"""A training script written the usual way, relying on torch's random stream: manual_seed,
default layer initialisation, randn/randint data, a shuffled DataLoader, dropout in training,
random_split for a validation set, and a Generator whose state is saved and restored. Every
random number comes from torch.manual_seed, so the losses depend on torch's exact stream."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset, random_split

torch.manual_seed(1234)
X = torch.randn(240, 12)
w_true = torch.randn(12, 3)
y = (X @ w_true + 0.3 * torch.randn(240, 3)).argmax(1)
print("data:", X[:2, :4], y[:10].tolist())
print("first rows sum: %.6f" % X[:5].sum().item())

train_set, val_set = random_split(TensorDataset(X, y), [200, 40])
print("val indices:", val_set.indices[:8])

model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Dropout(0.25), nn.Linear(32, 3))
emb = nn.Embedding(10, 4)
print("init:", model[0].weight[0, :4], model[3].bias, emb.weight[0])
nn.init.kaiming_normal_(model[3].weight, nonlinearity="relu")
nn.init.trunc_normal_(emb.weight, std=0.5)
print("re-init:", model[3].weight[0, :4], emb.weight[1])

opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
loader = DataLoader(train_set, batch_size=32, shuffle=True)
for epoch in range(4):
    model.train()
    total = 0.0
    for xb, yb in loader:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * len(xb)
    model.eval()
    with torch.no_grad():
        xv, yv = next(iter(DataLoader(val_set, batch_size=40)))
        acc = (model(xv).argmax(1) == yv).float().mean().item()
    print("epoch %d train loss %.5f val acc %.3f" % (epoch, total / 200, acc))

g = torch.Generator().manual_seed(7)
state = g.get_state()
a = torch.randint(0, 100, (6,), generator=g)
g.set_state(state)
b = torch.randint(0, 100, (6,), generator=g)
print("generator replay:", a.tolist(), torch.equal(a, b), "perm:", torch.randperm(8, generator=g).tolist())
print("bernoulli:", torch.bernoulli(torch.full((10,), 0.3)).tolist())
print("multinomial:", torch.multinomial(torch.tensor([0.1, 0.6, 0.3]), 5, replacement=True).tolist())
