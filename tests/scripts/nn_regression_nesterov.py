"""Polynomial regression with nn.Linear on engineered features, MSELoss / L1Loss /
SmoothL1Loss / HuberLoss, SGD with Nesterov momentum and a StepLR schedule, float64 data;
compares the fit with the least-squares solution."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(23)
x = np.linspace(-1, 1, 50)
y = 0.5 - 1.2 * x + 2.0 * x ** 2 + 0.7 * x ** 3 + 0.05 * rng.standard_normal(50)
X = torch.tensor(np.stack([x, x ** 2, x ** 3], axis=1))
Y = torch.tensor(y).unsqueeze(1)

model = nn.Linear(3, 1).double()
with torch.no_grad():
    model.weight.zero_()
    model.bias.zero_()
opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9, nesterov=True)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=40, gamma=0.5)
criterion = nn.MSELoss()
for epoch in range(120):
    opt.zero_grad()
    loss = criterion(model(X), Y)
    loss.backward()
    opt.step()
    sched.step()
    if epoch % 20 == 0 or epoch == 119:
        print(f"epoch {epoch:3d} mse {loss.item():.8f} lr {sched.get_last_lr()[0]:.4f}")
print("weights:", model.weight.data, "bias:", model.bias.data)
A = np.concatenate([np.ones((50, 1)), X.numpy()], axis=1)
coef = np.linalg.lstsq(A, y, rcond=None)[0]
print("least squares:", np.round(coef, 5))
with torch.no_grad():
    pred = model(X)
    for name, fn in [("L1", nn.L1Loss()), ("SmoothL1", nn.SmoothL1Loss(beta=0.1)),
                     ("Huber", nn.HuberLoss(delta=0.05)), ("MSE-sum", nn.MSELoss(reduction="sum"))]:
        print(f"{name:8s} {fn(pred, Y).item():.8f}")
