"""SFX105 leaves a read to the rule that reports it, and to none that does not."""

from __future__ import annotations

from syncfix import check_code

WARM = """\
import sys

import torch


def train(model, loader, opt, warmup):
    for i, (x, y) in enumerate(loader):
        x = x.to("cuda", non_blocking=True)
        loss = torch.nn.functional.mse_loss(model(x), y.to("cuda", non_blocking=True))
        loss.backward()
        opt.step()
        if i < warmup:
            print("warm-up loss %f" % loss.item())
            continue
        if i % 100 == 0:
            print("loss %f" % loss.item())
        if not loss.isfinite():
            print("loss is %f, stopping" % loss.item())
            sys.exit(1)
"""


def test_a_log_under_a_warm_up_test_is_reported_and_one_every_n_steps_is_left_to_sfx402():
    # ESRGAN's warm-up: ``if batches_done < opt.warmup_batches: print(... loss_pixel.item())``
    # runs every step it lets through; no logging rule reports it, so SFX105 does
    found = {f.line: f.code for f in check_code(WARM, path="train.py")}
    # a log on the way out (dino's non-finite loss, then ``sys.exit(1)``) runs once
    assert {line: code for line, code in found.items() if code != "SFX206"} == {13: "SFX105", 16: "SFX402"}
