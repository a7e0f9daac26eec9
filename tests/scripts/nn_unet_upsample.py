"""A tiny U-Net for 2-d segmentation of synthetic discs: down path with MaxPool2d, up path
with nn.Upsample(scale_factor=2, mode="bilinear") and F.interpolate(mode="nearest"),
torch.cat skip connections, BCEWithLogitsLoss, Dice score in eval mode."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(51)
yy, xx = np.mgrid[:16, :16]
imgs, masks = [], []
for _ in range(16):
    cy, cx, r = rng.uniform(4, 12), rng.uniform(4, 12), rng.uniform(2, 4.5)
    m = ((yy - cy) ** 2 + (xx - cx) ** 2 < r * r).astype(np.float32)
    imgs.append(m + 0.4 * rng.standard_normal((16, 16)).astype(np.float32))
    masks.append(m)
x = torch.tensor(np.stack(imgs)[:, None])
y = torch.tensor(np.stack(masks)[:, None])


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU())


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.down1 = block(1, 4)
        self.down2 = block(4, 8)
        self.pool = nn.MaxPool2d(2)
        self.mid = block(8, 8)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.dec2 = block(16, 4)
        self.dec1 = block(8, 4)
        self.head = nn.Conv2d(4, 1, 1)

    def forward(self, x):
        d1 = self.down1(x)                       # 16x16
        d2 = self.down2(self.pool(d1))           # 8x8
        m = self.mid(self.pool(d2))              # 4x4
        u2 = self.dec2(torch.cat([self.up(m), d2], dim=1))
        u1 = self.dec1(torch.cat([F.interpolate(u2, scale_factor=2, mode="nearest"), d1], 1))
        return self.head(u1)


net = UNet()
print(net)
g = np.random.default_rng(52)
with torch.no_grad():
    for name, p in net.named_parameters():
        if p.dim() > 1:
            p.copy_(torch.tensor(g.normal(scale=np.sqrt(2 / p[0].numel()), size=tuple(p.shape)),
                                 dtype=torch.float32))
        else:
            p.zero_()
opt = torch.optim.Adam(net.parameters(), lr=0.01)
crit = nn.BCEWithLogitsLoss()
for epoch in range(12):
    logits = net(x)
    loss = crit(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if epoch % 3 == 0 or epoch == 11:
        print(f"epoch {epoch:2d} loss {loss.item():.6f}")
net.eval()
with torch.no_grad():
    pred = (torch.sigmoid(net(x)) > 0.5).float()
    inter = (pred * y).sum((1, 2, 3))
    dice = (2 * inter / (pred.sum((1, 2, 3)) + y.sum((1, 2, 3)) + 1e-6)).mean()
print(f"dice {dice.item():.5f} positive pixels {int(pred.sum().item())}")
print("upsampled sizes:", tuple(net.up(torch.zeros(1, 1, 3, 5)).shape),
      tuple(F.interpolate(torch.zeros(1, 1, 3, 5), size=(7, 4), mode="bilinear",
                          align_corners=True).shape))
