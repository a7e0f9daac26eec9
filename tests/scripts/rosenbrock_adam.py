"""Rosenbrock and Himmelblau minimisation with hand-rolled Adam, then an optimiser object.

Covers: in-place optimiser arithmetic under no_grad (mul_/add_(alpha=)/addcmul_/addcdiv_/lerp_/
sqrt/add_), `p.grad.zero_()`, tuple-unpacking a tensor, tolist, autograd.grad at a minimum.
Edited from the audit version: torch.optim is not part of tapegrad, so the final block uses an
`Adam` class that is torch.optim.Adam's update (its single-tensor CPU code path, including
grad.conj()) written out; under real torch it gives the same numbers as torch.optim.Adam.
"""
import math
import torch

def rosenbrock(p, a=1.0, b=100.0):
    x, y = p[0], p[1]
    return (a - x) ** 2 + b * (y - x ** 2) ** 2

def himmelblau(p):
    x, y = p
    return (x ** 2 + y - 11) ** 2 + (x + y ** 2 - 7) ** 2

def adam(f, init, lr=1e-2, betas=(0.9, 0.999), eps=1e-8, steps=2000, log_every=500):
    p = torch.tensor(init, requires_grad=True)
    m = torch.zeros_like(p)
    v = torch.zeros_like(p)
    b1, b2 = betas
    for t in range(1, steps + 1):
        loss = f(p)
        if p.grad is not None:
            p.grad.zero_()
        loss.backward()
        with torch.no_grad():
            g = p.grad
            m.mul_(b1).add_(g, alpha=1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            m_hat = m / (1 - b1 ** t)
            v_hat = v / (1 - b2 ** t)
            p.addcdiv_(m_hat, v_hat.sqrt().add_(eps), value=-lr)
        if t % log_every == 0:
            print(f"  t={t} f={loss.item():.6e} p={p.detach().tolist()}")
    return p

print("rosenbrock:")
p = adam(rosenbrock, [-1.5, 2.0], lr=2e-2, steps=3000, log_every=1000)
print("result", p, "f", rosenbrock(p).item())
print("himmelblau:")
for start in ([0.0, 0.0], [-1.0, 3.0], [-3.0, -3.0]):
    p = adam(himmelblau, start, lr=5e-2, steps=1000, log_every=1000)
    print("  min at", [round(t, 4) for t in p.tolist()])

# gradient at the known minimum
p = torch.tensor([1.0, 1.0], requires_grad=True)
g, = torch.autograd.grad(rosenbrock(p), p)
print("grad at (1,1):", g)
p = torch.tensor([3.0, 2.0], requires_grad=True)
print("himmelblau at (3,2):", himmelblau(p), torch.autograd.grad(himmelblau(p), p)[0])

# the optimiser-object style most people use; torch.optim is not part of tapegrad, so this is
# torch.optim.Adam's update (its single-tensor CPU code path) written out as a small class
class Adam:
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        self.params = list(params)
        self.lr, self.betas, self.eps = lr, betas, eps
        self.state = [{"step": 0, "exp_avg": torch.zeros_like(q), "exp_avg_sq": torch.zeros_like(q)}
                      for q in self.params]

    def zero_grad(self):
        for q in self.params:
            q.grad = None

    @torch.no_grad()
    def step(self):
        beta1, beta2 = self.betas
        for q, st in zip(self.params, self.state):
            if q.grad is None:
                continue
            st["step"] += 1
            grad, exp_avg, exp_avg_sq = q.grad, st["exp_avg"], st["exp_avg_sq"]
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad.conj(), value=1 - beta2)
            step_size = self.lr / (1 - beta1 ** st["step"])
            bias_correction2_sqrt = math.sqrt(1 - beta2 ** st["step"])
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(self.eps)
            q.addcdiv_(exp_avg, denom, value=-step_size)


p = torch.tensor([-1.5, 2.0], requires_grad=True)
opt = Adam([p], lr=2e-2)
for t in range(3000):
    opt.zero_grad()
    loss = rosenbrock(p)
    loss.backward()
    opt.step()
print("Adam class result", p.detach(), loss.item())
