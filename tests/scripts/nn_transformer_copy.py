"""nn.Transformer encoder-decoder on a copy task: src/tgt embeddings with sinusoidal
positional encodings (a registered buffer), tgt causal mask, key padding masks, shifted
targets, CrossEntropyLoss(ignore_index=PAD), Adam with a LinearLR warmup; greedy decoding."""
import math

import numpy as np
import torch
import torch.nn as nn

PAD, BOS, V, D = 0, 1, 8, 16
rng = np.random.default_rng(45)


class PositionalEncoding(nn.Module):
    def __init__(self, d, max_len=20):
        super().__init__()
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
        pe = torch.zeros(max_len, d)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[:x.size(1)]


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_emb = nn.Embedding(V, D, padding_idx=PAD)
        self.tgt_emb = nn.Embedding(V, D, padding_idx=PAD)
        self.pos = PositionalEncoding(D)
        self.transformer = nn.Transformer(d_model=D, nhead=2, num_encoder_layers=1,
                                          num_decoder_layers=1, dim_feedforward=32, dropout=0.0,
                                          batch_first=True)
        self.out = nn.Linear(D, V)

    def forward(self, src, tgt):
        mask = self.transformer.generate_square_subsequent_mask(tgt.size(1))
        h = self.transformer(self.pos(self.src_emb(src)), self.pos(self.tgt_emb(tgt)),
                             tgt_mask=mask, src_key_padding_mask=src == PAD,
                             tgt_key_padding_mask=tgt == PAD, memory_key_padding_mask=src == PAD)
        return self.out(h)


model = Seq2Seq()
g = np.random.default_rng(46)
with torch.no_grad():
    for name, p in model.named_parameters():
        if p.dim() > 1:
            p.copy_(torch.tensor(g.normal(scale=0.2, size=tuple(p.shape)), dtype=torch.float32))
        elif "norm" not in name:
            p.copy_(torch.tensor(g.uniform(-0.1, 0.1, size=tuple(p.shape)), dtype=torch.float32))
    model.src_emb.weight[PAD].zero_()
    model.tgt_emb.weight[PAD].zero_()
print("parameters:", sum(p.numel() for p in model.parameters()))
print("buffers:", [n for n, _ in model.named_buffers()])


def batch(n=8):
    src = np.zeros((n, 6), np.int64)
    for i in range(n):
        k = int(rng.integers(3, 7))
        src[i, :k] = rng.integers(2, V, k)
    tgt_in = np.concatenate([np.full((n, 1), BOS), src[:, :-1]], axis=1)
    tgt_in[src == PAD] = PAD
    return torch.tensor(src), torch.tensor(tgt_in), torch.tensor(src)


opt = torch.optim.Adam(model.parameters(), lr=5e-3)
sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.2, total_iters=5)
crit = nn.CrossEntropyLoss(ignore_index=PAD)
for it in range(25):
    src, tgt_in, tgt_out = batch()
    logits = model(src, tgt_in)
    loss = crit(logits.reshape(-1, V), tgt_out.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    if it % 5 == 0 or it == 24:
        print(f"iter {it:2d} loss {loss.item():.6f}")
model.eval()
with torch.no_grad():
    src = torch.tensor([[3, 5, 2, 7, 0, 0]])
    ys = torch.tensor([[BOS]])
    for _ in range(4):
        nxt = model(src, ys)[:, -1].argmax(-1, keepdim=True)
        ys = torch.cat([ys, nxt], dim=1)
print("decoded:", ys.tolist())
