"""Residual network for 1-d signals: residual blocks with Conv1d, GroupNorm, LayerNorm and
identity / 1x1 projection shortcuts, AdaptiveAvgPool1d, label smoothing in CrossEntropyLoss,
SGD + CosineAnnealingLR, train/eval accuracy."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(33)
L = 32
t = np.linspace(0, 1, L)
freqs = [2.0, 5.0, 9.0]
X, Y = [], []
for i in range(90):
    k = i % 3
    X.append(np.sin(2 * np.pi * freqs[k] * t + rng.uniform(0, 6)) + 0.3 * rng.standard_normal(L))
    Y.append(k)
X = torch.tensor(np.array(X, dtype=np.float32)).unsqueeze(1)
Y = torch.tensor(Y)


class Block(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv1d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.gn1 = nn.GroupNorm(2, cout)
        self.conv2 = nn.Conv1d(cout, cout, 3, padding=1, bias=False)
        self.gn2 = nn.GroupNorm(2, cout)
        self.shortcut = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv1d(cin, cout, 1, stride=stride, bias=False),
                                          nn.GroupNorm(2, cout))

    def forward(self, x):
        out = F.relu(self.gn1(self.conv1(x)))
        out = self.gn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet1d(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv1d(1, 8, 5, padding=2)
        self.layers = nn.Sequential(Block(8, 8), Block(8, 16, stride=2), Block(16, 16))
        self.pool = nn.AdaptiveAvgPool1d(1)
        self.norm = nn.LayerNorm(16)
        self.fc = nn.Linear(16, 3)

    def forward(self, x):
        x = self.pool(self.layers(F.relu(self.stem(x)))).flatten(1)
        return self.fc(self.norm(x))


model = ResNet1d()
print(model)
g = np.random.default_rng(34)
with torch.no_grad():
    for name, p in model.named_parameters():
        if p.dim() > 1:
            fan_in = p[0].numel()
            p.copy_(torch.tensor(g.normal(scale=np.sqrt(2 / fan_in), size=tuple(p.shape)),
                                 dtype=torch.float32))
        elif name.endswith("bias") and ("stem" in name or "fc" in name):
            p.zero_()
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=8)
for epoch in range(8):
    model.train()
    for i in range(0, 90, 30):
        opt.zero_grad()
        loss = criterion(model(X[i:i + 30]), Y[i:i + 30])
        loss.backward()
        opt.step()
    sched.step()
    model.eval()
    with torch.no_grad():
        acc = (model(X).argmax(1) == Y).float().mean().item()
    print(f"epoch {epoch} loss {loss.item():.6f} acc {acc:.4f} lr {sched.get_last_lr()[0]:.6f}")
