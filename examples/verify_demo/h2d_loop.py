"""syncfix verify demo: a blocking host-to-device copy in every step.

    syncfix verify examples/verify_demo/h2d_loop.py \
        --fixer examples/verify_demo/planted_fixers.py:non_blocking_h2d -- --steps 200

The batch is a fresh pageable CPU tensor, so ``.to("cuda", non_blocking=True)`` gives the same
numbers, and the host no longer waits, every step, for the GPU to finish the previous step before
it queues the next one. Rule SFX101 flags the copy (whether it offers a fix is the rule's call;
the planted fixer rewrites it unconditionally). A large pageable batch is still staged
synchronously by the driver, a sync no PyTorch hook sees: try ``--batch 1024`` and compare the
sync counts with the times.
"""

import argparse

import torch

from syncfix.verify import record


def main(steps: int, batch: int, size: int, depth: int) -> None:
    w = torch.randn(size, size, device="cuda") / size**0.5
    acc = torch.zeros((), device="cuda")
    for _ in range(steps):
        x = torch.randn(batch, size).cuda()  # blocking copy: waits for all queued GPU work
        for _ in range(depth):
            x = torch.tanh(x @ w)
        acc += x.square().mean()
    record("acc", acc)
    print(f"acc {acc.item():.8f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--depth", type=int, default=16)
    args = parser.parse_args()
    main(args.steps, args.batch, args.size, args.depth)
