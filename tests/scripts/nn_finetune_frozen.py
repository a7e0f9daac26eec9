"""Fine-tuning with frozen layers: a "pretrained" backbone (its weights set from numpy),
requires_grad_(False) on the backbone, a new head, an optimizer over the trainable
parameters only (filter(lambda p: p.requires_grad, ...)), checks that frozen weights do not
move, then unfreezing the last backbone layer with add_param_group."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(18)
backbone = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU())
head = nn.Linear(16, 2)
model = nn.Sequential(backbone, head)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(rng.uniform(-0.4, 0.4, size=tuple(p.shape)), dtype=torch.float32))

for p in backbone.parameters():
    p.requires_grad_(False)
trainable = [n for n, p in model.named_parameters() if p.requires_grad]
print("trainable:", trainable)
frozen_before = backbone[0].weight.clone()
opt = torch.optim.SGD(filter(lambda p: p.requires_grad, model.parameters()), lr=0.1,
                      momentum=0.9)

x = torch.tensor(rng.standard_normal((32, 6)).astype(np.float32))
y = torch.tensor((rng.standard_normal(32) > 0).astype(np.int64))
for step in range(10):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    if step % 3 == 0:
        print(f"step {step} loss {loss.item():.6f} backbone grad {backbone[0].weight.grad}")
print("frozen weights unchanged:", torch.equal(frozen_before, backbone[0].weight))

backbone[2].requires_grad_(True)
opt.add_param_group({"params": backbone[2].parameters(), "lr": 0.01})
print("groups:", [len(g["params"]) for g in opt.param_groups],
      [g["lr"] for g in opt.param_groups])
before = backbone[2].weight.clone()
for step in range(5):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print(f"after unfreezing loss {loss.item():.6f} moved {(backbone[2].weight - before).abs().max().item():.6f}")
print("first layer still frozen:", torch.equal(frozen_before, backbone[0].weight))
