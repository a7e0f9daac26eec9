"""A multi-task network: shared trunk, ModuleDict of task heads, ParameterList of learned
task weights (uncertainty weighting), three losses (CrossEntropy, MSE, BCEWithLogits with
pos_weight) summed, Adam; gradient norms per head."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(31)
x = torch.tensor(rng.standard_normal((48, 6)).astype(np.float32))
y_cls = torch.tensor(rng.integers(0, 3, 48))
y_reg = torch.tensor(rng.standard_normal((48, 2)).astype(np.float32))
y_bin = torch.tensor((rng.uniform(size=(48, 1)) < 0.3).astype(np.float32))


class MultiTask(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(6, 16), nn.SiLU(), nn.Linear(16, 16), nn.SiLU())
        self.heads = nn.ModuleDict({"cls": nn.Linear(16, 3), "reg": nn.Linear(16, 2),
                                    "bin": nn.Linear(16, 1)})
        self.log_vars = nn.ParameterList([nn.Parameter(torch.zeros(())) for _ in range(3)])

    def forward(self, x):
        h = self.trunk(x)
        return {k: head(h) for k, head in self.heads.items()}


model = MultiTask()
print(model)
g = np.random.default_rng(32)
with torch.no_grad():
    for name, p in model.named_parameters():
        if not name.startswith("log_vars"):
            p.copy_(torch.tensor(g.uniform(-0.4, 0.4, size=tuple(p.shape)), dtype=torch.float32))
losses = {"cls": nn.CrossEntropyLoss(), "reg": nn.MSELoss(),
          "bin": nn.BCEWithLogitsLoss(pos_weight=torch.tensor([2.0]))}
targets = {"cls": y_cls, "reg": y_reg, "bin": y_bin}
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for step in range(20):
    out = model(x)
    parts = {k: losses[k](out[k], targets[k]) for k in out}
    total = sum(torch.exp(-lv) * parts[k] + lv for lv, k in zip(model.log_vars, ["cls", "reg",
                                                                                 "bin"]))
    opt.zero_grad()
    total.backward()
    if step % 5 == 0:
        norms = {k: round(sum(p.grad.norm() ** 2 for p in h.parameters()).sqrt().item(), 5)
                 for k, h in model.heads.items()}
        print(f"step {step:2d} total {total.item():.6f}",
              {k: round(v.item(), 5) for k, v in parts.items()}, norms)
    opt.step()
print("task log-variances:", [round(lv.item(), 6) for lv in model.log_vars])
print("loss modules:", losses["bin"], losses["bin"].pos_weight)
