"""Evaluate a model over a data set, accumulating the loss and the hit count with ``.item()``
every batch."""

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"


def evaluate(model, dataset, batch_size: int = 512):
    total_loss = 0.0
    correct = 0
    seen = 0
    with torch.no_grad():
        for x, y in DataLoader(dataset, batch_size=batch_size):
            x = x.to(device)
            y = y.to(device)
            logits = model(x)
            loss = F.cross_entropy(logits, y, reduction="sum")
            total_loss += loss.item()
            correct += (logits.argmax(1) == y).sum().item()
            seen += y.shape[0]
    return total_loss / seen, correct / seen


def main() -> None:
    torch.manual_seed(0)
    data = torch.randn(20000, 256)
    labels = (data[:, :4].sum(1) > 0).long()
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 2)
    ).to(device)
    loss, acc = evaluate(model, TensorDataset(data, labels))
    print(f"eval loss {loss:.6f} accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
