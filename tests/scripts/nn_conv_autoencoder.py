"""Convolutional autoencoder: Conv2d with stride 2 down, ConvTranspose2d up (output_padding),
Sigmoid output, MSELoss, Adam; latent shapes and reconstruction error, a ConvTranspose2d with
an explicit output_size."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(24)
yy, xx = np.mgrid[:12, :12]
imgs = []
for _ in range(24):
    cy, cx, r = rng.uniform(3, 9), rng.uniform(3, 9), rng.uniform(1.5, 3.5)
    imgs.append(((yy - cy) ** 2 + (xx - cx) ** 2 < r * r).astype(np.float32))
x = torch.tensor(np.stack(imgs)[:, None])


class AE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 6, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(6, 8, 3, stride=2, padding=1), nn.ReLU())
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
            nn.ConvTranspose2d(6, 1, 3, stride=2, padding=1, output_padding=1), nn.Sigmoid())

    def forward(self, x):
        z = self.encoder(x)
        return self.decoder(z), z


ae = AE()
print(ae)
g = np.random.default_rng(25)
with torch.no_grad():
    for p in ae.parameters():
        p.copy_(torch.tensor(g.uniform(-0.3, 0.3, size=tuple(p.shape)), dtype=torch.float32))
opt = torch.optim.Adam(ae.parameters(), lr=0.01)
loss_fn = nn.MSELoss()
for epoch in range(15):
    recon, z = ae(x)
    loss = loss_fn(recon, x)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if epoch % 3 == 0 or epoch == 14:
        print(f"epoch {epoch:2d} mse {loss.item():.6f}")
print("latent:", tuple(z.shape), "reconstruction:", tuple(recon.shape))
up = nn.ConvTranspose2d(8, 2, 3, stride=2)
with torch.no_grad():
    up.weight.copy_(torch.tensor(g.uniform(-0.2, 0.2, size=tuple(up.weight.shape)),
                                 dtype=torch.float32))
    up.bias.zero_()
    print("output_size=(7, 7):", tuple(up(z, output_size=(7, 7)).shape),
          "default:", tuple(up(z).shape))
    print("mean activation:", up(z, output_size=[8, 8]).mean().item())
