"""SFX303's one ``tolist()`` keeps every value and Python type: original and rewritten snippets
(rewritten by ``syncfix.fix_code``) run on CPU tensors and must return exactly the same."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncfix import fix_code

from ..support import FLOATS, HEADER, INTS, KIND, load, run_snippet, same, value_of

torch = pytest.importorskip("torch")

# a dtype of every kind and values a tensor of it holds (edges included)
_DTYPE_VALUES = st.sampled_from((*FLOATS, *INTS, "bool")).flatmap(
    lambda d: st.tuples(st.just(d), st.lists(value_of(d), max_size=6))
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _DTYPE_VALUES,
    st.sampled_from(("{v}.item()", "{v}.tolist()", "float({v})", "int({v})", "bool({v})")),
)
def test_sfx303_tolist_is_exact(data, form):
    dtype, values = data
    literals = [repr(float(v)) if KIND[dtype] == "float" else repr(v) for v in values]
    source = HEADER + (
        "def f():\n"
        f"    x = torch.tensor([{', '.join(literals)}], dtype=torch.{dtype}, device=dev).flatten()\n"
        f"    return [{form.format(v='v')} for v in x]\n"
    )
    fixed = fix_code(source, select=["SFX303"])
    assert ".tolist()" in fixed and " for v in x]" not in fixed, source
    before, after = run_snippet(source), run_snippet(fixed)
    assert before[0] == after[0] and same(before[1:], after[1:]), (source, fixed, before, after)



ROWS = HEADER + (
    "def f(x):\n"
    "    for _ in range(2):\n"
    "        tokens = torch.clone(x)  # a tensor of unknown rank and device\n"
    "        vals = [t.item() for t in tokens]\n"
    "    return vals\n"
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _DTYPE_VALUES,
    st.sampled_from(((), (1,), (1, 1), (2,))),
)
def test_sfx303_rows_of_unknown_rank_read_once_is_exact(case, tail):
    # `[t.item() for t in tokens]` -> `tokens.reshape(len(tokens)).tolist()` (unsafe): the same
    # values and types for rows of one element whatever the rank and dtype; rows of two raise
    # a RuntimeError in both
    dtype, values = case
    fixed = fix_code(ROWS, select=["SFX303"], unsafe_fixes=True)
    assert "tokens.reshape(len(tokens)).tolist()" in fixed, fixed
    assert fix_code(ROWS, select=["SFX303"]) == ROWS  # never a safe fix
    data = torch.tensor(values, dtype=getattr(torch, dtype)).reshape(len(values), *([1] * len(tail)))
    if tail == (2,):
        data = torch.cat([data.reshape(len(values), 1)] * 2, dim=1)
    outcomes = []
    for code in (ROWS, fixed):
        try:
            outcomes.append(("ok", load(code, "f")(data)))
        except RuntimeError:
            outcomes.append(("raised", RuntimeError))
    assert outcomes[0][0] == outcomes[1][0], outcomes
    if outcomes[0][0] == "ok":
        assert same(outcomes[0][1], outcomes[1][1]), (values, outcomes)


LOOP = HEADER + (
    "def f(x: torch.Tensor):\n"
    "    seen = ()\n"
    "    for v in x.flatten():\n"
    "        seen = seen + (v.item(),)\n"
    "    return seen\n"
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _DTYPE_VALUES,
)
def test_sfx303_loop_over_a_1d_tensor_read_once_is_exact(case):
    # `for v in x.flatten(): ... v.item()` -> `for v in x.flatten().tolist(): ... v` (safe)
    dtype, values = case
    fixed = fix_code(LOOP, select=["SFX303"])
    assert "for v in x.flatten().tolist():" in fixed and "v.item()" not in fixed, fixed
    data = torch.tensor(values, dtype=getattr(torch, dtype))
    assert same(load(LOOP, "f")(data), load(fixed, "f")(data)), values


PARTS = (
    "import torch\n"
    "class Sampler:\n"
    "    def update(self, data, sizes):\n"
    "        batches = [torch.zeros(data.shape[1]).to(data) for _ in sizes]\n"
    "        for i, b in enumerate(batches):\n"
    "            b.copy_(data[i])  # as `all_gather` fills them\n"
    "        values = [x.item() for y, bs in zip(batches, sizes) for x in y[:bs]]\n"
    "        return values\n"
    "def f(data, sizes):\n"
    "    return Sampler().update(data, sizes)\n"
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _DTYPE_VALUES,
    st.lists(st.integers(min_value=0, max_value=6), max_size=4),
)
def test_sfx303_parts_read_with_one_cat_are_exact(case, sizes):
    # `[x.item() for y, bs in zip(batches, sizes) for x in y[:bs]]` -> one `torch.cat` of the
    # parts (unsafe): the same values, types and order for 1-D tensors of one dtype, and `[]`
    # for no parts or empty parts
    dtype, values = case
    fixed = fix_code(PARTS, select=["SFX303"], unsafe_fixes=True)
    assert "torch.cat(" in fixed, fixed
    assert fix_code(PARTS, select=["SFX303"]) == PARTS  # never a safe fix
    row = torch.tensor(values, dtype=getattr(torch, dtype))
    data = torch.stack([row] * len(sizes)) if sizes else torch.zeros(0, len(values))
    before, after = load(PARTS, "f")(data, sizes), load(fixed, "f")(data, sizes)
    assert same(before, after), (values, sizes, before, after)


GATHERED = (
    "import torch\n"
    "import torch.distributed as dist\n"
    "class Sampler:\n"
    "    def update(self, local_ts, local_losses):\n"
    "        sizes = [\n"
    "            torch.tensor([0], dtype=torch.int32, device=local_ts.device)\n"
    "            for _ in range(dist.get_world_size())\n"
    "        ]\n"
    "        dist.all_gather(sizes, torch.tensor([len(local_ts)], dtype=torch.int32, device=local_ts.device))\n"
    "        sizes = [x.item() for x in sizes]\n"
    "        max_bs = max(sizes)\n"
    "        ts_batches = [torch.zeros(max_bs).to(local_ts) for _ in sizes]\n"
    "        loss_batches = [torch.zeros(max_bs).to(local_losses) for _ in sizes]\n"
    "        dist.all_gather(ts_batches, local_ts)\n"
    "        dist.all_gather(loss_batches, local_losses)\n"
    "        timesteps = [x.item() for y, bs in zip(ts_batches, sizes) for x in y[:bs]]\n"
    "        losses = [x.item() for y, bs in zip(loss_batches, sizes) for x in y[:bs]]\n"
    "        return sizes, timesteps, losses\n"
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(INTS),
    _DTYPE_VALUES.filter(lambda c: c[0] != "bool"),
    st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=4),
)
def test_sfx303_gathered_lists_read_at_once_are_exact(ts_dtype, losses_case, rank_sizes):
    # the pattern of a loss-aware sampler: per-rank sizes gathered, then padded batches; the
    # safe rewrite (one stack, then one cat per list) must give the same ints and floats. A fake
    # `all_gather` fills each rank's tensor in place, as the real one does.
    from unittest import mock

    import torch.distributed as dist

    fixed = fix_code(GATHERED, select=["SFX303"])
    assert fixed.count(".tolist()") == 3 and "x.item()" not in fixed, fixed
    loss_dtype, values = losses_case
    world = len(rank_sizes)
    mine = rank_sizes[0]
    local_ts = torch.arange(mine, dtype=getattr(torch, ts_dtype))
    local_losses = torch.tensor((values * 6)[:mine], dtype=getattr(torch, loss_dtype)) if values else None
    if local_losses is None or len(local_losses) < mine:
        local_losses = torch.zeros(mine, dtype=getattr(torch, loss_dtype))

    def all_gather(out, tensor):
        for rank, o in enumerate(out):
            if o.numel() == 1:
                o.fill_(rank_sizes[rank])  # each rank's size
            else:
                o.copy_(torch.arange(o.numel()).to(o.dtype) * (rank + 1))

    results = []
    for code in (GATHERED, fixed):
        with mock.patch.object(dist, "all_gather", all_gather), mock.patch.object(
            dist, "get_world_size", lambda: world
        ):
            results.append(load(code, "Sampler")().update(local_ts, local_losses))
    assert same(results[0], results[1]), (fixed, results)


DICT = HEADER + (
    "def f(d: dict):\n"
    "    for _ in range(2):\n"
    "        out = {k: v.detach().cpu().item() for k, v in d.items()}\n"
    "    return out\n"
)

DICT_LOOP = HEADER + (
    "def f(d: dict):\n"
    "    out = {}\n"
    "    for _ in range(2):\n"
    "        for k, v in d.items():\n"
    "            out[k] = v.detach().cpu().item()\n"
    "    return out\n"
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_DTYPE_VALUES, st.sampled_from(((), (1,), (1, 1))), st.sampled_from((DICT, DICT_LOOP)))
def test_sfx303_dict_values_read_with_one_stack_are_exact(case, shape, source):
    # `{k: v.detach().cpu().item() for k, v in d.items()}` (or the same in a `for` loop) -> one
    # stack of the values (unsafe): for one-element tensors of one dtype, the same keys, order,
    # values and Python types
    dtype, values = case
    fixed = fix_code(source, select=["SFX303"], unsafe_fixes=True)
    assert "torch.stack([v.detach().reshape(()) for v in d.values()]).tolist() if d else []" in fixed, fixed
    assert fix_code(source, select=["SFX303"]) == source  # never a safe fix
    d = {f"k{i}": torch.tensor(v, dtype=getattr(torch, dtype)).reshape(shape) for i, v in enumerate(values)}
    before, after = load(source, "f")(d), load(fixed, "f")(d)
    assert list(before) == list(after) and same(list(before.values()), list(after.values())), (before, after)


DICT_LOOP_KEPT = HEADER + (
    "def f(d: dict):\n"
    "    out = []\n"
    "    for _ in range(2):\n"
    "        for k, v in d.items():\n"
    "            out.append((k, v.sum().item()))\n"
    "            out.append((v.shape, v.dtype))\n"
    "    out.append(v.shape if d else None)\n"
    "    return out\n"
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_DTYPE_VALUES, st.sampled_from(((), (1,), (1, 1))))
def test_sfx303_dict_loop_keeping_the_tensor_is_exact(case, shape):
    # `for k, v in d.items():` whose body uses `v` again after the read: the loop keeps `v` and
    # names the read (`for (k, v), v_sum in zip(d.items(), <stack>)`): the same output, types
    # and tensor after the loop
    dtype, values = case
    fixed = fix_code(DICT_LOOP_KEPT, select=["SFX303"], unsafe_fixes=True)
    assert "for (k, v), v_sum in zip(d.items(), torch.stack([v.sum().reshape(()) for v in d.values()])" in fixed, fixed
    d = {f"k{i}": torch.tensor(v, dtype=getattr(torch, dtype)).reshape(shape) for i, v in enumerate(values)}
    before, after = load(DICT_LOOP_KEPT, "f")(d), load(fixed, "f")(d)
    for x, y in zip(before, after, strict=True):
        read = type(x) is tuple and len(x) == 2 and isinstance(x[0], str)  # (key, value read)
        assert type(x) is type(y) and (same([x[1]], [y[1]]) if read else x == y), (x, y)


def test_reads_of_values_syncfix_cannot_name_are_hedged():
    # a tokenizer's outputs are CPU tensors: "one sync each" holds only if they are on a GPU
    from syncfix import check_code

    src = (
        "import torch\n\n\n"
        "def step(tokenized_list, pad):\n"
        "    return [t.input_ids.ne(pad).sum().item() for t in tokenized_list]\n"
    )
    (finding,) = check_code(src, select=["SFX303"])
    assert "if the tensors are on a GPU" in finding.message, finding.message


def test_a_loop_whose_body_writes_the_mapping_gets_no_fix_of_any_kind():
    """The rest of the body runs before the next value's read: reading every value up front
    would not see what it writes (here, zeroes)."""
    from pathlib import Path

    from syncfix import fix_code

    src = (Path(__file__).parent / "fixtures/dict_loop_body_writes_values_untouched.in.py").read_text()
    assert fix_code(src, select=["SFX303"], unsafe_fixes=True) == src
    # with the write before the read it was already refused; a read-only body still gets it
    read_only = src.replace("        for other in stats.values():\n            other.zero_()\n", "")
    assert "torch.stack" in fix_code(read_only, select=["SFX303"], unsafe_fixes=True)


def test_a_read_in_an_if_test_runs_every_time_round():
    """The test of an ``if`` runs every time round (llm.c's ``if all(eos_reached):``); its body
    only when the test lets it."""
    from syncfix import check_code

    src = (
        "import torch\n\n\ndef generate(model, tokens, steps, eos_reached: torch.Tensor):\n"
        "    for _ in range(steps):\n"
        "        tokens = model(tokens)\n"
        "        if all(eos_reached):\n"
        "            break\n"
    )
    (f,) = check_code(src, select=["SFX303"])
    assert "that is, every iteration of its loop" in f.message


def test_a_tensordict_of_losses_gets_no_stack_fix():
    # torchrl's PPO script (ppo_mujoco.py): `losses_mean = losses.apply(...)` of a TensorDict;
    # the fix's `if losses_mean else []` would raise ("Converting a tensordict to boolean value
    # is not permitted")
    src = (
        "import torch\nfrom tensordict import TensorDict\n\n\ndef train(collector, loss_module, logger):\n"
        "    losses = TensorDict(batch_size=[4])\n    for i, data in enumerate(collector):\n"
        "        metrics_to_log = {}\n        losses[0] = loss_module(data)\n"
        "        losses_mean = losses.apply(lambda x: x.float().mean(), batch_size=[])\n"
        "        for key, value in losses_mean.items():\n"
        "            metrics_to_log.update({f'train/{key}': value.item()})\n        logger.log(metrics_to_log)\n"
    )
    assert fix_code(src, select=["SFX303"], unsafe_fixes=True) == src
    # the same loop over a plain dict of losses gets the unsafe stack fix
    plain = src.replace("        losses_mean = losses.apply(lambda x: x.float().mean(), batch_size=[])\n",
                        "        losses_mean = {'a': loss_module(data).mean(), 'b': loss_module(data).sum()}\n")
    assert "torch.stack(" in fix_code(plain, select=["SFX303"], unsafe_fixes=True)


def test_a_read_per_key_of_a_dict_comprehension_is_reported():
    # DETR's evaluate: ``res = {target['image_id'].item(): output for target, output in zip(...)}``
    # every batch; a key that reads nothing leaves the value's reads to be found
    from syncfix import check_code

    src = (
        "import torch\n\n\ndef evaluate(model, loader):\n    for samples, targets in loader:\n"
        "        results = model(samples)\n"
        "        res = {t['image_id'].item(): out for t, out in zip(targets, results)}\n"
        "        kept = {str(k): v.item() + 1 for k, v in zip(targets, results)}\n"
        "        print(res, kept)\n"
    )
    found = sorted(f.line for f in check_code(src, path="eval.py") if f.code == "SFX303")
    assert found == [7, 8]
