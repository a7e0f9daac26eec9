"""A small GAN learning a 1-d Gaussian mixture: generator and discriminator MLPs with
LeakyReLU, BCEWithLogitsLoss, two Adam optimizers (betas=(0.5, 0.999)), detach() for the
discriminator step; noise and data drawn in numpy."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(14)

G = nn.Sequential(nn.Linear(4, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
D = nn.Sequential(nn.Linear(1, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
g = np.random.default_rng(15)
for net in (G, D):
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.tensor(g.uniform(-0.4, 0.4, size=tuple(p.shape)), dtype=torch.float32))
print(G)
print(D)

criterion = nn.BCEWithLogitsLoss()
opt_g = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
real_label, fake_label = torch.ones(32, 1), torch.zeros(32, 1)

for it in range(60):
    real = torch.tensor((rng.choice([-2.0, 2.0], size=(32, 1)) +
                         0.3 * rng.standard_normal((32, 1))).astype(np.float32))
    z = torch.tensor(rng.standard_normal((32, 4)).astype(np.float32))
    fake = G(z)
    # discriminator step
    opt_d.zero_grad()
    d_loss = criterion(D(real), real_label) + criterion(D(fake.detach()), fake_label)
    d_loss.backward()
    opt_d.step()
    # generator step
    opt_g.zero_grad()
    g_loss = criterion(D(fake), real_label)
    g_loss.backward()
    opt_g.step()
    if it % 10 == 0 or it == 59:
        print(f"iter {it:2d} d_loss {d_loss.item():.6f} g_loss {g_loss.item():.6f} "
              f"fake mean {fake.mean().item():.5f} std {fake.std().item():.5f}")

with torch.no_grad():
    z = torch.tensor(rng.standard_normal((8, 4)).astype(np.float32))
    print("samples:", G(z).squeeze(1))
    print("D on grid:", torch.sigmoid(D(torch.linspace(-3, 3, 7).unsqueeze(1))).squeeze(1))
