"""What SFX106 says (its fixtures check where it reports)."""

from __future__ import annotations

from pathlib import Path

from syncfix import check_code, fix_code

from ..support import messages_in_loop as _messages

FIXTURES = Path(__file__).parent / "fixtures"


def test_synchronize_before_clock_is_deliberate_timing():
    (msg,) = _messages("    torch.cuda.synchronize()\n    t = time.time()\n", "SFX106")
    assert "deliberate (timing)" in msg and "a clock or timer read follows it" in msg


def test_synchronize_before_monotonic_clock_is_deliberate_timing():
    (msg,) = _messages("    torch.cuda.synchronize()\n    t = time.monotonic()\n", "SFX106")
    assert "deliberate (timing)" in msg


def test_synchronize_before_a_timer_object_is_deliberate_timing():
    # pycls benchmark.py: synchronize(); timer.toc(); SlowFast: synchronize(); meter.iter_tic()
    for timer in ("    timer.toc()\n", "    train_meter.iter_tic()\n", "    stopwatch.stop()\n"):
        (msg,) = _messages(f"    torch.cuda.synchronize()\n{timer}", "SFX106")
        assert "deliberate (timing)" in msg, timer
    for other in ("    meter.stop()\n", "    timer.update(x)\n"):  # a name or a method alone
        (msg,) = _messages(f"    torch.cuda.synchronize()\n{other}", "SFX106")
        assert "deliberate" not in msg, other


def test_synchronize_without_clock_is_not_called_timing():
    (msg,) = _messages("    torch.cuda.synchronize()\n    y = x + 1\n    t = time.time()\n", "SFX106")
    assert "timing" not in msg and "deliberate" not in msg


def test_log_lines_between_synchronize_and_clock_keep_it_timing():
    # Swin-Transformer's throughput(): synchronize(); logger.info(...); tic1 = time.time()
    # PoolFormer's train loop: synchronize(); num_updates += 1; batch_time_m.update(time.time() - end)
    for logs in ("    print('timing')\n", "    logging.info('a')\n    print(x.sum().item())\n", "    num_updates += 1\n", "    total = 0\n"):
        (msg,) = _messages(f"    torch.cuda.synchronize()\n{logs}    t = time.time()\n", "SFX106")
        assert "deliberate (timing)" in msg, logs


def test_gpu_work_or_many_lines_before_the_clock_are_not_timing():
    for between in (
        "    print('a')\n    y = x + 1\n",  # queues GPU work before the clock
        "    print('a')\n    print('b')\n    print('c')\n",  # the clock is not what follows
        "    meter.update(1)\n",  # not a log line: it may queue anything
        "    x += 1\n",  # a tensor's update queues GPU work
    ):
        (msg,) = _messages(f"    torch.cuda.synchronize()\n{between}    t = time.time()\n", "SFX106")
        assert "deliberate" not in msg, between


def test_event_synchronize_then_elapsed_time_is_timing():
    body = (
        "    e = torch.cuda.Event(enable_timing=True)\n    e.synchronize()\n"
        "    out.append(s.elapsed_time(e))\n"
    )
    (msg,) = _messages(body, "SFX106")
    assert msg.startswith("Event.synchronize()") and "deliberate (timing)" in msg


def test_device_synchronize_then_an_events_elapsed_time_is_timing():
    # the device-wide wait completes the end event, which `elapsed_time` needs
    body = (
        "    end = torch.cuda.Event(enable_timing=True)\n    end.record()\n"
        "    torch.cuda.synchronize()\n    total += start.elapsed_time(end) / 1000\n"
    )
    (msg,) = _messages(body, "SFX106")
    assert msg.startswith("torch.cuda.synchronize()") and "deliberate (timing)" in msg


def test_synchronize_under_a_timing_switch_is_deliberate():
    for test in ("args.sync", "self.benchmark", "do_profile", "cfg.timing and i > 0"):
        (msg,) = _messages(f"    if {test}:\n        torch.cuda.synchronize()\n", "SFX106")
        assert "deliberate (timing)" in msg and f"`if {test}:`" in msg, test


def test_synchronize_under_another_condition_is_not_deliberate():
    for test in ("i % 10 == 0", "args.debug", "synced_before", "torch.cuda.is_available()"):
        body = f"    if {test}:\n        torch.cuda.synchronize()\n"
        (msg,) = _messages(body.replace("i %", "len(out) %"), "SFX106")
        assert "deliberate" not in msg, test


def test_a_guarded_synchronize_does_not_say_every_iteration():
    (guarded,) = _messages("    if len(out) % 10 == 0:\n        torch.cuda.synchronize()\n", "SFX106")
    assert "every iteration" not in guarded and "each time it runs" in guarded
    (plain,) = _messages("    torch.cuda.synchronize()\n    y = x + 1\n", "SFX106")
    assert "every iteration" in plain


