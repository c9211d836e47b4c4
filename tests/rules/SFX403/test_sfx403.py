"""SFX403's lazy logging arguments render the same text (run on CPU tensors)."""

from __future__ import annotations

import pytest

from syncfix import fix_code

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "bool"])
def test_sfx403_lazy_arguments_render_the_same_text(dtype):
    import logging

    source = (
        "import logging\nimport torch\n"
        'dev = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "log = logging.getLogger('sfx403')\n\n\n"
        "def f():\n"
        f"    t = torch.tensor([1, 0, 3], device=dev).to(torch.{dtype}).flatten()\n"
        "    log.warning(f'values {t} at 50% and {t}')\n"
    )
    fixed = fix_code(source, select=["SFX403"])
    assert "'values %s at 50%% and %s', t, t" in fixed
    messages = []

    class Keep(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())

    logger = logging.getLogger("sfx403")
    handler = Keep()
    logger.addHandler(handler)
    try:
        for code in (source, fixed):
            namespace: dict = {}
            exec(compile(code, "<sfx403>", "exec"), namespace)
            namespace["f"]()
    finally:
        logger.removeHandler(handler)
    assert len(messages) == 2 and messages[0] == messages[1]
