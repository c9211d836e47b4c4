"""A training script whose loader and device come from a config and a registry, as in larger code
bases: no static analysis can tell what the batches are or which device ``device`` names, so the
batch copies get a finding and no safe fix. A recorded run can show it:

    syncfix trace examples/train_from_config.py --record        # what the values were
    syncfix apply --observed examples/train_from_config.py      # fixes those facts justify
    syncfix verify examples/train_from_config.py                # same numbers, fewer syncs

or, in one command, ``syncfix apply examples/train_from_config.py --verify
examples/train_from_config.py`` (records, rewrites in memory, verifies, writes what verified).
"""

import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

DATASETS = {}


def dataset(name):
    """Register a loader builder under ``name`` (the config picks one by name)."""

    def register(fn):
        DATASETS[name] = fn
        return fn

    return register


@dataset("synthetic")
def synthetic(batch_size, dim, batches=60):
    g = torch.Generator().manual_seed(0)
    data = torch.randn(batches * batch_size, dim, generator=g)
    labels = (data[:, 0] > 0).long()
    return DataLoader(TensorDataset(data, labels), batch_size=batch_size)


def train(model, loader, opt, device, log_every=20):
    model.train()
    running = 0.0
    for step, (x, y) in enumerate(loader):
        x = x.to(device)
        y = y.to(device)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += loss.item()
        if step % log_every == log_every - 1:
            print(f"step {step + 1} loss {running / log_every:.4f}")
            running = 0.0


def main(config):
    torch.manual_seed(0)
    device = torch.device(config["device"])
    loader = DATASETS[config["data"]](config["batch_size"], config["dim"])
    model = nn.Sequential(nn.Linear(config["dim"], 512), nn.ReLU(), nn.Linear(512, 2)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(config["epochs"]):
        train(model, loader, opt, device)
    try:
        from syncfix.verify import record
    except ImportError:  # run without syncfix installed
        return
    record("weights", [p.detach() for p in model.parameters()])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--config",
        default='{"device": "cuda", "data": "synthetic", "batch_size": 256, "dim": 256, "epochs": 2}',
    )
    main(json.loads(parser.parse_args().config))
