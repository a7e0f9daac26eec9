"""Matrix factorisation for ratings (user/item embeddings + biases) from (user, item, rating)
index tensors, trained with full-batch SGD and L2 weight decay; per-user metrics with
scatter_add / index_add / bincount, and held-out early stopping.

Covers: index tensors into parameter rows (advanced indexing gather + its scatter backward),
repeat_interleave, (a * b).sum(1), clamp of predictions, index_add_ / scatter_add on zeros,
bincount, boolean masks, torch.randperm-free splits via numpy permutation, unique with counts,
torch.no_grad, .item(), dtype conversions long/float/bool, the sparse-ish gradient of an
embedding table (only touched rows are non-zero).
"""
import numpy as np
import torch

rng = np.random.default_rng(21)
U, I, D = 8, 10, 3
true_u = rng.normal(size=(U, D))
true_i = rng.normal(size=(I, D))
users = torch.arange(U).repeat_interleave(5)          # every user rates 5 items
items = torch.from_numpy(np.concatenate([rng.choice(I, 5, replace=False) for _ in range(U)]))
ratings = torch.tensor((true_u[users.numpy()] * true_i[items.numpy()]).sum(1) + 3.0, dtype=torch.float32)
ratings = ratings.clamp(1.0, 5.0)
print(users[:7], items.dtype, ratings[:5])
perm = torch.from_numpy(rng.permutation(len(users)))
tr, va = perm[:32], perm[32:]
print(len(tr), len(va), tr.dtype)

P = torch.tensor(rng.normal(size=(U, D)) * 0.1, dtype=torch.float32, requires_grad=True)
Q = torch.tensor(rng.normal(size=(I, D)) * 0.1, dtype=torch.float32, requires_grad=True)
bu = torch.zeros(U, requires_grad=True)
bi = torch.zeros(I, requires_grad=True)
mu = ratings[tr].mean()
print("global mean", mu)
params = [P, Q, bu, bi]


def predict(u, i):
    return mu + bu[u] + bi[i] + (P[u] * Q[i]).sum(dim=1)


pred = predict(users[tr][:3], items[tr][:3])
print(pred, pred.grad_fn)
loss = (pred - ratings[tr][:3]).pow(2).mean()
loss.backward()
touched = (Q.grad.abs().sum(1) > 0)
print("touched item rows", touched.nonzero().flatten(), touched.dtype)
print(bi.grad)
for p in params:
    p.grad = None

lr, wd = 0.5, 1e-3
best, best_state, history = float("inf"), None, []
for epoch in range(300):
    u, i, r = users[tr], items[tr], ratings[tr]
    err = predict(u, i) - r
    loss = (err ** 2).mean() + wd * (P.pow(2).sum() + Q.pow(2).sum())
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad.zero_()
        val = (predict(users[va], items[va]).clamp(1, 5) - ratings[va]).pow(2).mean().sqrt().item()
    history.append(val)
    if val < best:
        best, best_state = val, [p.detach().clone() for p in params]
    if epoch % 60 == 0:
        print(f"epoch {epoch:3d} loss {loss.item():.5f} val_rmse {val:.5f}")
print("best val rmse", round(best, 4), "at", int(np.argmin(history)))

with torch.no_grad():
    for p, b in zip(params, best_state):
        p.copy_(b)
    err = predict(users, items) - ratings
    sq = torch.zeros(U).index_add_(0, users, err ** 2)
    cnt = torch.bincount(users, minlength=U)
    print("per-user rmse", (sq / cnt).sqrt())
    abs_err = torch.zeros(U).scatter_add(0, users, err.abs())
    print("per-user mae", abs_err / cnt.float())
    good = (err.abs() < 0.5)
    print("within 0.5:", good.sum().item(), good.float().mean())
    vals, counts = torch.unique(items, return_counts=True)
    print(vals, counts)
    top_item = (Q @ P.T).argmax(dim=0)
    print("top item per user", top_item, top_item.dtype)
    print(P.norm(dim=1, keepdim=True).shape, torch.stack([bu.max(), bi.min()]))