def test_a_switch_outside_the_loop_does_not_make_it_deliberate():
    code = (
        "import torch\n"
        "def f(args, n):\n"
        "    if args.sync:\n"
        "        for _ in range(n):\n"
        "            torch.cuda.synchronize()\n"
    )
    (finding,) = check_code(code, select=["SFX106"])
    assert "deliberate" not in finding.message


def test_deliberate_fixture_each_sync_says_deliberate_and_nothing_is_rewritten():
    src = (FIXTURES / "deliberate_timing.in.py").read_text()
    findings = check_code(src, select=["SFX106"])
    assert len(findings) == 5
    assert all("deliberate (timing)" in f.message for f in findings)
    assert fix_code(src, select=["SFX106"], unsafe_fixes=True) == src


def test_a_deliberate_sync_gets_no_how_to_fix_advice():
    from syncfix.advice import Explainer
    from syncfix.api import check_code

    src = (
        "import time\nimport torch\n"
        "for step in range(3):\n    torch.cuda.synchronize()\n    t0 = time.perf_counter()\n"
    )
    (finding,) = check_code(src, include_cold=True)
    assert "deliberate (timing)" in finding.message
    assert Explainer([finding], unsafe_fixes=False)(finding) == finding.message


def test_synchronize_ending_a_branch_before_the_clock_is_timing():
    # llm.c: ``if device == "mps": ... elif device == "cuda": torch.cuda.synchronize()``, then
    # ``t1 = time.time()`` after the ``if``
    body = (
        "    if x.is_cuda:\n        torch.cuda.synchronize()\n    t = time.time()\n",
        "    if x.is_mps:\n        pass\n    elif x.is_cuda:\n        torch.cuda.synchronize()\n    t = time.time()\n",
        "    if x.is_mps:\n        pass\n    else:\n        torch.cuda.synchronize()\n    t = time.time()\n",
    )
    for text in body:
        (msg,) = _messages(text, "SFX106")
        assert "deliberate (timing)" in msg, text
    (msg,) = _messages("    if x.is_cuda:\n        torch.cuda.synchronize()\n        y = x + 1\n    t = time.time()\n", "SFX106")
    assert "deliberate" not in msg


def test_a_sync_closing_an_inner_timed_loop_is_not_said_to_stall_it():
    # nanoGPT's bench.py: a burn-in pass, then a timed one; the sync after the inner loop runs
    # once per pass, and the timed steps hold none
    src = (
        "import time\nimport torch\n\ndef bench(step):\n"
        "    for stage, n in enumerate([10, 20]):\n        t0 = time.time()\n"
        "        for k in range(n):\n            step()\n"
        "        torch.cuda.synchronize()\n        t1 = time.time()\n        print(t1 - t0)\n"
    )
    (f,) = check_code(src, select=["SFX106"], include_cold=True)
    assert "deliberate (timing)" in f.message
    assert "stalls every iteration" not in f.message and "once per pass of this loop" in f.message
    # a sync in the timed loop itself does stall each step
    per_step = src.replace("            step()\n", "            step()\n            torch.cuda.synchronize()\n            print(time.time())\n")
    inner = [f for f in check_code(per_step, select=["SFX106"], include_cold=True) if f.line == 9]
    assert inner and "stalls every iteration" in inner[0].message


def test_a_deliberate_sync_under_an_if_does_not_say_it_stalls_every_iteration():
    # modded-nanogpt: the clock stops around each validation, under `if step % every == 0:`
    src = (
        "import time\nimport torch\n\ndef train(step_fn, n, every):\n    t0 = time.time()\n"
        "    for step in range(n):\n        step_fn()\n        if step % every == 0:\n"
        "            torch.cuda.synchronize()\n            t1 = time.time()\n"
    )
    (f,) = check_code(src, select=["SFX106"], include_cold=True)
    assert "deliberate (timing)" in f.message and "where its `if` lets it run" in f.message
    assert "stalls every iteration" not in f.message and "closes the timing" not in f.message


def test_a_deliberate_sync_in_a_loop_that_records_events_says_the_events_suffice():
    # k-diffusion's training loop already records CUDA events around each step: the advice is
    # not to add events, but to stop waiting for them every step
    src = (
        "import torch\n\ndef train(step_fn, n, log):\n    elapsed = 0.0\n"
        "    for step in range(n):\n"
        "        start = torch.cuda.Event(enable_timing=True)\n"
        "        end = torch.cuda.Event(enable_timing=True)\n"
        "        start.record()\n        step_fn()\n        end.record()\n"
        "        torch.cuda.synchronize()\n        elapsed += start.elapsed_time(end)\n"
    )
    (f,) = check_code(src, select=["SFX106"], include_cold=True)
    assert "deliberate (timing)" in f.message and "the loop's CUDA events time the GPU without it" in f.message
    assert "`Event(enable_timing=True)`, read after the loop" not in f.message
