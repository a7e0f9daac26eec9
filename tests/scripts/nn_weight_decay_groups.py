"""Weight-decay parameter groups built from named_parameters (no decay for biases and norm
weights, as in transformer training scripts), AdamW, per-group learning rates, the
optimizer's printed param groups and its state_dict structure."""
import numpy as np
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.norm = nn.LayerNorm(16)
        self.fc2 = nn.Linear(16, 4)
        self.emb = nn.Embedding(10, 8)

    def forward(self, idx, x):
        h = x + self.emb(idx)
        return self.fc2(torch.relu(self.norm(self.fc1(h))))


model = Block()
g = np.random.default_rng(19)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(g.uniform(-0.3, 0.3, size=tuple(p.shape)), dtype=torch.float32))

decay, no_decay = [], []
for name, p in model.named_parameters():
    (no_decay if name.endswith("bias") or "norm" in name else decay).append(name)
params = dict(model.named_parameters())
opt = torch.optim.AdamW([
    {"params": [params[n] for n in decay], "weight_decay": 0.1},
    {"params": [params[n] for n in no_decay], "weight_decay": 0.0, "lr": 5e-3},
], lr=1e-2, betas=(0.9, 0.95))
print("decay:", decay)
print("no decay:", no_decay)
print(opt)

rng = np.random.default_rng(20)
idx = torch.tensor(rng.integers(0, 10, 24))
x = torch.tensor(rng.standard_normal((24, 8)).astype(np.float32))
target = torch.tensor(rng.standard_normal((24, 4)).astype(np.float32))
for step in range(12):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(idx, x), target)
    loss.backward()
    opt.step()
    if step % 3 == 0 or step == 11:
        print(f"step {step:2d} loss {loss.item():.6f} |w| {model.fc1.weight.norm().item():.6f}")
sd = opt.state_dict()
print("state entries:", len(sd["state"]), "group params:", [g["params"] for g in sd["param_groups"]])
print("state keys:", sorted(sd["state"][0]), "step:", sd["state"][0]["step"].item())
