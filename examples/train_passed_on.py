"""A training script in the most common shape: the loader, model, optimizer and device are built
in ``main()`` and passed to ``train_one_epoch`` and ``validate``, which copy each batch with
``.cuda()`` / ``.to(device)``, add up ``loss.item()`` and a correct count every step, and log
every 20 steps. syncfix needs facts from ``main()``'s call sites to fix these."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self, dim: int, hidden: int, classes: int):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


criterion = nn.CrossEntropyLoss()


def train_one_epoch(model, loader, opt, device, epoch):
    model.train()
    running_loss = 0.0
    for step, (x, y) in enumerate(loader):
        x = x.cuda()
        y = y.to(device)
        loss = criterion(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running_loss += loss.item()
        if step % 20 == 19:
            print(f"epoch {epoch} step {step + 1} loss {running_loss / 20:.4f}")
            running_loss = 0.0


def validate(model, loader, device):
    model.eval()
    correct = 0
    total_loss = 0.0
    with torch.no_grad():
        for x, y in loader:
            x = x.to(device)
            y = y.to(device)
            out = model(x)
            total_loss += criterion(out, y).item()
            correct += (out.argmax(1) == y).sum().item()
    print(f"val loss {total_loss / len(loader):.4f} acc {correct / len(loader.dataset):.3f}")
    return correct


def main(epochs: int = 2, batch: int = 256, dim: int = 512) -> None:
    torch.manual_seed(0)
    device = torch.device("cuda")
    data = torch.randn(40 * batch, dim)
    labels = (data[:, 0] > 0).long()
    train_loader = DataLoader(TensorDataset(data, labels), batch_size=batch, shuffle=False)
    val_loader = DataLoader(TensorDataset(data[: 8 * batch], labels[: 8 * batch]), batch_size=batch)
    model = MLP(dim, 1024, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(epochs):
        train_one_epoch(model, train_loader, opt, device, epoch)
        validate(model, val_loader, device)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    main(args.epochs)
