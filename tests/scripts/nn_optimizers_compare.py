"""The same small regression trained with every torch.optim optimizer (SGD variants, Adam,
AdamW with amsgrad, RMSprop centered, Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop,
LBFGS), printing the final loss, a parameter checksum and the state kept per parameter."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(39)
X = torch.tensor(rng.standard_normal((64, 5)).astype(np.float32))
w_true = torch.tensor(rng.standard_normal((5, 1)).astype(np.float32))
Y = torch.tanh(X @ w_true) + 0.05 * torch.tensor(rng.standard_normal((64, 1)).astype(np.float32))
init = [rng.uniform(-0.5, 0.5, size=s) for s in [(8, 5), (8,), (1, 8), (1,)]]


def make_model():
    m = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))
    with torch.no_grad():
        for p, a in zip(m.parameters(), init):
            p.copy_(torch.tensor(a, dtype=torch.float32))
    return m


configs = [
    ("SGD", lambda p: torch.optim.SGD(p, lr=0.1)),
    ("SGD momentum", lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.1)),
    ("SGD nesterov wd", lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True,
                                                  weight_decay=1e-3)),
    ("Adam", lambda p: torch.optim.Adam(p, lr=0.01)),
    ("Adam maximize(-loss)", None),
    ("AdamW amsgrad", lambda p: torch.optim.AdamW(p, lr=0.01, amsgrad=True)),
    ("RMSprop centered", lambda p: torch.optim.RMSprop(p, lr=0.005, centered=True, momentum=0.5)),
    ("Adagrad", lambda p: torch.optim.Adagrad(p, lr=0.1, lr_decay=1e-3)),
    ("Adadelta", lambda p: torch.optim.Adadelta(p, lr=1.0)),
    ("Adamax", lambda p: torch.optim.Adamax(p, lr=0.02)),
    ("NAdam", lambda p: torch.optim.NAdam(p, lr=0.01)),
    ("RAdam", lambda p: torch.optim.RAdam(p, lr=0.01)),
    ("ASGD", lambda p: torch.optim.ASGD(p, lr=0.05, t0=10)),
    ("Rprop", lambda p: torch.optim.Rprop(p, lr=0.01)),
]
loss_fn = nn.MSELoss()
for name, make in configs:
    model = make_model()
    if make is None:
        opt = torch.optim.Adam(model.parameters(), lr=0.01, maximize=True)
        sign = -1.0
    else:
        opt = make(model.parameters())
        sign = 1.0
    for step in range(30):
        opt.zero_grad()
        loss = loss_fn(model(X), Y)
        (sign * loss).backward()
        opt.step()
    checksum = sum(p.sum().item() for p in model.parameters())
    state_keys = sorted(opt.state[model[0].weight].keys())
    print(f"{name:22s} loss {loss.item():.6f} checksum {checksum:.6f} state {state_keys}")

model = make_model()
opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=10, line_search_fn="strong_wolfe")
for step in range(3):
    def closure():
        opt.zero_grad()
        loss = loss_fn(model(X), Y)
        loss.backward()
        return loss
    loss = opt.step(closure)
print(f"{'LBFGS':22s} loss {loss_fn(model(X), Y).item():.6f} first-closure losses done")
