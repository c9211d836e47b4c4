"""SFX105 advises a non-blocking copy and one wait only where the copied value is only
collected: not where the loop reads the container again (it would read an unfilled buffer)."""

from __future__ import annotations

from syncfix.api import check_code

LOOP = """\
import torch


def log_images(images: dict, clamp: bool):
    for k in images:
        if isinstance(images[k], torch.Tensor):
            images[k] = images[k].detach().float().cpu()
{after}
    return images


def step(images):
    for _ in range(3):
        log_images(images, True)
"""


def _message(after: str) -> str:
    (found,) = [f for f in check_code(LOOP.format(after=after), path="train.py") if f.code == "SFX105"]
    return found.message


def test_a_container_read_again_in_the_loop_is_not_only_collected():
    read = "            if clamp:\n                images[k] = torch.clamp(images[k], -1.0, 1.0)"
    assert "only collected" not in _message(read)


def test_a_container_only_written_in_the_loop_is_collected():
    assert "the value is only collected here" in _message("")
