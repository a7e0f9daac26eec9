"""Scientific curve fit with LBFGS and line_search_fn="strong_wolfe": a damped oscillation's
amplitude, decay, frequency and phase as an nn.Module's parameters, MSE loss, closure-based
steps; also plain LBFGS without line search on a quadratic."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(16)
t = np.linspace(0, 4, 60)
y = 1.7 * np.exp(-0.6 * t) * np.cos(3.1 * t + 0.4) + 0.02 * rng.standard_normal(t.size)
t_t, y_t = torch.tensor(t), torch.tensor(y)


class Damped(nn.Module):
    def __init__(self):
        super().__init__()
        self.amp = nn.Parameter(torch.tensor(1.0, dtype=torch.float64))
        self.decay = nn.Parameter(torch.tensor(0.3, dtype=torch.float64))
        self.freq = nn.Parameter(torch.tensor(2.8, dtype=torch.float64))
        self.phase = nn.Parameter(torch.tensor(0.0, dtype=torch.float64))

    def forward(self, t):
        return self.amp * torch.exp(-self.decay * t) * torch.cos(self.freq * t + self.phase)


model = Damped()
opt = torch.optim.LBFGS(model.parameters(), lr=1, max_iter=20, history_size=10,
                        line_search_fn="strong_wolfe")


def closure():
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(t_t), y_t)
    loss.backward()
    return loss


for step in range(4):
    loss = opt.step(closure)
    print(f"step {step} loss {loss.item():.10f} evals {opt.state[model.amp]['func_evals']} "
          f"iters {opt.state[model.amp]['n_iter']}")
print({k: round(v.item(), 6) for k, v in model.state_dict().items()})
print(f"final mse {nn.functional.mse_loss(model(t_t), y_t).item():.10f}")

w = torch.tensor([3.0, -1.0, 0.5], requires_grad=True)
A = torch.tensor([[4.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 2.0]])
b = torch.tensor([1.0, 2.0, 3.0])
quad = torch.optim.LBFGS([w], lr=0.5, max_iter=8)


def quad_closure():
    quad.zero_grad()
    f = 0.5 * w @ A @ w - b @ w
    f.backward()
    return f


for step in range(3):
    f = quad.step(quad_closure)
    print(f"quadratic step {step} f {f.item():.6f} w {w.detach()}")
print("solution:", torch.linalg.solve(A, b))
