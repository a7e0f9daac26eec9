"""Vanilla RNN and GRU cells unrolled in a python loop; outputs stacked; BPTT with grad clipping.

Covers: long chains of small matmuls, torch.stack / cat / unbind over time, mse_loss,
hand-written clip-by-total-norm on .grad in place, autograd.grad for a parameter list.
"""
import numpy as np
import torch

rng = np.random.default_rng(4)
T, B, I, H = 10, 3, 4, 6
seq = torch.tensor(rng.normal(size=(T, B, I)), dtype=torch.float32)
target = torch.tensor(rng.normal(size=(B, 1)), dtype=torch.float32)

def p(*shape, scale=0.3):
    return torch.tensor(rng.normal(size=shape) * scale, dtype=torch.float32).requires_grad_()

# vanilla RNN
Wxh, Whh, bh = p(I, H), p(H, H), torch.zeros(H, requires_grad=True)
Why, by = p(H, 1), torch.zeros(1, requires_grad=True)
h = torch.zeros(B, H)
hs = []
for t in range(T):
    h = torch.tanh(seq[t] @ Wxh + h @ Whh + bh)
    hs.append(h)
H_all = torch.stack(hs)          # (T, B, H)
print("stacked", H_all.shape, H_all.grad_fn.name())
pred = H_all[-1] @ Why + by
loss = torch.nn.functional.mse_loss(pred, target)
loss.backward()
print("rnn loss", round(loss.item(), 6))
for name, q in [("Wxh", Wxh), ("Whh", Whh), ("bh", bh), ("Why", Why), ("by", by)]:
    print(f"  {name}.grad norm = {q.grad.norm():.6f}")

# gradient clipping by norm, computed by hand
params = [Wxh, Whh, bh, Why, by]
max_norm = 0.5
total_norm = torch.sqrt(sum(q.grad.detach().pow(2).sum() for q in params))
clip_coef = max_norm / (total_norm + 1e-6)
print("total norm", total_norm, "clip coef", clip_coef)
if clip_coef < 1:
    for q in params:
        q.grad.detach().mul_(clip_coef)
print("after clip", torch.norm(torch.stack([q.grad.norm() for q in params])))

# GRU
Wz, Uz, bz = p(I, H), p(H, H), torch.zeros(H, requires_grad=True)
Wr, Ur, br = p(I, H), p(H, H), torch.zeros(H, requires_grad=True)
Wn, Un, bn = p(I, H), p(H, H), torch.zeros(H, requires_grad=True)
gru_params = [Wz, Uz, bz, Wr, Ur, br, Wn, Un, bn]

def gru_step(x, h):
    z = torch.sigmoid(x @ Wz + h @ Uz + bz)
    r = torch.sigmoid(x @ Wr + h @ Ur + br)
    n = torch.tanh(x @ Wn + (r * h) @ Un + bn)
    return (1 - z) * n + z * h

for epoch in range(5):
    h = torch.zeros(B, H)
    outs = []
    for x_t in seq.unbind(0):
        h = gru_step(x_t, h)
        outs.append(h.unsqueeze(0))
    out = torch.cat(outs, dim=0)
    loss = (out.mean(dim=(0, 2)) - target.squeeze(1)).pow(2).sum()
    grads = torch.autograd.grad(loss, gru_params)
    with torch.no_grad():
        for q, g in zip(gru_params, grads):
            q.sub_(0.5 * g)
    print(f"gru epoch {epoch} loss {loss.item():.6f}")
print("final h", h)
print("out[:, 0, 0]", out[:, 0, 0])
