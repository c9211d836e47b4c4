import torch
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"


def setup(scale):
    torch.manual_seed(0)
    dim, hidden, batch = (256, 512, 64) if scale == "small" else (2048, 8192, 1024)
    model = torch.nn.Sequential(
        torch.nn.Linear(dim, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10)
    ).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.randn(8, batch, dim)
    labels = torch.randint(0, 10, (8, batch))
    return model, opt, data, labels


def run(state, steps):
    model, opt, data, labels = state
    logged = []
    for step in range(steps):
        x = data[step % 8] * 1.0
        y = labels[step % 8] + 0
        x = x.cuda()
        y = y.cuda()
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(dim=1) == y).float().mean()
        logged.append(f"loss {loss.item():.6f} acc {acc.item():.4f}")
        opt.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        logged.append(f"norm {norm.item():.6f}")
    return logged


if __name__ == "__main__":  # run as a script: the workload as its author would start it
    print(run(setup("small"), 10))
