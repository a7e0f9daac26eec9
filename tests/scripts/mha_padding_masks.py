"""Multi-head self-attention classifier over variable-length sequences: key-padding masks from
lengths, causal + padding mask combined, masked mean pooling, dropout with training=False,
F.scaled_dot_product_attention cross-check, layer norm, and SGD with p.grad = None.

Covers: arange/lengths comparison to build bool masks, unsqueeze/expand of masks,
masked_fill(-inf) and softmax rows, F.dropout(training=False), view/transpose/contiguous/
reshape for heads, chunk of a fused qkv projection, F.layer_norm, masked mean with
sum(dim)/clamp(min=1), F.cross_entropy, gradient of padded positions being exactly zero,
max(dim) (values, indices), torch.finfo, transpose on a non-contiguous tensor then .view error.
"""
import math
import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(4)
B, T, C, NH, NC = 3, 6, 8, 2, 3
HD = C // NH
lengths = torch.tensor([6, 4, 2])
x = torch.tensor(rng.normal(size=(B, T, C)), dtype=torch.float32, requires_grad=True)
labels = torch.tensor([0, 2, 1])
Wqkv = torch.tensor(rng.normal(size=(C, 3 * C)) / math.sqrt(C), dtype=torch.float32, requires_grad=True)
Wo = torch.tensor(rng.normal(size=(C, C)) / math.sqrt(C), dtype=torch.float32, requires_grad=True)
Wc = torch.tensor(rng.normal(size=(C, NC)) * 0.2, dtype=torch.float32, requires_grad=True)
g = torch.ones(C, requires_grad=True)
beta = torch.zeros(C, requires_grad=True)
params = [Wqkv, Wo, Wc, g, beta]

valid = torch.arange(T).unsqueeze(0) < lengths.unsqueeze(1)      # (B, T) bool
print(valid, valid.dtype)
key_mask = ~valid[:, None, None, :]                                # (B, 1, 1, T)
causal = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
print(causal.int())
full_mask = key_mask | causal
print(full_mask.shape, full_mask.sum())


def attend(x, mask, drop=0.1):
    q, k, v = (x @ Wqkv).chunk(3, dim=-1)
    q = q.view(B, T, NH, HD).transpose(1, 2)
    k = k.view(B, T, NH, HD).transpose(1, 2)
    v = v.view(B, T, NH, HD).transpose(1, 2)
    s = q @ k.transpose(-2, -1) / math.sqrt(HD)
    s = s.masked_fill(mask, float("-inf"))
    a = F.softmax(s, dim=-1)
    a = F.dropout(a, p=drop, training=False)
    out = (a @ v).transpose(1, 2).contiguous().view(B, T, C)
    return out @ Wo, a


def classify(x):
    h, a = attend(x, full_mask)
    h = F.layer_norm(h + x, (C,), g, beta)
    m = valid.unsqueeze(-1).float()
    pooled = (h * m).sum(dim=1) / m.sum(dim=1).clamp(min=1)
    return pooled @ Wc, a


logits, a = classify(x)
print(logits)
print("attn row sums", a.sum(-1)[1, 0])
print("attn to padded keys", a[1, :, :, 4:].abs().max(), a[2, 0, 5])
loss = F.cross_entropy(logits, labels)
print(loss)
loss.backward()
print("grad at padded positions", x.grad[1, 4:].abs().max(), x.grad[2, 2:].abs().sum())
print("grad at valid positions nonzero", (x.grad[0].abs().sum(-1) > 0).all())
x.grad = None

# the same attention with F.scaled_dot_product_attention (additive float mask)
q, k, v = (x @ Wqkv).chunk(3, dim=-1)
q, k, v = [t.reshape(B, T, NH, HD).permute(0, 2, 1, 3) for t in (q, k, v)]
add_mask = torch.zeros(B, 1, T, T).masked_fill(full_mask, float("-inf"))
ref = F.scaled_dot_product_attention(q, k, v, attn_mask=add_mask)
mine = attend(x, full_mask)[0] @ torch.linalg.inv(Wo)
print("sdpa agrees", torch.allclose(ref.transpose(1, 2).reshape(B, T, C), mine, atol=1e-4))
bool_ref = F.scaled_dot_product_attention(q, k, v, attn_mask=~full_mask)
print("bool mask agrees", torch.allclose(bool_ref, ref, atol=1e-6))

for step in range(25):
    logits, _ = classify(x)
    loss = F.cross_entropy(logits, labels)
    for p in params:
        p.grad = None
    loss.backward()
    with torch.no_grad():
        for p in params:
            p.add_(p.grad, alpha=-0.5)
    if step % 8 == 0:
        print(step, round(loss.item(), 5))
with torch.no_grad():
    logits, a = classify(x)
    conf, pred = F.softmax(logits, dim=1).max(dim=1)
    print("pred", pred, "conf", conf, "acc", (pred == labels).float().mean())
    print(torch.finfo(a.dtype).min < a.min())

qt = x.transpose(1, 2)
print(qt.is_contiguous(), qt.stride())
try:
    qt.view(B, -1)
except RuntimeError as e:
    print(type(e).__name__, str(e)[:80])
print(qt.reshape(B, -1).shape, qt.contiguous().view(B, -1).shape)
