"""A loop that picks a value with a Python ``if`` on a GPU scalar."""

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"


def run(steps: int = 50):
    torch.manual_seed(0)
    w = torch.randn(512, 512, device=device)
    x = torch.randn(64, 512, device=device)
    scale = torch.ones((), device=device)
    for _ in range(steps):
        y = torch.tanh(x @ w)
        m = y.abs().mean()
        if m > 0.5:
            scale = scale * 0.9
        else:
            scale = scale * 1.1
        x = y * scale
    return x


if __name__ == "__main__":
    out = run()
    print("checksum", out.sum().item())
