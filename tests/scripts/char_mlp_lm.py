"""Character-level MLP language model (Bengio-style) with manual Adam, padding, label smoothing
and top-k accuracy; early stopping on a validation split.

Covers: F.embedding (padding_idx), view of embeddings into a context vector, F.cross_entropy with
ignore_index / label_smoothing / reduction='none', topk / argmax / eq / float().mean(),
manual Adam (exp_avg, exp_avg_sq, bias correction with torch.sqrt / addcdiv_), p.grad.zero_(),
.item() for early stopping, integer tensor arithmetic (long), torch.multinomial-free greedy
sampling with argmax.
"""
import numpy as np
import torch
import torch.nn.functional as F

text = "hello world. the quick brown fox jumps over the lazy dog. hello again world."
chars = sorted(set(text))
PAD = 0
stoi = {c: i + 1 for i, c in enumerate(chars)}
itos = {i: c for c, i in stoi.items()}
V = len(chars) + 1
ctx = 3
xs, ys = [], []
padded = [PAD] * ctx + [stoi[c] for c in text]
for i in range(len(text)):
    xs.append(padded[i:i + ctx])
    ys.append(padded[i + ctx])
X = torch.tensor(xs)
Y = torch.tensor(ys)
print(X.shape, X.dtype, Y[:10])
n_train = 60
Xtr, Ytr, Xva, Yva = X[:n_train], Y[:n_train], X[n_train:], Y[n_train:]
Yva = Yva.clone()
Yva[::4] = -100  # some validation targets ignored
print("ignored", (Yva == -100).sum().item(), "of", Yva.numel())

rng = np.random.default_rng(5)
E, H = 6, 24
emb = torch.tensor(rng.normal(size=(V, E)) * 0.5, dtype=torch.float32)
emb[PAD] = 0
emb.requires_grad_()
W1 = torch.tensor(rng.normal(size=(ctx * E, H)) / np.sqrt(ctx * E), dtype=torch.float32, requires_grad=True)
b1 = torch.zeros(H, requires_grad=True)
W2 = torch.tensor(rng.normal(size=(H, V)) * 0.1, dtype=torch.float32, requires_grad=True)
b2 = torch.zeros(V, requires_grad=True)
params = [emb, W1, b1, W2, b2]
print("params", sum(p.numel() for p in params))


def forward(Xb):
    e = F.embedding(Xb, emb, padding_idx=PAD)      # (N, ctx, E)
    h = torch.tanh(e.view(e.shape[0], -1) @ W1 + b1)
    return h @ W2 + b2


logits = forward(Xtr[:4])
print(logits.shape, logits.grad_fn)
l_none = F.cross_entropy(logits, Ytr[:4], reduction="none")
print(l_none)
print(F.cross_entropy(logits, Ytr[:4], label_smoothing=0.1))
e = F.embedding(Xtr[:2], emb, padding_idx=PAD)
e.sum().backward()
print("pad row grad", emb.grad[PAD], "row grad", emb.grad[stoi['h']])
emb.grad = None

state = [(torch.zeros_like(p), torch.zeros_like(p)) for p in params]
lr, b1_, b2_, eps = 0.03, 0.9, 0.999, 1e-8
best, best_step, patience, bad = float("inf"), -1, 5, 0
for t in range(1, 201):
    logits = forward(Xtr)
    loss = F.cross_entropy(logits, Ytr, label_smoothing=0.05)
    for p in params:
        if p.grad is not None:
            p.grad.zero_()
    loss.backward()
    with torch.no_grad():
        for p, (m, s) in zip(params, state):
            m.mul_(b1_).add_(p.grad, alpha=1 - b1_)
            s.mul_(b2_).addcmul_(p.grad, p.grad, value=1 - b2_)
            mhat = m / (1 - b1_ ** t)
            denom = (s / (1 - b2_ ** t)).sqrt().add_(eps)
            p.addcdiv_(mhat, denom, value=-lr)
        val = F.cross_entropy(forward(Xva), Yva, ignore_index=-100).item()
    if t % 20 == 0:
        print(f"t {t:3d} train {loss.item():.4f} val {val:.4f}")
    if val < best - 1e-4:
        best, best_step, bad = val, t, 0
    else:
        bad += 1
        if bad >= patience:
            print("early stop at", t, "best", round(best, 4), "at", best_step)
            break

with torch.no_grad():
    logits = forward(Xtr)
    acc1 = (logits.argmax(dim=1) == Ytr).float().mean()
    top3 = logits.topk(3, dim=1).indices
    acc3 = (top3 == Ytr.unsqueeze(1)).any(dim=1).float().mean()
    print("top1", acc1, "top3", acc3)
    vals, idx = logits.topk(2, dim=-1, largest=True, sorted=True)
    print(vals[:2], idx[:2])
    keep = Yva != -100
    print("val acc", (forward(Xva).argmax(-1)[keep] == Yva[keep]).float().mean().item())
    out = [PAD] * ctx
    s = ""
    for _ in range(20):
        nxt = forward(torch.tensor([out[-ctx:]])).argmax(dim=-1).item()
        out.append(nxt)
        s += itos.get(nxt, "?")
    print(repr(s))
print(emb.requires_grad, emb.grad.shape, emb.grad[PAD].abs().sum())
