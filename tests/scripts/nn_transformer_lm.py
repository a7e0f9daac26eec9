"""Tiny transformer language model: token + learned position embeddings, nn.TransformerEncoder
(2 pre-norm layers, batch_first, GELU) with a causal mask from
nn.Transformer.generate_square_subsequent_mask, weight tying, AdamW with a warmup LambdaLR,
gradient clipping; evaluation perplexity under torch.no_grad()."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

corpus = "abcdefgh" * 40
vocab = sorted(set(corpus))
ids = torch.tensor([vocab.index(c) for c in corpus])
V, D, T, B = len(vocab), 32, 12, 6


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(V, D)
        self.pos = nn.Parameter(torch.zeros(1, T, D))
        layer = nn.TransformerEncoderLayer(D, nhead=4, dim_feedforward=64, dropout=0.0,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, V, bias=False)
        self.head.weight = self.tok.weight          # weight tying

    def forward(self, x):
        h = self.tok(x) * math.sqrt(D) + self.pos[:, :x.size(1)]
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(1))
        h = self.encoder(h, mask=mask, is_causal=True)
        return self.head(self.norm(h))


model = TinyLM()
print(model)
g = np.random.default_rng(21)
with torch.no_grad():
    for name, p in model.named_parameters():
        if p.dim() > 1:
            p.copy_(torch.tensor(g.normal(scale=0.05, size=tuple(p.shape)), dtype=torch.float32))
        elif "norm" in name and name.endswith("weight"):
            p.fill_(1.0)
        else:
            p.zero_()
print("parameters:", sum(p.numel() for p in model.parameters()),
      "tied:", model.head.weight is model.tok.weight)

opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
warmup = 5
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
starts = np.arange(0, len(ids) - T - 1, 7)
for step in range(20):
    offs = starts[(np.arange(B) + step * B) % len(starts)]
    x = torch.stack([ids[o:o + T] for o in offs])
    y = torch.stack([ids[o + 1:o + T + 1] for o in offs])
    logits = model(x)
    loss = F.cross_entropy(logits.view(-1, V), y.view(-1))
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    if step % 4 == 0 or step == 19:
        print(f"step {step:2d} loss {loss.item():.6f} lr {sched.get_last_lr()[0]:.6f}")

model.eval()
with torch.no_grad():
    x = ids[:T].unsqueeze(0)
    nll = F.cross_entropy(model(x)[0, :-1], ids[1:T])
    print(f"eval perplexity {math.exp(nll.item()):.5f}")
    pred = model(x).argmax(-1)[0]
print("predicted next chars:", "".join(vocab[i] for i in pred.tolist()))
