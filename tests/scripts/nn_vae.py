"""Variational autoencoder on synthetic binary patterns: encoder to (mu, logvar), the
reparameterization trick with noise drawn in numpy, decoder with sigmoid, BCE + KL loss
(reduction='sum'), Adam; reconstruction error in eval mode."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(12)
protos = (rng.uniform(size=(3, 20)) > 0.5).astype(np.float32)
data = np.concatenate([np.abs(p - (rng.uniform(size=(40, 20)) < 0.05)) for p in protos])
data = torch.tensor(data.astype(np.float32))


class VAE(nn.Module):
    def __init__(self, d=20, h=16, z=2):
        super().__init__()
        self.enc = nn.Linear(d, h)
        self.mu = nn.Linear(h, z)
        self.logvar = nn.Linear(h, z)
        self.dec1 = nn.Linear(z, h)
        self.dec2 = nn.Linear(h, d)

    def encode(self, x):
        h = F.relu(self.enc(x))
        return self.mu(h), self.logvar(h)

    def decode(self, z):
        return torch.sigmoid(self.dec2(F.relu(self.dec1(z))))

    def forward(self, x, eps):
        mu, logvar = self.encode(x)
        z = mu + eps * torch.exp(0.5 * logvar)
        return self.decode(z), mu, logvar


vae = VAE()
g = np.random.default_rng(13)
with torch.no_grad():
    for p in vae.parameters():
        p.copy_(torch.tensor(g.uniform(-0.3, 0.3, size=tuple(p.shape)), dtype=torch.float32))
opt = torch.optim.Adam(vae.parameters(), lr=1e-2)

for epoch in range(30):
    eps = torch.tensor(rng.standard_normal((len(data), 2)).astype(np.float32))
    recon, mu, logvar = vae(data, eps)
    bce = F.binary_cross_entropy(recon, data, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    loss = (bce + kld) / len(data)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if epoch % 6 == 0 or epoch == 29:
        print(f"epoch {epoch:2d} loss {loss.item():.5f} bce {bce.item() / len(data):.5f} "
              f"kld {kld.item() / len(data):.5f}")

vae.eval()
with torch.no_grad():
    mu, _ = vae.encode(data)
    recon = vae.decode(mu)
    err = F.mse_loss(recon, data).item()
print(f"reconstruction mse {err:.6f}")
print("cluster means of z:", torch.stack([mu[i * 40:(i + 1) * 40].mean(0) for i in range(3)]))
