"""VAE-style reparameterisation trick with KL term and a Bernoulli decoder.

Covers: encoder/decoder from parameter tensors, exp/pow/sum KL term,
F.binary_cross_entropy_with_logits(reduction='sum') / binary_cross_entropy, p.add_(grad, alpha=).
One pass uses torch.randn_like noise (only its shape/dtype and finiteness of grads are printed);
the training loop uses fixed noise from numpy.
"""
import numpy as np
import torch
import torch.nn.functional as F

torch.manual_seed(42)
rng = np.random.default_rng(6)
N, D, Z, Hd = 16, 10, 2, 8
x = torch.tensor((rng.uniform(size=(N, D)) > 0.5).astype(np.float32))
def init(*s):
    return torch.tensor(rng.normal(size=s) * 0.2, dtype=torch.float32, requires_grad=True)
We, be = init(D, Hd), torch.zeros(Hd, requires_grad=True)
Wmu, Wlv = init(Hd, Z), init(Hd, Z)
Wd1, Wd2 = init(Z, Hd), init(Hd, D)
params = [We, be, Wmu, Wlv, Wd1, Wd2]

def encode(x):
    h = torch.tanh(x @ We + be)
    return h @ Wmu, h @ Wlv

def decode(z):
    return torch.relu(z @ Wd1) @ Wd2

def elbo_terms(x, eps):
    mu, logvar = encode(x)
    std = torch.exp(0.5 * logvar)
    z = mu + eps * std
    logits = decode(z)
    rec = F.binary_cross_entropy_with_logits(logits, x, reduction='sum')
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return rec, kld

# random path (just must run)
mu, logvar = encode(x)
eps = torch.randn_like(mu)
print("eps", eps.shape, eps.dtype, eps.requires_grad)
rec, kld = elbo_terms(x, eps)
(rec + kld).backward()
print("random-path grads finite:", all(torch.isfinite(p.grad).all().item() for p in params))
for p in params:
    p.grad = None

# deterministic path
eps_fixed = torch.tensor(rng.normal(size=(N, Z)), dtype=torch.float32)
for step in range(50):
    rec, kld = elbo_terms(x, eps_fixed)
    loss = (rec + kld) / N
    loss.backward()
    with torch.no_grad():
        for p in params:
            p.add_(p.grad, alpha=-0.05)
            p.grad.zero_()
    if step % 10 == 0:
        print(f"step {step}: rec={rec.item():.4f} kl={kld.item():.4f} loss={loss.item():.4f}")
mu, logvar = encode(x)
print("mu[:3]", mu[:3])
print("var mean", logvar.exp().mean().item())
recon = torch.sigmoid(decode(mu))
print("recon acc", ((recon > 0.5).float() == x).float().mean().item())
print("bce (probs)", F.binary_cross_entropy(recon, x).item())
# KL to standard normal via closed form vs MC with fixed eps
z = mu + eps_fixed * (0.5 * logvar).exp()
logq = (-0.5 * ((z - mu) / (0.5 * logvar).exp()) ** 2 - 0.5 * logvar - 0.5 * np.log(2 * np.pi)).sum(1)
logp = (-0.5 * z ** 2 - 0.5 * np.log(2 * np.pi)).sum(1)
print("MC kl", (logq - logp).mean().item())
