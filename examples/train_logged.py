"""A GPU-resident training loop that prints loss and accuracy with `.item()` every step, before
the backward pass: two syncs per step, each waiting for the forward pass."""

import torch
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"


def main(steps: int = 300, dim: int = 1024, batch: int = 512) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.ReLU(), torch.nn.Linear(4 * dim, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    xs = torch.randn(8, batch, dim, device=device)
    ys = torch.randint(0, 10, (8, batch), device=device)
    for step in range(steps):
        logits = model(xs[step % 8])
        loss = F.cross_entropy(logits, ys[step % 8])
        acc = (logits.argmax(dim=1) == ys[step % 8]).float().mean()
        print(f"step {step} loss {loss.item():.5f} acc {acc.item():.4f}")
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
