"""``aeval run`` under faults: failed calls, a target that interrupts or hangs, hostile outputs,
repeats, streamed sources and secrets (issues 8 and 9)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _cli import Cli, cli, project, records_of, rows_of, run_process, write_config

from aeval.testing import HTTPReply, RecordedRequest, ScriptedHTTPServer

__all__ = ["cli", "project"]


def _gate(request: RecordedRequest) -> HTTPReply:
    """Answers 503 for half of the questions, echoes the others, and echoes the token once."""
    number = int(request.json["q"])
    if number % 2:
        return HTTPReply.error(503, "overloaded")
    answer = f"answer {number}"
    if number == 0:
        answer += f" (you sent {request.headers['authorization']})"
    return HTTPReply.json({"a": answer})


@pytest.fixture
def gate_server() -> Iterator[str]:
    with ScriptedHTTPServer(handler=_gate) as scripted:
        yield scripted.url


def test_failed_calls_weigh_as_much_as_answers_so_the_gate_fails(
    project: Path, gate_server: str, cli: Cli
) -> None:
    samples = "".join(
        f'- name: "q{i}"\n  parameters: {{q: "{i}"}}\n  expected-output: "answer {i}"\n'
        for i in range(10)
    )
    (project / "gate.yaml").write_text(samples, encoding="utf-8")
    config = write_config(
        project,
        f"samples: gate.yaml\n"
        f"target:\n  http:\n    url: {gate_server}/ask\n    body: {{q: '{{q}}'}}\n"
        f"    response_path: a\n    headers: {{Authorization: 'Bearer ${{GATE_TOKEN}}'}}\n"
        "strategies:\n  - name: not_blank\n  - name: contains\n    must_contain: [answer]\n"
        "  - name: regex\n    pattern: 'answer \\d'\n  - name: json\n"
        "thresholds: {min_score: 50}\noutput: {dir: out}\n",
    )
    result = cli("run", config, cwd=project, env={"GATE_TOKEN": "tok-gate-secret"})
    # 5 good answers × 3 passing strategies = 15 of 40 rows; a failed call is 4 error rows
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines()[-1] == "FAILED: score 37.50% < 50.00%"
    report = json.loads((project / "out" / "report.json").read_text())
    assert (report["rows"], report["errors"], report["failedCalls"]) == (40, 20, 5)
    assert report["strategyScores"]["NotBlankStrategy"] == 50.0
    # the token the target echoed back is redacted in every output
    for path in (project / "out").iterdir():
        assert "tok-gate-secret" not in path.read_text(), path.name
    assert "Bearer [REDACTED]" in (project / "out" / "rows.jsonl").read_text()


def test_a_target_raising_keyboard_interrupt_stops_the_run_like_ctrl_c(
    project: Path, cli: Cli
) -> None:
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:interrupt\nconcurrency: 1\n"
        "strategies: [{name: exact_match}]\noutput: {dir: out}\n",
    )
    result = cli("run", config, cwd=project)
    assert result.returncode == 130, result.stderr
    assert [row["name"] for row in rows_of(project / "out" / "rows.jsonl")] == ["hello"]
    report = json.loads((project / "out" / "report.json").read_text())
    assert (report["complete"], report["totalSamples"], report["samplesExpected"]) == (
        False,
        1,
        3,
    )
    assert result.stdout.splitlines()[-1].startswith(
        "INTERRUPTED: run stopped after 1 of 3 samples"
    )


def test_a_hanging_sync_target_cannot_keep_the_run_alive(project: Path) -> None:
    # a real process: the thread that never returns must not keep it from exiting
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:stuck\ntimeout: 0.05\n"
        "strategies: [{name: not_blank}]\noutput: {dir: out}\n",
    )
    result = run_process("run", config, cwd=project)
    # every call timed out: no row could be scored, which fails the run (exit 1)
    assert result.returncode == 1, result.stderr
    assert "the most common error: TimeoutError in 3 rows" in result.stdout.splitlines()[-1]
    rows = rows_of(project / "out" / "rows.jsonl")
    assert [row["error"]["type"] for row in rows] == ["TimeoutError"] * 3


def test_a_blocking_sync_strategy_cannot_make_the_run_deaf_to_sigterm(project: Path) -> None:
    # a real process: the signal goes to it, and the blocked thread must not keep it alive
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\n"
        "strategies: [{class: 'cli_targets:Moderation'}]\noutput: {dir: out, formats: [json]}\n",
    )
    entered = project / "moderation-entered"
    process = subprocess.Popen(
        [sys.executable, "-m", "aeval", "run", str(config)],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not entered.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert entered.exists(), "the strategy was never called"
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 143, stderr
    assert stdout.splitlines()[-1].startswith("TERMINATED")
    report = json.loads((project / "out" / "report.json").read_text())
    assert report["complete"] is False


def test_too_many_abandoned_calls_stop_the_run_with_exit_3(project: Path, cli: Cli) -> None:
    samples = "".join(
        f'- name: "s{i}"\n  parameters: ["{i}"]\n  expected-output: "{i}"\n' for i in range(30)
    )
    (project / "many.yaml").write_text(samples, encoding="utf-8")
    config = write_config(
        project,
        "samples: many.yaml\ntarget: cli_targets:stuck_until_released\ntimeout: 0.01\n"
        "concurrency: 1\nstrategies: [{name: not_blank}]\noutput: {dir: out}\n",
    )
    try:
        result = cli("run", config, cwd=project)
    finally:
        sys.modules["cli_targets"].RELEASE.set()
    assert result.returncode == 3, result.stderr
    assert "aeval: error: the run stopped: AbandonedCallsError: 16 calls" in result.stderr
    assert len(rows_of(project / "out" / "rows.jsonl")) == 16
    report = json.loads((project / "out" / "report.json").read_text())
    assert report["complete"] is False
    assert result.stdout.splitlines()[-1].startswith("STOPPED: run stopped after 16 of 30")


def test_hostile_outputs_become_rows_and_every_report_is_written(project: Path, cli: Cli) -> None:
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:hostile\n"
        "strategies: [{name: not_blank}]\noutput: {dir: out, formats: [markdown, json, junit, "
        "html]}\n",
    )
    result = cli("run", config, cwd=project)
    assert result.returncode == 0, result.stderr
    rows = rows_of(project / "out" / "rows.jsonl")
    assert [row["name"] for row in rows] == ["hello", "world", "mismatch"]
    assert all(row["notes"] for row in rows)
    written = sorted(path.name for path in (project / "out").iterdir())
    assert written == ["report.html", "report.json", "report.md", "report.xml", "rows.jsonl"]


def test_a_cancelled_error_from_the_target_is_an_error_row_not_a_vanished_sample(
    project: Path, cli: Cli
) -> None:
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:cancels\n"
        "strategies: [{name: not_blank}]\noutput: {dir: out, formats: [json]}\n",
    )
    result = cli("run", config, cwd=project)
    rows = sorted(rows_of(project / "out" / "rows.jsonl"), key=lambda row: row["index"])
    assert [row["name"] for row in rows] == ["hello", "world", "mismatch"], result
    error = rows[1]["error"]
    assert error["type"] == "CancelledError"
    assert "but the run was not cancelled" in error["message"]
    report = json.loads((project / "out" / "report.json").read_text())
    assert report["complete"] is True
    assert report["totalSamples"] == 3


def test_an_integer_too_long_for_str_becomes_rows_and_reports(project: Path, cli: Cli) -> None:
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:huge\n"
        "strategies: [{name: not_blank}]\noutput: {dir: out, formats: [markdown, json, junit, "
        "html]}\n",
    )
    result = cli("run", config, cwd=project)
    # not_blank cannot read such a number (str() refuses it): every row is an error row, so
    # the run scored nothing and fails, naming the error; the rows and reports are all there
    assert result.returncode == 1, result.stderr
    assert "none of the 3 rows could be scored" in result.stdout
    assert "ValueError" in result.stdout
    shown = "<int of 5001 digits: 7.00000e+5000, ending ...000001>"
    rows = sorted(rows_of(project / "out" / "rows.jsonl"), key=lambda row: row["index"])
    assert [row["output"] for row in rows] == [
        shown,
        {"n": [shown], "k": {shown: "<int of 5001 digits: -7.00000e+5000, ending ...000001>"}},
        {"n": [shown], "k": {shown: "<int of 5001 digits: -7.00000e+5000, ending ...000001>"}},
    ]
    assert all(row["notes"] for row in rows)
    report = json.loads((project / "out" / "report.json").read_text())
    assert report["complete"] is True
    assert shown in (project / "out" / "report.md").read_text()


def test_repeats_show_pass_at_k_flakiness_and_agreement(project: Path, cli: Cli) -> None:
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:flaky\nconcurrency: 1\n"
        "strategies: [{name: exact_match}]\noutput: {dir: out}\n",
    )
    result = cli("run", config, "--repeats", "3", cwd=project)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert re.search(r"samples\s+3 of 3 evaluated, 3 repeats each", out)
    assert re.search(r"flaky\s+1 of 3", out)
    assert "Repeats (3 per sample)" in out
    # hello passes 2 of 3 (calls 1 and 3), world 3 of 3, left 0 of 3
    assert re.search(r"\n\s+1\s+55\.56%\s+55\.56%", out)
    assert re.search(r"\n\s+3\s+66\.67%\s+33\.33%", out)
    assert re.search(r"hello\s+ExactMatchStrategy\s+2/3", out)
    assert "Output agreement: 88.89% of repeats" in out
    report = json.loads((project / "out" / "report.json").read_text())
    assert report["repeats"]["flaky"] == [
        {"sample": "hello", "strategy": "ExactMatchStrategy", "passed": 2, "runs": 3}
    ]


def test_jsonl_sources_are_streamed_and_the_report_keeps_failures(project: Path, cli: Cli) -> None:
    lines = "".join(
        json.dumps({"name": f"s{i}", "parameters": [f"q{i}"], "expected-output": "q0"}) + "\n"
        for i in range(50)
    )
    (project / "many.jsonl").write_text(lines, encoding="utf-8")
    config = write_config(
        project,
        "samples: many.jsonl\ntarget: cli_targets:echo\nstrategies: [{name: exact_match}]\n"
        "output: {dir: out}\n",
    )
    result = cli("run", config, cwd=project)
    assert result.returncode == 0, result.stderr
    report = json.loads((project / "out" / "report.json").read_text())
    assert (report["totalSamples"], report["samplesExpected"], report["passed"]) == (50, 50, 1)
    assert report["holdsAllRows"] is False
    assert len(report["evaluations"]) == 49
    assert len(rows_of(project / "out" / "rows.jsonl")) == 50
    assert records_of(project / "out" / "rows.jsonl")[-1]["complete"] is True

    everything = cli("run", config, "--keep", "all", "--quiet", cwd=project)
    assert everything.returncode == 0, everything.stderr
    report = json.loads((project / "out" / "report.json").read_text())
    assert (report["holdsAllRows"], len(report["evaluations"])) == (True, 50)


def test_large_yaml_is_refused_with_advice_to_write_jsonl(project: Path, cli: Cli) -> None:
    with (project / "samples.yaml").open("r+b") as samples:
        samples.truncate(100_500_000)  # sparse: over the 100 MB a YAML file may hold
    config = write_config(
        project, "samples: samples.yaml\ntarget: cli_targets:echo\nstrategies: [{name: json}]\n"
    )
    result = cli("run", config, cwd=project)
    assert result.returncode == 2
    assert "samples.yaml is 100 MB; YAML and JSON files are read whole" in result.stderr
    assert "Write the samples as JSONL" in result.stderr


def test_judge_retries_show_in_the_progress_lines_and_the_summary(project: Path, cli: Cli) -> None:
    from aeval.testing import OpenAICompatibleServer, Reply

    with OpenAICompatibleServer() as judge:
        # one reply at a time: 2 retries for the first sample's call, 1 for the second's
        judge.enqueue(
            Reply.rate_limited(0), Reply.server_error(503), "true", Reply.rate_limited(0), "true"
        )
        judge.default = Reply.text("true")
        config = write_config(
            project,
            "samples: samples.yaml\ntarget: cli_targets:echo\n"
            f"strategies:\n  - name: judge\n    model: {{model: m, base_url: '{judge.base_url}', "
            "max_concurrency: 1}\noutput: {dir: out}\n",
        )
        result = cli("run", config, "--concurrency", "1", cwd=project)
    assert result.returncode == 0, result.stderr
    progress = [line for line in result.stderr.splitlines() if line.startswith("aeval: ")]
    assert re.search(r"\| 2 retries \|", progress[1]), progress[1]
    assert re.search(r"\| 3 retries \|", progress[2]), progress[2]
    assert re.search(r"^aeval: done: .* \| 3 retries \|", progress[-1]), progress[-1]
    assert re.search(r"model usage\s+\d+ tokens, 3 retries", result.stdout), result.stdout
    rows = rows_of(project / "out" / "rows.jsonl")
    assert sorted(row["metadata"]["retries"] for row in rows) == [0, 1, 2]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize(
    "target", ["slow:slow", "cli_targets:echo"], ids=["periodic-flush", "at-the-end"]
)
def test_a_rows_file_that_cannot_be_written_is_reported_and_the_run_completes(
    project: Path, cli: Cli, target: str
) -> None:
    """A run longer than a second flushes its rows file while it runs; a short one at its end."""
    (project / "slow.py").write_text(
        "import anyio\n\nasync def slow(params):\n    await anyio.sleep(0.4)\n    return 'x'\n"
    )
    (project / "out").mkdir()
    (project / "out" / "rows.jsonl").symlink_to("/dev/full")  # every write: no space left
    config = write_config(
        project,
        f"samples: samples.yaml\ntarget: {target}\nstrategies: [{{name: not_blank}}]\n"
        "output: {dir: out}\n",
    )
    result = cli("run", config, "--no-store", "--concurrency", "1", cwd=project)
    assert result.returncode == 0, result.stderr
    report = json.loads((project / "out" / "report.json").read_text())
    assert (report["rows"], report["complete"]) == (3, True)
    [warning] = report["run"]["warnings"]
    assert warning.startswith(f"sink JsonlSink({str(project / 'out' / 'rows.jsonl')!r}) failed ")
    assert "(OSError: [Errno 28] No space left on device)" in warning, warning
    assert f"warning: {warning}" in result.stdout
    assert "rows.jsonl" not in result.stdout.split("Files written:")[1]
