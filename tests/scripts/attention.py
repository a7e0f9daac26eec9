"""Single-head causal self-attention written by hand, then a padding mask and a multi-head split.

Covers: batched matmul / einsum / bmm, transpose(-2, -1), masked_fill with -inf and -1e9,
softmax over masked rows, view/transpose/contiguous for heads, backward(retain_graph=True).
"""
import math
import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(3)
B, T, C = 2, 5, 8
x = torch.tensor(rng.normal(size=(B, T, C)), dtype=torch.float32)
Wq = torch.tensor(rng.normal(size=(C, C)) / math.sqrt(C), dtype=torch.float32, requires_grad=True)
Wk = torch.tensor(rng.normal(size=(C, C)) / math.sqrt(C), dtype=torch.float32, requires_grad=True)
Wv = torch.tensor(rng.normal(size=(C, C)) / math.sqrt(C), dtype=torch.float32, requires_grad=True)

q = x @ Wq
k = x @ Wk
v = x @ Wv
att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
mask = torch.tril(torch.ones(T, T)).view(1, T, T)
att = att.masked_fill(mask == 0, float('-inf'))
print("masked scores[0]:\n", att[0].detach())
att = F.softmax(att, dim=-1)
print("attention weights[0]:\n", att[0])
y = att @ v
print(y.shape, y.grad_fn)
loss = y.pow(2).mean()
loss.backward(retain_graph=True)
print("loss", loss.item())
print("dWq norm", Wq.grad.norm().item(), "dWk norm", Wk.grad.norm().item(), "dWv norm", Wv.grad.norm().item())
print("dWv[0]", Wv.grad[0])

# padding mask variant with a boolean key mask and -1e9
key_pad = torch.tensor([[False, False, False, True, True], [False, False, False, False, True]])
scores = torch.einsum('btc,bsc->bts', q, k) / C ** 0.5
scores = scores.masked_fill(key_pad[:, None, :], -1e9)
w = scores.softmax(dim=-1)
print("pad weights[1,0]", w[1, 0])
out = torch.bmm(w, v)
Wq.grad = None
out.sum().backward()
print("dWq after pad", Wq.grad.sum().item())

# multi-head split
nh = 2
qh = q.view(B, T, nh, C // nh).transpose(1, 2)
kh = k.view(B, T, nh, C // nh).transpose(1, 2)
vh = v.view(B, T, nh, C // nh).transpose(1, 2)
a = (qh @ kh.transpose(-2, -1)) * (1.0 / math.sqrt(kh.size(-1)))
a = a.masked_fill(mask[:, None] == 0, float('-inf')).softmax(-1)
yh = (a @ vh).transpose(1, 2).contiguous().view(B, T, C)
print("multihead out", yh.shape, yh.is_contiguous(), yh[0, -1])
