import torch
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"


def setup(scale):
    torch.manual_seed(0)
    dim, batch = (256, 128) if scale == "small" else (4096, 4096)
    model = torch.nn.Sequential(torch.nn.Linear(dim, dim), torch.nn.GELU(), torch.nn.Linear(dim, 100)).to(device)
    xs = torch.randn(8, batch, dim, device=device)
    ys = torch.randint(0, 100, (8, batch), device=device)
    return model, xs, ys


@torch.no_grad()
def run(state, steps):
    model, xs, ys = state
    total = 0.0
    for step in range(steps):
        logits = model(xs[step % 8])
        loss = F.cross_entropy(logits, ys[step % 8])
        total += loss.item()
    return [total]


if __name__ == "__main__":  # run as a script: the workload as its author would start it
    print(run(setup("small"), 10))
