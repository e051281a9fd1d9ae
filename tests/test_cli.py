"""The ``aeval`` command, run in the test process (and as a real process where it must be)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
from _cli import (
    DATA,
    EXAMPLE,
    ROOT,
    Cli,
    beside_progress,
    cli,
    forgotten_imports,
    project,
    records_of,
    rows_of,
    run_process,
    write_config,
)

__all__ = ["cli", "project"]

JUNIT_XSD = xmlschema.XMLSchema(DATA / "junit.xsd")


BASIC = """\
samples: samples.yaml
target: cli_targets:echo
strategies:
  - name: exact_match
  - name: not_blank
thresholds:
  min_score: {min_score}
  tag_min_scores:
    smoke: 100
output:
  dir: out
"""


def test_example_config_passes_offline_and_writes_every_output(tmp_path: Path, cli: Cli) -> None:
    result = cli("run", EXAMPLE, "--output", tmp_path / "out", cwd=tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    assert beside_progress(result.stderr) == []
    assert result.stdout.splitlines()[-1] == (
        "PASSED: score 91.67% >= 80.00%; tag smoke 100.00% >= 100.00%"
    )
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "report.json",
        "report.md",
        "report.xml",
        "rows.jsonl",
    ]
    rows = rows_of(out / "rows.jsonl")
    assert len(rows) == 12
    failed = [(r["name"], r["strategy"]) for r in rows if r["outcome"] != "passed"]
    assert failed == [("Warranty", "ExactMatchStrategy")]
    JUNIT_XSD.validate(str(out / "report.xml"))
    assert json.loads((out / "report.json").read_text())["globalScore"] == 91.67


def test_passing_gate_exits_0_and_prints_the_summary(project: Path, cli: Cli) -> None:
    config = write_config(project, BASIC.format(min_score=60))

    result = cli("run", config, cwd=project)

    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Evaluation summary" in out
    assert re.search(
        r"score\s+83\.33% \(95% CI 40\.33–97\.37, 3 samples\)\s+\(min 60\.00% ok\)", out
    )
    # 100 % of 2 samples is not certainty: Wilson's interval keeps a width at the edge
    assert re.search(r"smoke\s+2\s+4\s+4\s+100\.00%\s+34\.24–100\.00\s+100\.00% ok", out)
    assert re.search(r"edge\s+1\s+2\s+1\s+50\.00%\s+0\.00–100\.00", out)
    assert re.search(r"ExactMatchStrategy\s+3\s+2\s+1\s+0\s+0\s+0\s+66\.67%\s+20\.77–93\.85", out)
    assert re.search(r"NotBlankStrategy\s+3\s+3\s+0\s+0\s+0\s+0\s+100\.00%", out)
    assert re.search(r"mismatch\s+ExactMatchStrategy\s+failed\s+Expected 'right', got 'left'", out)
    assert f"  {Path('out') / 'report.xml'}" not in out
    assert str(project / "out" / "rows.jsonl") in out
    assert out.splitlines()[-1] == ("PASSED: score 83.33% >= 60.00%; tag smoke 100.00% >= 100.00%")


def test_failing_gate_exits_1_naming_each_missed_threshold(project: Path, cli: Cli) -> None:
    config = write_config(
        project, BASIC.format(min_score=90).replace("smoke: 100", "smoke: 100\n    edge: 75")
    )

    result = cli("run", config, cwd=project)

    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines()[-1] == (
        "FAILED: score 83.33% < 90.00%; tag edge 50.00% < 75.00%"
    )
    assert len(rows_of(project / "out" / "rows.jsonl")) == 6


def test_flags_override_the_config(project: Path, cli: Cli) -> None:
    config = write_config(project, BASIC.format(min_score=10))

    result = cli(
        "run",
        config,
        "--min-score",
        "100",
        "--tags",
        "smoke",
        "--format",
        "json",
        "--output",
        "elsewhere",
        "--repeats",
        "2",
        "--concurrency",
        "1",
        "--quiet",
        cwd=project,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout == "PASSED: score 100.00% >= 100.00%; tag smoke 100.00% >= 100.00%\n"
    written = sorted(p.name for p in (project / "elsewhere").iterdir())
    assert written == ["report.json", "rows.jsonl"]
    rows = rows_of(project / "elsewhere" / "rows.jsonl")
    assert sorted(
        (r["name"], r["repeat"]) for r in rows if r["strategy"] == "NotBlankStrategy"
    ) == [
        ("hello", 0),
        ("hello", 1),
        ("world", 0),
        ("world", 1),
    ]


def test_a_tag_minimum_for_a_tag_no_sample_has_fails_the_gate(project: Path, cli: Cli) -> None:
    config = write_config(project, BASIC.format(min_score=0).replace("smoke: 100", "smoek: 100"))

    result = cli("run", config, "--quiet", cwd=project)

    assert result.returncode == 1
    assert result.stdout == "FAILED: tag smoek: no evaluated sample has it\n"


def test_progress_is_plain_lines_on_stderr_when_it_is_not_a_terminal(
    project: Path, cli: Cli
) -> None:
    config = write_config(project, BASIC.format(min_score=0).replace("echo", "shout"))

    result = cli("run", config, "--concurrency", "1", cwd=project)

    assert "aeval:" not in result.stdout
    lines = [line for line in result.stderr.splitlines() if line.startswith("aeval:")]
    assert lines[0] == "aeval: evaluating 3 samples"
    middle = r" samples \(\d+%\) \| \d+ rows \| pass [\d.]+% \| 0 errors \| 0 retries \| "
    middle += r"[\d.]+ samples/s \| ETA \d+:\d\d:\d\d"
    assert re.fullmatch(r"aeval: 1/3" + middle, lines[1]), lines[1]
    assert re.fullmatch(r"aeval: 2/3" + middle, lines[2]), lines[2]
    assert re.fullmatch(
        r"aeval: done: 3/3 samples \| 6 rows \| pass 50\.0% \| 0 errors \| 0 retries \| "
        r"\d+:\d\d:\d\d elapsed",
        lines[3],
    ), lines[3]
    assert len(lines) == 4
    assert "\x1b[" not in result.stderr


def test_config_errors_exit_2_naming_the_file_line_and_key(project: Path, cli: Cli) -> None:
    config = write_config(
        project,
        "samples: samples.yaml\n"
        "target: cli_targets:echo\n"
        "concurency: 2\n"
        "strategies:\n"
        "  - name: exact_match\n"
        "  - name: segments\n"
        "    threshold: high\n",
    )

    result = cli("run", config, cwd=project)

    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"aeval: error: {config}:3: concurency: unknown key (did you mean 'concurrency'?)",
        f"aeval: error: {config}:7: strategies[1].threshold: expected a number, got 'high'",
    ]
    assert not (project / "aeval-results").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "target: cli_targets:missing",
            "{config}:2: target: module 'cli_targets' has no attribute 'missing'",
        ),
        (
            "target: no_such_module:run",
            "{config}:2: target: no module named 'no_such_module' (looked in {dir} and on "
            "sys.path)",
        ),
        (
            "target: cli_targets:echo\noutput:\n  formats: [markdown, junitt]",
            "{config}:4: output.formats[1]: unknown format 'junitt' (did you mean 'junit'?); "
            "available: html, json, junit, markdown",
        ),
    ],
)
def test_errors_found_after_validation_also_exit_2(
    project: Path, text: str, message: str, cli: Cli
) -> None:
    config = write_config(
        project, "samples: samples.yaml\n" + text + "\nstrategies:\n  - name: exact_match\n"
    )

    result = cli("run", config, cwd=project)

    assert result.returncode == 2
    expected = message.format(config=config, dir=project.resolve())
    assert result.stderr == f"aeval: error: {expected}\n"


def test_a_bad_regex_and_a_missing_sample_file_exit_2(project: Path, cli: Cli) -> None:
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\nstrategies:\n"
        "  - name: regex\n    pattern: '(unclosed'\n",
    )
    result = cli("run", config, cwd=project)
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"aeval: error: {config}:4: strategies[0]: cannot build the strategy: "
        "Invalid regular expression '(unclosed'"
    )

    config = write_config(
        project, "samples: nowhere.yaml\ntarget: cli_targets:echo\nstrategies: [{name: json}]\n"
    )
    result = cli("run", config, cwd=project)
    assert result.returncode == 2
    assert result.stderr.startswith(f"aeval: error: {config}:1: samples: ")
    assert "nowhere.yaml" in result.stderr


def test_a_strategy_constructor_that_raises_exits_2_without_a_traceback(
    project: Path, cli: Cli
) -> None:
    (project / "my_checks.py").write_text(
        "class NeedsGpu:\n    def __init__(self):\n        raise RuntimeError('no GPU here')\n"
    )
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\nstrategies:\n"
        "  - class: my_checks:NeedsGpu\n",
    )

    result = cli("run", config, cwd=project)

    assert result.returncode == 2
    assert result.stderr == (
        f"aeval: error: {config}:4: strategies[0]: cannot build the strategy: RuntimeError: "
        "no GPU here\n"
    )
    assert not (project / "aeval-results").exists()


@pytest.mark.parametrize(
    ("code", "shown"), [("0", "0"), ("'no model configured'", "'no model configured'")]
)
def test_a_target_that_exits_at_import_is_a_config_error(
    project: Path, code: str, shown: str, cli: Cli
) -> None:
    (project / "script_bot.py").write_text(
        f"import sys\n\ndef answer(params):\n    return 'hi'\n\nsys.exit({code})\n"
    )
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: script_bot:answer\nstrategies:\n  - name: not_blank\n"
        "thresholds:\n  min_score: 0\n",
    )

    result = cli("run", config, cwd=project)

    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"aeval: error: {config}:2: target: importing 'script_bot' called sys.exit({shown}): "
        "a module aeval imports must not exit; put its script part under "
        "'if __name__ == \"__main__\":'\n"
    )
    assert not (project / "aeval-results").exists()


@pytest.mark.parametrize("raised", ["GeneratorExit()", "Fatal('no licence')"])
def test_a_target_raising_a_base_exception_at_import_is_a_config_error(
    project: Path, raised: str, cli: Cli
) -> None:
    (project / "fatal_bot.py").write_text(
        f"class Fatal(BaseException):\n    pass\n\nraise {raised}\n"
    )
    config = write_config(
        project, "samples: samples.yaml\ntarget: fatal_bot:answer\nstrategies: [{name: json}]\n"
    )
    result = cli("run", config, cwd=project)
    assert result.returncode == 2
    name, _, rest = raised.partition("(")
    message = rest.rstrip(")").strip("'")
    assert result.stderr == (
        f"aeval: error: {config}:2: target: importing 'fatal_bot' raised {name}: {message} "
        "(a BaseException that is not an Exception: a module aeval imports must import "
        "cleanly)\n"
    )


def test_a_strategy_module_that_exits_at_import_is_a_config_error(project: Path, cli: Cli) -> None:
    (project / "exiting_checks.py").write_text("raise SystemExit(4)\n")
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\nstrategies:\n"
        "  - class: exiting_checks:Check\n",
    )

    result = cli("run", config, cwd=project)

    assert result.returncode == 2
    assert result.stderr.startswith(
        f"aeval: error: {config}:4: strategies[0].class: importing 'exiting_checks' called "
        "sys.exit(4): "
    )


def test_ctrl_c_while_importing_the_target_exits_130(project: Path, cli: Cli) -> None:
    (project / "interrupted_bot.py").write_text("raise KeyboardInterrupt\n")
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: interrupted_bot:answer\nstrategies:\n  - name: not_blank\n",
    )

    result = cli("run", config, cwd=project)

    assert result.returncode == 130
    assert result.stderr == "aeval: interrupted\n"


def test_ctrl_c_ends_a_target_import_that_hangs_with_exit_130(project: Path) -> None:
    # a real process: SIGINT goes to it, and the import it interrupts never returns
    (project / "hanging_bot.py").write_text(
        "import sys, threading\nprint('importing', flush=True)\nthreading.Event().wait()\n"
    )
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: hanging_bot:answer\nstrategies:\n  - name: not_blank\n",
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "aeval", "run", str(config)],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "importing\n"
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()

    assert process.returncode == 130
    assert stderr == "aeval: interrupted\n"


def test_usage_errors_exit_2(project: Path, cli: Cli) -> None:
    result = cli("run", "aeval.yaml", "--concurrency", "0", cwd=project)
    assert result.returncode == 2
    assert "--concurrency: expected an integer >= 1, got '0'" in result.stderr


@pytest.mark.parametrize(
    ("signum", "code", "label"),
    [(signal.SIGINT, 130, "INTERRUPTED"), (signal.SIGTERM, 143, "TERMINATED")],
    ids=["SIGINT", "SIGTERM"],
)
def test_a_signal_stops_cleanly_with_the_finished_rows_and_a_partial_report(
    project: Path, signum: signal.Signals, code: int, label: str
) -> None:
    # a real process: the signal goes to it, not to the test runner
    samples = "".join(
        f'- name: "s{i}"\n  parameters: ["{"fast" if i < 3 else "slow"} {i}"]\n'
        f'  expected-output: "{"fast" if i < 3 else "slow"} {i}"\n'
        for i in range(8)
    )
    (project / "stall.yaml").write_text(samples, encoding="utf-8")
    config = write_config(
        project,
        "samples: stall.yaml\ntarget: cli_targets:stall\nconcurrency: 4\n"
        "strategies: [{name: exact_match}]\n"
        "output: {dir: out, formats: [markdown, json, junit, html]}\n",
    )
    rows_path = project / "out" / "rows.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "aeval", "run", str(config)],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if rows_path.exists() and rows_path.read_bytes().count(b"\n") >= 4:
                break  # the run's header record and the three fast rows
            time.sleep(0.02)
        else:
            pytest.fail("rows.jsonl never received the finished rows")
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()

    assert process.returncode == code, stderr
    assert beside_progress(stderr) == []
    rows = rows_of(rows_path)
    assert sorted(r["name"] for r in rows) == ["s0", "s1", "s2"]
    assert all(r["outcome"] == "passed" for r in rows)
    end = records_of(rows_path)[-1]
    assert (end["record"], end["complete"], end["samples_expected"]) == ("run_end", False, 8)
    report = json.loads((project / "out" / "report.json").read_text())
    assert (report["totalSamples"], report["passed"]) == (3, 3)
    assert (report["complete"], report["samplesExpected"]) == (False, 8)
    # partial in all four formats, and red in JUnit
    JUNIT_XSD.validate(str(project / "out" / "report.xml"))
    suite = ET.parse(project / "out" / "report.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("errors") == "1"
    [stopped] = [case for case in suite.iter("testcase") if case.get("classname") == "aeval"]
    assert stopped.get("name") == "run stopped after 3 of 8 samples"
    assert stopped.find("error") is not None
    markdown = (project / "out" / "report.md").read_text()
    assert "**PARTIAL RUN**" in markdown and "run stopped after 3 of 8 samples" in markdown
    html = (project / "out" / "report.html").read_text()
    assert 'role="alert"' in html and "run stopped after 3 of 8 samples" in html
    assert "Evaluation summary (PARTIAL: run stopped after 3 of 8 samples)" in stdout
    assert re.search(r"samples\s+3 of 8 evaluated", stdout)
    assert re.search(r"aeval: interrupted: 3/8 samples \| 3 rows \| pass 100\.0%", stderr)
    assert stdout.splitlines()[-1] == (
        f"{label}: run stopped after 3 of 8 samples; the report is partial and no "
        "threshold was checked"
    )


def test_report_rerenders_a_run_from_its_rows(project: Path, cli: Cli) -> None:
    config = write_config(project, BASIC.format(min_score=0))
    assert cli("run", config, "--quiet", cwd=project).returncode == 0
    rows = project / "out" / "rows.jsonl"
    with rows.open("ab") as handle:
        handle.write(b'{"name": "cut sh')

    junit = cli("report", rows, "--format", "junit", cwd=project)
    assert junit.returncode == 0, junit.stderr
    JUNIT_XSD.validate(junit.stdout)
    suite = ET.fromstring(junit.stdout).find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("6", "1", "0")

    written = cli("report", rows, "--format", "json", "--output", "again.json", cwd=project)
    assert written.returncode == 0, written.stderr
    assert written.stdout == ""
    document = json.loads((project / "again.json").read_text())
    assert (document["globalScore"], document["totalSamples"], document["rows"]) == (83.33, 3, 6)
    # the run's header travels in rows.jsonl: the wall clock, not the sum of the rows' times
    original = json.loads((project / "out" / "report.json").read_text())
    assert document["run"] == original["run"]
    assert document["duration"] == original["duration"]
    assert document["complete"] is True

    markdown = cli("report", rows, cwd=project)
    assert markdown.stdout.startswith("# Evaluation Report\n")
    assert "83.33%" in markdown.stdout

    from_json = cli("report", project / "out" / "report.json", "--format", "markdown", cwd=project)
    assert from_json.returncode == 0, from_json.stderr
    assert from_json.stdout == (project / "out" / "report.md").read_text() + "\n"

    missing = cli("report", "nothing.jsonl", cwd=project)
    assert (missing.returncode, missing.stderr) == (
        2,
        "aeval: error: nothing.jsonl: no such file\n",
    )
    unknown = cli("report", rows, "--format", "yaml", cwd=project)
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("aeval: error: No report formatter found for format: yaml.")


def test_schema_prints_the_packaged_json_schema(tmp_path: Path, cli: Cli) -> None:
    result = cli("schema", cwd=tmp_path)

    assert result.returncode == 0
    schema = json.loads(result.stdout)
    assert result.stdout == (ROOT / "aeval" / "schema" / "aeval-config.schema.json").read_text()
    assert schema["required"] == ["samples", "target", "strategies"]


def test_each_test_imports_the_target_of_its_own_directory(tmp_path: Path, cli: Cli) -> None:
    for word in ("first", "second"):
        directory = tmp_path / word
        directory.mkdir()
        (directory / "cli_targets.py").write_text(f"def answer(params):\n    return {word!r}\n")
        (directory / "samples.yaml").write_text(
            f"- name: s\n  parameters: [q]\n  expected-output: {word}\n"
        )
        config = write_config(
            directory,
            "samples: samples.yaml\ntarget: cli_targets:answer\n"
            "strategies: [{name: exact_match}]\nthresholds: {min_score: 100}\n",
        )
        with forgotten_imports():
            result = cli("run", config, "--quiet", cwd=directory)
            assert "cli_targets" in sys.modules
            assert str(directory.resolve()) in sys.path

        assert result.stdout == "PASSED: score 100.00% >= 100.00%\n", word
        assert "cli_targets" not in sys.modules
        assert str(directory.resolve()) not in sys.path


def test_a_terminal_gets_the_live_progress_bar(
    project: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    pty = pytest.importorskip("pty")
    config = write_config(project, BASIC.format(min_score=0))
    controller, terminal = pty.openpty()
    chunks: list[bytes] = []

    def read_screen() -> None:
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=read_screen, daemon=True)
    reader.start()
    try:
        with open(terminal, "w", encoding="utf-8") as screen, monkeypatch.context() as patch:
            patch.setattr(sys, "stdout", screen)
            patch.setattr(sys, "stderr", screen)
            patch.setenv("COLUMNS", "160")
            patch.setenv("TERM", "xterm")
            result = cli("run", config, cwd=project)
        reader.join(timeout=30)
    finally:
        os.close(controller)
    assert not reader.is_alive()
    screen_text = b"".join(chunks).decode()

    assert result.returncode == 0
    assert "\x1b[" in screen_text
    assert "aeval: evaluating" not in screen_text
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen_text)
    assert re.search(r"3/3 samples 6 rows \| pass 83\.3% \| 0 errors \| 0 retries", plain)
    assert "PASSED: score 83.33% >= 0.00%" in plain


@pytest.mark.parametrize("command", ["python -m aeval", "aeval"])
def test_the_command_runs_as_a_program_and_exits_with_its_code(
    tmp_path: Path, command: str
) -> None:
    # the one test of the entry points: ``sys.exit(main())`` must pass the exit code on
    if command == "aeval":
        script = shutil.which("aeval", path=Path(sys.executable).parent)
        if script is None:
            pytest.skip("the aeval console script is not installed next to this Python")
        argv = [script]
    else:
        argv = [sys.executable, "-m", "aeval"]

    result = subprocess.run(
        [*argv, "run", str(EXAMPLE), "--output", str(tmp_path / "out"), "--min-score", "95"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )

    assert result.returncode == 1, result.stdout + result.stderr
    assert beside_progress(result.stderr) == []
    assert "Evaluation summary" in result.stdout
    assert result.stdout.splitlines()[-1] == "FAILED: score 91.67% < 95.00%"
    assert (tmp_path / "out" / "rows.jsonl").is_file()


def test_a_run_piped_to_a_file_writes_its_progress_on_stderr_and_its_results_on_stdout(
    tmp_path: Path,
) -> None:
    # ``aeval run aeval.yaml > out.txt``: the file holds the summary and the verdict alone
    result = run_process("run", EXAMPLE, "--output", tmp_path / "out", cwd=tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    progress = result.stderr.splitlines()
    assert beside_progress(result.stderr) == []
    assert progress[0] == "aeval: evaluating 6 samples"
    assert progress[-1].startswith("aeval: done: 6/6 samples | 12 rows | pass 91.7% |")
    assert not [line for line in result.stdout.splitlines() if line.startswith("aeval:")]
    assert "samples/s" not in result.stdout and "Evaluation summary" in result.stdout
    assert result.stdout.splitlines()[-1].startswith("PASSED: score 91.67%")


def test_a_reader_that_leaves_early_ends_the_command_quietly(tmp_path: Path) -> None:
    """``aeval schema | head -1``: the reader closes the pipe; no traceback, exit 141."""
    process = subprocess.Popen(
        [sys.executable, "-m", "aeval", "schema"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # before the command writes anything
    with process.stderr:
        stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 128 + 13
    assert stderr == ""
