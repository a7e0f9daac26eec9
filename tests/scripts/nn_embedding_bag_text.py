"""Bag-of-words text classifier: EmbeddingBag(mode="mean") over flat token ids with
offsets, a linear head, CrossEntropyLoss, SGD with a gamma schedule; also Embedding with
padding_idx (whose row gets no gradient) and EmbeddingBag(mode="sum") on a 2-d batch."""
import numpy as np
import torch
import torch.nn as nn

vocab = {w: i + 1 for i, w in enumerate(
    "good great fine nice bad awful poor sad the a movie film was is very".split())}
texts = [("the movie was good", 1), ("a great film", 1), ("very nice movie", 1),
         ("the film was bad", 0), ("awful movie", 0), ("very poor and sad film", 0),
         ("good good film", 1), ("bad bad movie", 0)]


def encode(text):
    return [vocab.get(w, 0) for w in text.split()]


class TextClassifier(nn.Module):
    def __init__(self, n_vocab, dim, n_class):
        super().__init__()
        self.embedding = nn.EmbeddingBag(n_vocab, dim, mode="mean")
        self.fc = nn.Linear(dim, n_class)

    def forward(self, tokens, offsets):
        return self.fc(self.embedding(tokens, offsets))


model = TextClassifier(len(vocab) + 1, 8, 2)
print(model)
g = np.random.default_rng(26)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(g.uniform(-0.5, 0.5, size=tuple(p.shape)), dtype=torch.float32))

ids = [encode(t) for t, _ in texts]
tokens = torch.tensor([i for seq in ids for i in seq])
offsets = torch.tensor([0] + list(np.cumsum([len(s) for s in ids])[:-1]))
labels = torch.tensor([l for _, l in texts])
opt = torch.optim.SGD(model.parameters(), lr=1.0)
sched = torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.95)
for epoch in range(25):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(tokens, offsets), labels)
    loss.backward()
    opt.step()
    sched.step()
    if epoch % 5 == 0 or epoch == 24:
        print(f"epoch {epoch:2d} loss {loss.item():.6f}")
with torch.no_grad():
    test = [encode("a very good movie"), encode("the awful film")]
    t = torch.tensor(test[0] + test[1])
    print("predictions:", model(t, torch.tensor([0, len(test[0])])).argmax(1).tolist())

emb = nn.Embedding(6, 3, padding_idx=0)
with torch.no_grad():
    emb.weight.copy_(torch.tensor(g.uniform(-1, 1, size=(6, 3)), dtype=torch.float32))
    emb.weight[0].zero_()
batch = torch.tensor([[1, 2, 0, 0], [3, 4, 5, 0]])
emb(batch).sum().backward()
print("padding row grad:", emb.weight.grad[0], "row 1 grad:", emb.weight.grad[1])
bag = nn.EmbeddingBag(6, 3, mode="sum")
with torch.no_grad():
    bag.weight.copy_(emb.weight)
print("sum bags:", bag(batch))
