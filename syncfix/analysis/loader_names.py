"""Names that read as a data loader's, or its batches' (``train_loader``, ``pbar``, ``batch``),
and not as model outputs' (``batch_outputs``, ``gpu_data``): a likely fact about code syncfix
cannot see, used by the likely batch items (devices.py) and the project index (hotness.py).
"""

from __future__ import annotations

import re

# Parts of the names loaders, datasets, their progress bars and batches go by, and of names that
# say the items are something else (model outputs, features, parameters...).
_LOADER_WORDS = ("loader", "data", "batch", "pbar", "prefetch", "sampler")
_LOADER_TOKENS = frozenset({
    "dl", "dls", "ds", "it", "iter", "iterator", "bar", "tbar", "gen", "generator", "set", "trainset",
    "testset", "valset", "train", "val", "valid", "test", "eval", "epoch", "tepoch",
})
_NOT_LOADER_TOKENS = frozenset({
    "out", "outs", "output", "outputs", "pred", "preds", "prediction", "predictions", "result",
    "results", "gpu", "cuda", "feat", "feats", "feature", "features", "logit", "logits", "grad",
    "grads", "param", "params", "weight", "weights", "module", "modules", "layer", "layers",
    "model", "models", "hidden", "cache", "args", "kwargs", "loss", "losses",
})
# Parts that name a loader outright.
_LOADERS = frozenset({"loader", "loaders", "dataloader", "dataloaders"})
_NAME_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def loader_like(name: str) -> bool:
    """Does ``name`` read as a loader's (``train_loader``, ``self.data``, ``pbar``, ``trainDL``)
    and not as model outputs' (``batch_outputs``, ``gpu_data``)?"""
    parts = {p.lower() for p in _NAME_PARTS.findall(name)}
    if parts & _LOADERS:
        return True  # ``pred_loader``, ``test_model_loader``: a loader, whatever else it says
    if parts & _NOT_LOADER_TOKENS:
        return False
    lowered = name.lower()
    return any(w in lowered for w in _LOADER_WORDS) or bool(parts & _LOADER_TOKENS)


# Parts that name what yields batches (a loader, an iterator, a progress bar), not a batch.
_YIELDERS = _LOADERS | frozenset({
    "dl", "dls", "ds", "it", "iter", "iterator", "bar", "tbar", "pbar", "gen", "generator", "set",
    "trainset", "testset", "valset", "sampler", "prefetcher", "dataset", "datasets",
})


def batch_like(name: str) -> bool:
    """Does ``name`` read as a batch's (``train_data``, ``batch``, ``val_data``), not as what
    yields batches (``val_loader``, ``pbar``, ``train_set``)?"""
    parts = {p.lower() for p in _NAME_PARTS.findall(name)}
    return loader_like(name) and not parts & _YIELDERS and "prefetch" not in name.lower()
