"""SFX404 (read-after-loop): its own tests; the fixtures are checked by tests/rules/test_rules.py."""

from __future__ import annotations

from syncfix import check_code, fix_code

NESTED = '''import torch
def f(runs: torch.Tensor):
    out = []
    for run in runs.cuda():
        for x in run:
            s = x.float().sum()
            out.append(s.item())
        print(len(out))
    return out
'''


def test_the_store_restarts_with_each_run_of_an_inner_loop():
    # `out` is read after the inner loop in every outer iteration: the store must start empty
    # each time the inner loop starts, or the second replay would append the first run again.
    fixed = fix_code(NESTED, select=["SFX404"])
    lines = fixed.splitlines()
    assert "        out_values = []" in lines
    assert lines.index("        out_values = []") < lines.index("        for x in run:")
    assert "    out_values = []" not in lines


def test_reads_of_one_tensor_share_one_value():
    source = NESTED.replace("out.append(s.item())", 'out.append(f"{s.item()} {s.item():.2f}")')
    fixed = fix_code(source, select=["SFX404"])
    assert "out_values.append(s.detach())" in fixed
    assert 'out.append(f"{s_value} {s_value:.2f}")' in fixed


def test_no_fix_says_why():
    source = NESTED.replace("            out.append(s.item())\n", "            out.append(s.item())\n            s.add_(1)\n")
    (finding,) = check_code(source, select=["SFX404"])
    assert finding.fix is None and "`s` may change before the loop ends" in finding.message


ON_DEVICE = '''
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"


def _stats(xs, steps):
    logged = []
    for step in range(steps):
        x = xs[step % 3].to(device)
        n = (x > 0).sum()
        m = x.float().mean()
        logged.append((n.item(), m.item(), "|"))
        logged.append(f"{m.item():.3f}")
    return logged


def f(steps: int):
    torch.manual_seed(0)
    return _stats(torch.randn(3, 50), steps), _stats(torch.randn(3, 50), 0)
'''


def test_the_replayed_list_is_the_same_on_the_cpu_too():
    # `device` is CUDA or the CPU; on the CPU the rewrite must give the very same list: the same
    # Python ints and floats (an int64 count and a float32 mean read from separate stores).
    from ..support import assert_same_result, load

    fixed = fix_code(ON_DEVICE, select=["SFX404"])
    assert "logged_values_2" in fixed  # one store per dtype kind
    before, after = load(ON_DEVICE, "f")(7), load(fixed, "f")(7)
    assert_same_result(before, after)
    assert [type(v) for v in after[0][0]] == [int, float, str]


LOSSES = '''import torch
def losses(reals):
    out = []
    for dr in reals:
        r_loss = torch.mean((1 - dr) ** 2)
        out.append(r_loss.item())
    return out
'''


def test_a_finding_without_a_fix_names_every_fact_it_lacks():
    # hifi-gan's discriminator loss: neither the dtype nor the device of `r_loss` is known, and
    # the advice covers both (it named only the dtype, and `.float()` then met the device)
    from syncfix.advice import Explainer

    (finding,) = check_code(LOSSES, select=["SFX404"])
    assert finding.fix is None
    assert "dtype is not provably floating, integer or bool, and it is not provably on one device" in finding.message
    advice = Explainer([finding], unsafe_fixes=True).why_no_fix(finding)
    assert advice is not None and "give the tensor a known dtype" in advice
    assert "place its tensors with one device expression the loop does not change" in advice
    (finding,) = check_code(LOSSES.replace("** 2)", "** 2).float()"), select=["SFX404"])
    advice = Explainer([finding], unsafe_fixes=True).why_no_fix(finding)
    assert "dtype" not in finding.message and advice is not None and "one device expression" in advice
    assert "dtype" not in advice and "both tensors" not in advice  # there is one tensor


def test_a_list_nothing_reads_says_the_reads_are_needless():
    # SimCSE's SentEval: `all_costs.append(loss.item())` each step, `all_costs` never read
    unread = '''import torch
def f(runs: torch.Tensor):
    costs = []
    for x in runs.cuda():
        s = x.float().sum()
        costs.append(s.item())
'''
    (finding,) = check_code(unread, select=["SFX404"])
    assert "nothing reads the list (`costs`) afterwards" in finding.message
    (read,) = check_code(unread + "    return costs\n", select=["SFX404"])
    assert read.message.startswith("GPU values read into a list every iteration; the list is read only after the loop")
