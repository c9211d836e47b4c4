"""Sizes taken for ints in the likely view (syncfix/analysis/sizes.py)."""

from __future__ import annotations

import pytest

from tests.test_analysis import analyse, last_name


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("b, c, h, w = x.shape\nuse(h)", True),
        ("n = x.size(0)\nuse(n)", True),
        ("n = x.numel()\nuse(n)", True),
        ("n, d = x.shape[-2], x.device\nuse(n)", True),
        ("n = len(xs)\nuse(n)", True),
        ("b, *rest = x.shape\nuse(rest)", False),  # a list
        ("(b, c), h = x.shape, 3\nuse(b)", False),  # nested: not one item of the shape
        ("n = x.size()\nuse(n)", False),  # a torch.Size
        ("n = x.sum()\nuse(n)", False),
        ("n = x.size(0)\nif cond:\n    n = x\nuse(n)", False),  # another binding may reach
        ("def f(n):\n    use(n)", False),
    ],
)
def test_likely_size_follows_names(src: str, expected: bool) -> None:
    a, module = analyse(src)
    name = "rest" if "rest" in src else "b" if "use(b)" in src else "h" if "use(h)" in src else "n"
    assert a.likely_size(last_name(module, name), follow=True) is expected


def test_a_size_is_not_followed_without_asking() -> None:
    a, module = analyse("n = x.size(0)\nuse(n)")
    assert not a.likely_size(last_name(module, "n"))
