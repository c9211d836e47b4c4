"""Legacy tensor types (``torch.cuda.FloatTensor``) and names bound to them, as PyTorch-GAN's
scripts use them in every step: ``Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor``,
``imgs.type(Tensor)`` (SFX101) and ``Tensor(np.random.normal(...))`` (SFX102)."""

from __future__ import annotations

import pytest

from syncfix import check_code

GAN = """\
import numpy as np
import torch

cuda = True if torch.cuda.is_available() else False
Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
Host = torch.FloatTensor
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(10, 3)), batch_size=2)


def train(generator, model):
    for i, (imgs,) in enumerate(loader):
        real = imgs.type(Tensor)
        also = imgs.type(torch.cuda.FloatTensor)
        kept = imgs.type(Host)
        z = Tensor(np.random.normal(0, 1, (imgs.shape[0], 8)))
        valid = Tensor(imgs.size(0), 1).fill_(1.0)
        model.type(Tensor)
        fake = generator(z)
        again = fake.type(Tensor)
"""


def _found(code: str) -> dict[int, str]:
    return {f.line: f.message for f in check_code(GAN, path="gan.py") if f.code == code}


def test_a_copy_by_type_to_a_cuda_type_or_an_alias_of_one_is_reported_without_a_fix():
    found = _found("SFX101")
    assert sorted(found) == [12, 13]  # not the CPU type, a module, or a tensor on CUDA already
    assert "where `Tensor` is CUDA's" in found[12] and "no fix" in found[12]
    assert "where" not in found[13].split("(`.type")[1].split(";")[0]
    assert all(f.fix is None for f in check_code(GAN, path="gan.py", unsafe_fixes=True) if f.code == "SFX101")


def test_a_legacy_constructor_of_host_data_through_an_alias_is_reported_and_one_of_sizes_is_not():
    found = _found("SFX102")
    assert sorted(found) == [15]
    assert "`Tensor` (CUDA's `FloatTensor`, where its condition picks the CUDA type) of host data" in found[15]
    named = GAN.replace("Tensor = torch", "FloatTensor = torch").replace("Tensor(", "FloatTensor(")
    (message,) = [f.message for f in check_code(named, path="gan.py") if f.code == "SFX102"]
    assert "`FloatTensor` (CUDA's, where its condition picks the CUDA type) of host data" in message


def test_a_tensor_made_by_an_alias_of_a_cuda_type_is_on_cuda_or_the_cpu():
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    from syncfix.analysis import Device, ModuleAnalysis

    analysis = ModuleAnalysis(MetadataWrapper(cst.parse_module(GAN), unsafe_skip_copy=True), source=GAN)
    calls = {analysis.module.code_for_node(n): n for n in analysis.structure.of_type(cst.Call)}
    valid = analysis.value(calls["Tensor(imgs.size(0), 1)"])
    assert valid.is_tensor and valid.device is Device.CUDA_OR_CPU and valid.dtype == "torch.float32"
    assert analysis.legacy_type(calls["Tensor(imgs.size(0), 1)"].func) == ("FloatTensor", Device.CUDA_OR_CPU)
    host = analysis.legacy_type(calls["imgs.type(Host)"].args[0].value)
    assert host == ("FloatTensor", Device.CPU)


@pytest.mark.cuda
def test_the_lines_reported_sync_and_the_sizes_constructor_does_not():
    # why ``imgs.type(Tensor)`` and ``Tensor(np_array)`` are reported and ``Tensor(n, 1)`` is not
    import numpy as np

    from ..support import count_syncs

    torch = pytest.importorskip("torch")
    tensor_type = torch.cuda.FloatTensor
    imgs = torch.rand(64, 3, 32, 32)
    noise = np.random.normal(0, 1, (64, 100))

    def three(make):
        return lambda: [make() for _ in range(3)]

    by_type = count_syncs(three(lambda: imgs.type(tensor_type)))[1]
    by_data = count_syncs(three(lambda: tensor_type(noise)))[1]
    by_sizes = count_syncs(three(lambda: tensor_type(64, 1).fill_(1.0)))[1]
    print(f"syncs over 3 steps: .type(Tensor) {by_type}, Tensor(array) {by_data}, Tensor(n, 1) {by_sizes}")
    assert by_type >= 3 and by_data >= 3 and by_sizes == 0
