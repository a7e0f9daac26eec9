"""1-D convolutional regressor written with F.pad + Tensor.unfold, trained with momentum SGD
and gradient clipping by global norm (torch.nn.utils.clip_grad_norm_ and by hand).

Covers: F.pad (constant / replicate), unfold(dim, size, step), einsum / matmul over windows,
relu, max over dim with (values, indices), mean with dim/keepdim, nn.Parameter,
torch.nn.utils.clip_grad_norm_ (return value, max_norm), momentum buffers under no_grad,
p.grad = None, stack/cat, printing tensors with grad_fn.
"""
import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(11)
B, L, K, Cout = 4, 12, 3, 5
x_np = rng.normal(size=(B, L)).astype(np.float32)
target_np = (np.convolve(x_np[0], [0.5, -1.0, 0.5], mode="same") ** 2).astype(np.float32)
x = torch.from_numpy(x_np)
y = torch.from_numpy(np.stack([np.convolve(r, [0.5, -1.0, 0.5], mode="same") for r in x_np]))
y = y.abs().amax(dim=1)  # target: largest absolute response of a fixed filter

W = torch.nn.Parameter(torch.tensor(rng.normal(size=(Cout, K)) * 0.5, dtype=torch.float32))
b = torch.nn.Parameter(torch.zeros(Cout))
v = torch.nn.Parameter(torch.tensor(rng.normal(size=(Cout,)) * 0.3, dtype=torch.float32))
params = [W, b, v]
print(W)
print(type(W).__name__, W.requires_grad, W.is_leaf)

xp = F.pad(x, (1, 1))
print("padded", xp.shape, xp[0, :3])
win = xp.unfold(1, K, 1)
print("windows", win.shape, win.dtype, win.is_contiguous())
feat = torch.einsum("blk,ck->bcl", win, W) + b[:, None]
print("feat", feat.shape, feat.grad_fn.name())
h = F.relu(feat)
pooled, where_ = h.max(dim=2)
print("argmax positions", where_)
print(pooled.dtype, where_.dtype)
pred = pooled @ v
print(pred)

# replicate padding as a variant
xr = F.pad(x.unsqueeze(1), (2, 2), mode="replicate").squeeze(1)
print("replicate", xr[1, :4], xr[1, -4:])

momentum = [torch.zeros_like(p) for p in params]
lr, mu, max_norm = 0.05, 0.9, 1.0
for step in range(40):
    win = F.pad(x, (1, 1)).unfold(1, K, 1)
    h = F.relu(win @ W.t() + b)            # (B, L, Cout)
    pooled = h.max(dim=1).values
    pred = pooled @ v
    loss = F.mse_loss(pred, y)
    for p in params:
        p.grad = None
    loss.backward()
    total = torch.nn.utils.clip_grad_norm_(params, max_norm)
    if step % 10 == 0:
        after = torch.sqrt(sum((p.grad ** 2).sum() for p in params))
        print(f"step {step:2d} loss {loss.item():.5f} norm {total.item():.5f} clipped {after.item():.5f}")
    with torch.no_grad():
        for p, m in zip(params, momentum):
            m.mul_(mu).add_(p.grad)
            p.sub_(lr * m)
print("target dtype", y.dtype)
print("final loss", F.mse_loss(F.relu(F.pad(x, (1, 1)).unfold(1, K, 1) @ W.t() + b).max(dim=1).values @ v, y))

# clipping by hand must agree with clip_grad_norm_
pred = F.relu(F.pad(x, (1, 1)).unfold(1, K, 1) @ W.t() + b).max(dim=1).values @ v
loss = (pred - y.float()).pow(2).sum()
for p in params:
    p.grad = None
loss.backward()
grads = [p.grad.clone() for p in params]
norm = torch.cat([g.flatten() for g in grads]).norm()
coef = torch.clamp(0.5 / (norm + 1e-6), max=1.0)
manual = [g * coef for g in grads]
ret = torch.nn.utils.clip_grad_norm_(params, 0.5)
print("norm", norm, ret)
print(all(torch.allclose(a, p.grad) for a, p in zip(manual, params)))
# norm type inf and a single tensor
ret = torch.nn.utils.clip_grad_norm_(W, max_norm=0.1, norm_type=float("inf"))
print("inf-norm", ret, W.grad.abs().max())
# clip_grad_value_
torch.nn.utils.clip_grad_value_(params, clip_value=0.01)
print(v.grad)
print(torch.stack([p.grad.abs().max() for p in params]))
