"""Train a small MLP classifier on synthetic data, the way many training scripts are written:
CPU batch preparation, blocking copies, and loss/accuracy/grad-norm read with ``.item()`` in the
middle of every step."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"


class MLP(nn.Module):
    def __init__(self, dim: int, hidden: int, classes: int):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def main(steps: int = 40, batch: int = 256, dim: int = 512) -> None:
    torch.manual_seed(0)
    data = torch.randn(steps * batch, dim)
    labels = (data[:, 0] > 0).long()
    loader = DataLoader(TensorDataset(data, labels), batch_size=batch)
    model = MLP(dim, 1024, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step, (x, y) in enumerate(loader):
        x = x.to(device)
        y = y.to(device)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(dim=1) == y).float().mean()
        print(f"step {step} loss {loss.item():.4f} acc {acc.item():.3f}")
        opt.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 10 == 0:
            print(f"grad norm {norm.item():.4f}")
    print(f"final loss {loss.item():.6f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    main(args.steps)
