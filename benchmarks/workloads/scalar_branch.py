import torch

device = "cuda" if torch.cuda.is_available() else "cpu"


def setup(scale):
    torch.manual_seed(0)
    n = 256 if scale == "small" else 4096
    w = torch.randn(n, n, device=device) / n**0.5
    x = torch.randn(64 if scale == "small" else 2048, n, device=device)
    return w, x


def run(state, steps):
    w, x = state
    scale = torch.ones((), device=device)
    for _ in range(steps):
        y = torch.tanh(x @ w)
        m = y.abs().mean()
        if m > 0.5:
            scale = scale * 0.9
        else:
            scale = scale * 1.1
        x = y * scale
    return [x.sum().item()]


if __name__ == "__main__":  # run as a script: the workload as its author would start it
    print(run(setup("small"), 10))
