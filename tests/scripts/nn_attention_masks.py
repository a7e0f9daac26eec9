"""nn.MultiheadAttention the way models call it: self-attention with a key_padding_mask for
padded sequences, a boolean causal attn_mask, cross-attention with kdim/vdim, batch_first, the
averaged and per-head attention weights, need_weights=False; an attention-pooling classifier
trained with Adam."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(43)
mha = nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True)
g = np.random.default_rng(44)
with torch.no_grad():
    for p in mha.parameters():
        p.copy_(torch.tensor(g.uniform(-0.4, 0.4, size=tuple(p.shape)), dtype=torch.float32))
print(mha)
x = torch.tensor(rng.standard_normal((2, 5, 8)).astype(np.float32))
pad = torch.tensor([[False, False, False, True, True], [False] * 5])
out, w = mha(x, x, x, key_padding_mask=pad)
print("out:", tuple(out.shape), "weights:", tuple(w.shape))
print("weights to padded keys:", w[0, :, 3:].abs().max().item())
print("row sums:", w.sum(-1))
causal = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
out2, w2 = mha(x, x, x, attn_mask=causal, average_attn_weights=False)
print("per-head weights:", tuple(w2.shape), "upper triangle:", w2[..., 0, 1:].abs().max().item())
out3, none = mha(x, x, x, attn_mask=causal, need_weights=False)
print("need_weights=False:", none, "same output:", torch.allclose(out2, out3, atol=1e-6))

cross = nn.MultiheadAttention(8, 4, kdim=6, vdim=3, batch_first=True)
with torch.no_grad():
    for p in cross.parameters():
        p.copy_(torch.tensor(g.uniform(-0.4, 0.4, size=tuple(p.shape)), dtype=torch.float32))
mem_k = torch.tensor(rng.standard_normal((2, 7, 6)).astype(np.float32))
mem_v = torch.tensor(rng.standard_normal((2, 7, 3)).astype(np.float32))
o, cw = cross(x, mem_k, mem_v)
print("cross-attention:", tuple(o.shape), tuple(cw.shape), [n for n, _ in cross.named_parameters()])


class AttnPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.query = nn.Parameter(torch.zeros(1, 1, 8))
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.fc = nn.Linear(8, 2)

    def forward(self, x, pad):
        q = self.query.expand(x.size(0), -1, -1)
        pooled, w = self.attn(q, x, x, key_padding_mask=pad)
        return self.fc(pooled.squeeze(1)), w


model = AttnPool()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(g.uniform(-0.4, 0.4, size=tuple(p.shape)), dtype=torch.float32))
opt = torch.optim.Adam(model.parameters(), lr=0.02)
for it in range(20):
    xs = torch.tensor(rng.standard_normal((8, 6, 8)).astype(np.float32))
    lengths = rng.integers(2, 7, 8)
    pad = torch.tensor(np.arange(6)[None, :] >= lengths[:, None])
    y = (xs[:, 0, 0] > 0).long()
    logits, w = model(xs, pad)
    loss = nn.functional.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 5 == 0 or it == 19:
        print(f"iter {it:2d} loss {loss.item():.6f} attention on first token "
              f"{w[:, 0, 0].mean().item():.5f}")
