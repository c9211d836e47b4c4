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
    # Ideal: pinned non-blocking copies, every logged value kept on the GPU until the loop ends,
    # one transfer at the end.
    model, opt, data, labels = state
    kept = []
    for step in range(steps):
        x = (data[step % 8] * 1.0).pin_memory().to(device, non_blocking=True)
        y = (labels[step % 8] + 0).pin_memory().to(device, non_blocking=True)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(dim=1) == y).float().mean()
        opt.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        kept.append(torch.stack([loss.detach(), acc, norm]))
    logged = []
    for loss, acc, norm in torch.stack(kept).tolist() if kept else []:
        logged.append(f"loss {loss:.6f} acc {acc:.4f}")
        logged.append(f"norm {norm:.6f}")
    return logged


if __name__ == "__main__":  # run as a script: the workload as its author would start it
    print(run(setup("small"), 10))
