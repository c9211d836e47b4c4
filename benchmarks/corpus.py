"""Write a realistic, deterministic PyTorch code base of about N lines (committed as code, not data).

    python benchmarks/corpus.py OUT_DIR --lines 100000 [--seed 0]

The mix follows what a research repository looks like: model files (nn.Module classes), training
and evaluation scripts with loops, logging and transfers, data utilities, and plain Python files
that never mention torch (configs, CLI glue, string utilities). About a third of the files have
something for syncfix to find.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

MODEL = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Block{i}(nn.Module):
    """A residual MLP block."""

    def __init__(self, dim: int = {dim}, hidden: int = {hidden}, p: float = 0.1):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        h = self.fc2(self.drop(F.gelu(self.fc1(self.norm(x)))))
        return x + h


class Model{i}(nn.Module):
    def __init__(self, depth: int = {depth}, dim: int = {dim}):
        super().__init__()
        self.blocks = nn.ModuleList(Block{i}(dim) for _ in range(depth))
        self.head = nn.Linear(dim, {classes})

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x.mean(dim=1))
'''

TRAIN = '''import logging
import time

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

log = logging.getLogger(__name__)
device = "cuda" if torch.cuda.is_available() else "cpu"


def train_{i}(model, dataset, epochs: int = {epochs}, lr: float = {lr}):
    loader = DataLoader(dataset, batch_size={batch}, shuffle=True, num_workers=2)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    step = 0
    for epoch in range(epochs):
        running = 0.0
        start = time.perf_counter()
        for x, y in loader:
            x = x.to(device)
            y = y.cuda()
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            acc = (logits.argmax(-1) == y).float().mean()
            print(f"epoch {{epoch}} step {{step}} loss {{loss.item():.4f}} acc {{acc.item():.3f}}")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            running += loss.item()
            if step % 50 == 0:
                log.info("grad norm %.3f", norm.item())
            step += 1
        log.info("epoch %d took %.1fs, mean loss %.4f", epoch, time.perf_counter() - start, running / max(step, 1))


@torch.no_grad()
def evaluate_{i}(model, dataset):
    total, correct, seen = 0.0, 0, 0
    for x, y in DataLoader(dataset, batch_size={batch}):
        x, y = x.to(device), y.to(device)
        logits = model(x)
        total += F.cross_entropy(logits, y, reduction="sum").item()
        correct += (logits.argmax(-1) == y).sum().item()
        seen += len(y)
    return total / seen, correct / seen
'''

UTIL = '''import torch


def make_mask_{i}(lengths, max_len: int = {dim}):
    positions = torch.arange(max_len, device=lengths.device)
    return positions[None, :] < lengths[:, None]


def gather_valid_{i}(x, mask):
    valid = x[mask]
    if valid.numel() == 0:
        return x.new_zeros(())
    return valid.mean()


def to_device_{i}(batch, device="cuda"):
    return {{k: v.cuda() for k, v in batch.items()}}


def schedule_{i}(step: int, warmup: int = {warmup}, base: float = {lr}) -> float:
    if step < warmup:
        return base * (step + 1) / warmup
    return base * 0.5 ** ((step - warmup) // 1000)
'''

PLAIN = '''"""Configuration and glue code: no torch here."""

import argparse
import dataclasses
import json
import os


@dataclasses.dataclass
class Config{i}:
    name: str = "run{i}"
    lr: float = {lr}
    batch_size: int = {batch}
    epochs: int = {epochs}
    tags: tuple = ("a", "b")

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)


def parse_args_{i}(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--lr", type=float, default={lr})
    p.add_argument("--batch-size", type=int, default={batch})
    p.add_argument("--out", default=os.path.join("runs", "exp{i}"))
    return p.parse_args(argv)


def slugify_{i}(text: str) -> str:
    out = []
    for ch in text.lower():
        if ch.isalnum():
            out.append(ch)
        elif out and out[-1] != "-":
            out.append("-")
    return "".join(out).strip("-")
'''

KINDS = [("models", MODEL, 2), ("train", TRAIN, 2), ("utils", UTIL, 2), ("config", PLAIN, 3)]


def generate(out: Path, lines: int, seed: int = 0) -> tuple[int, int]:
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    total = files = 0
    i = 0
    weights = [w for _, _, w in KINDS]
    while total < lines:
        folder, template, _ = rng.choices(KINDS, weights)[0]
        params = dict(
            i=i, dim=rng.choice([128, 256, 512]), hidden=rng.choice([512, 1024]),
            depth=rng.randint(2, 8), classes=rng.choice([10, 100, 1000]), epochs=rng.randint(1, 30),
            lr=rng.choice([1e-3, 3e-4, 0.1]), batch=rng.choice([32, 64, 256]), warmup=rng.randint(10, 500),
        )
        # Repeat the template body a few times per file so files have realistic lengths.
        reps = rng.randint(1, 4)
        text = template.format(**params)
        head, _, body = text.partition("\n\n\n")
        chunks = [body.replace(f"_{i}(", f"_{i}_{r}(").replace(f"{i}(", f"{i}_{r}(") for r in range(reps)]
        text = head + "\n\n\n" + "\n\n".join(chunks)
        path = out / folder / f"{folder}_{i:06d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        total += text.count("\n")
        files += 1
        i += 1
    return files, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    files, lines = generate(args.out, args.lines, args.seed)
    print(f"wrote {files} files, {lines} lines to {args.out}")


if __name__ == "__main__":
    main()
