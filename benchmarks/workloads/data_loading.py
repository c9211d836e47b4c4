import torch
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"


def setup(scale):
    torch.manual_seed(0)
    dim, batch = (128, 64) if scale == "small" else (4096, 512)
    data = torch.randn(16 * batch, dim)
    labels = torch.randint(0, 10, (16 * batch,))
    model = torch.nn.Linear(dim, 10).to(device)
    return model, TensorDataset(data, labels), batch


@torch.no_grad()
def run(state, steps):
    model, dataset, batch = state
    outs = []
    done = 0
    while done < steps:
        for x, y in DataLoader(dataset, batch_size=batch):
            x = x.to(device)
            y = y.to(device)
            outs.append((model(x).argmax(1) == y).sum())
            done += 1
            if done == steps:
                break
    return [torch.stack(outs).sum().item()]


if __name__ == "__main__":  # run as a script: the workload as its author would start it
    print(run(setup("small"), 10))
