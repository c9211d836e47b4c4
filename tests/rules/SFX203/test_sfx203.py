"""SFX203 reads what a check reads on the host: a check of a GPU value syncs."""

from __future__ import annotations


def test_a_math_check_of_a_gpu_value_reads_it():
    """SlowFast's ``check_nan_losses``: ``math.isnan(loss)`` converts the tensor with
    ``float()``, a sync every step; it has no exact tensor form here, so no fix."""
    from syncfix import check_code

    src = (
        "import math\nimport torch\n\n\ndef train(loader, opt):\n    for x in loader:\n"
        "        loss = torch.randn(3, device='cuda').mean()\n"
        "        if math.isnan(loss):\n            raise RuntimeError('nan')\n"
        "        if not math.isfinite(loss):\n            raise ValueError\n        opt.step()\n"
    )
    found = check_code(src, select=["SFX203"], unsafe_fixes=True)
    assert [(f.line, f.fix) for f in found] == [(8, None), (10, None)]
    # of a Python number, nothing is read
    assert check_code(src.replace("torch.randn(3, device='cuda').mean()", "float(len(x))"), select=["SFX203"]) == []
