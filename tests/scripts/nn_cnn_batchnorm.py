"""A small CNN on synthetic 16x16 images (stripes vs checks vs blobs): Conv2d, BatchNorm2d,
ReLU, MaxPool2d, AdaptiveAvgPool2d, Flatten, Linear; SGD with momentum and weight decay;
running statistics, train vs eval mode."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(3)


def make_images(n):
    xs, ys = [], []
    for i in range(n):
        k = i % 3
        img = np.zeros((16, 16), np.float32)
        if k == 0:
            img[::4, :] = 1.0
        elif k == 1:
            img[(np.add.outer(np.arange(16), np.arange(16)) % 4) == 0] = 1.0
        else:
            cy, cx = rng.integers(4, 12, 2)
            yy, xx = np.mgrid[:16, :16]
            img = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 8.0).astype(np.float32)
        img += rng.normal(scale=0.3, size=img.shape).astype(np.float32)
        xs.append(img[None])
        ys.append(k)
    return torch.tensor(np.stack(xs)), torch.tensor(ys)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d((2, 2)),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(64, 3))

    def forward(self, x):
        return self.classifier(self.features(x))


net = Net()
print(net)
g = np.random.default_rng(7)
with torch.no_grad():
    for name, p in net.named_parameters():
        if name.endswith("weight") and p.dim() > 1:
            fan_in = p[0].numel()
            p.copy_(torch.tensor(g.normal(scale=np.sqrt(2.0 / fan_in), size=tuple(p.shape)),
                                 dtype=torch.float32))
        elif name.endswith("bias") and p.dim() == 1 and "features.1" not in name:
            p.copy_(torch.tensor(g.uniform(-0.1, 0.1, size=tuple(p.shape)), dtype=torch.float32))

x_train, y_train = make_images(96)
x_test, y_test = make_images(30)
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
for epoch in range(5):
    net.train()
    for i in range(0, 96, 16):
        xb, yb = x_train[i:i + 16], y_train[i:i + 16]
        opt.zero_grad()
        loss = F.cross_entropy(net(xb), yb)
        loss.backward()
        opt.step()
    net.eval()
    with torch.no_grad():
        test_logits = net(x_test)
        test_loss = F.cross_entropy(test_logits, y_test).item()
        acc = (test_logits.argmax(1) == y_test).sum().item()
    print(f"epoch {epoch} last batch loss {loss.item():.6f} test loss {test_loss:.6f} correct {acc}/30")

bn = net.features[1]
print("running mean:", bn.running_mean)
print("running var:", bn.running_var)
print("batches tracked:", bn.num_batches_tracked.item())
net.train()
out_train = net(x_test[:4])
net.eval()
out_eval = net(x_test[:4])
print("train vs eval outputs differ:", not torch.allclose(out_train, out_eval))
