"""Sequence-to-sequence reversal with attention: GRU encoder, GRU decoder with dot-product
attention over the encoder outputs (bmm + softmax), teacher forcing, NLLLoss over
log_softmax, Adam; greedy decoding."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SOS, V, H, L = 0, 8, 24, 5
rng = np.random.default_rng(9)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(V, H)
        self.gru = nn.GRU(H, H, batch_first=True)

    def forward(self, src):
        return self.gru(self.embedding(src))


class AttnDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(V, H)
        self.gru = nn.GRU(2 * H, H, batch_first=True)
        self.out = nn.Linear(2 * H, V)

    def forward(self, token, hidden, enc_out):
        emb = self.embedding(token)                              # (B, 1, H)
        scores = torch.bmm(hidden.transpose(0, 1), enc_out.transpose(1, 2))   # (B, 1, L)
        attn = F.softmax(scores, dim=-1)
        context = torch.bmm(attn, enc_out)                       # (B, 1, H)
        out, hidden = self.gru(torch.cat([emb, context], dim=2), hidden)
        logits = self.out(torch.cat([out, context], dim=2)).squeeze(1)
        return F.log_softmax(logits, dim=-1), hidden, attn


enc, dec = Encoder(), AttnDecoder()
g = np.random.default_rng(4)
for m in (enc, dec):
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.tensor(g.uniform(-0.15, 0.15, size=tuple(p.shape)),
                                 dtype=torch.float32))
params = list(enc.parameters()) + list(dec.parameters())
opt = torch.optim.Adam(params, lr=5e-3)
criterion = nn.NLLLoss()

for it in range(40):
    src = torch.tensor(rng.integers(1, V, size=(16, L)))
    tgt = src.flip(1)
    enc_out, hidden = enc(src)
    token = torch.full((16, 1), SOS, dtype=torch.long)
    loss = 0.0
    for t in range(L):
        logp, hidden, _ = dec(token, hidden, enc_out)
        loss = loss + criterion(logp, tgt[:, t])
        token = tgt[:, t:t + 1]                                  # teacher forcing
    loss = loss / L
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 8 == 0 or it == 39:
        print(f"iter {it} loss {loss.item():.6f}")

with torch.no_grad():
    src = torch.tensor([[1, 2, 3, 4, 5], [7, 6, 5, 4, 3]])
    enc_out, hidden = enc(src)
    token = torch.full((2, 1), SOS, dtype=torch.long)
    decoded, attns = [], []
    for t in range(L):
        logp, hidden, attn = dec(token, hidden, enc_out)
        token = logp.argmax(-1, keepdim=True)
        decoded.append(token)
        attns.append(attn)
print("source:", src.tolist())
print("decoded:", torch.cat(decoded, 1).tolist())
print("attention (first example, first step):", attns[0][0])
