"""Text on the terminal: what samples, models and users wrote is printed as written (never as
rich markup, never as escape sequences), and numbers are never cut, at 80 columns or in a log."""

from __future__ import annotations

import io
import re
import textwrap
from pathlib import Path

import pytest
from _cli import Cli, cli, project, write_config
from rich.console import Console

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    RunInfo,
    compare,
)

__all__ = ["cli", "project"]

pytest_plugins = ("pytester",)

MARKUP = ("[/INST]", "[/]", "[bold]x[/bold]")
ESCAPES = (
    "\x1b]8;;http://evil.example\x07link\x1b]8;;\x07",  # OSC 8: a clickable link
    "\x1b]0;owned\x07",  # OSC 0: the window title
    "\x1b[2J",  # CSI 2J: clear the screen
    "\x9b2J",  # the same as a C1 control
)
HOSTILE = "answer " + " ".join(MARKUP) + " " + " ".join(ESCAPES)


def assert_literal(text: str) -> None:
    """Every markup string is printed as written, no control character is printed raw."""
    for markup in MARKUP:
        assert markup in text, text
    assert "\\x1b]0;owned\\x07" in text and "\\x1b[2J" in text and "\\x9b2J" in text, text
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text), repr(text)


def test_names_show_control_characters_as_escapes() -> None:
    names = ["\x1b[2J\x00\r\x7f\x85\x9b", "cut \ud83d", "[/INST] é ✓", "a\tb"]
    failed = EvaluationResult.failing("no")
    rows = [row(name, "s", failed, index=index, output="o") for index, name in enumerate(names)]
    out = io.StringIO()
    EvaluationReport(rows).print(Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert "\\x1b[2J\\x00\\x0d\\x7f\\x85\\x9b" in text
    assert "cut \\ud83d" in text
    assert "[/INST] é ✓" in text
    assert "\\x09" not in text  # a tab is a tab, not an escape
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text), repr(text)


def row(
    name: str,
    strategy: str,
    result: EvaluationResult,
    *,
    index: int,
    tags: tuple[str, ...] = (),
    output: str = HOSTILE,
) -> EvaluationRow:
    sample = EvaluationSample(name, ["q"], "[bold]", tags=list(tags))
    return EvaluationRow.from_result(sample, strategy, output, result, index=index)


def hostile_report(*, passed: bool = False) -> EvaluationReport:
    first = EvaluationResult.passing() if passed else EvaluationResult.failing("why " + HOSTILE)
    return EvaluationReport(
        [
            row("[/]", "[red]judge[/red]", first, index=0, tags=("[/INST]", "tag\x1b[2J")),
            row("fine", "[red]judge[/red]", EvaluationResult.passing(), index=1, tags=("[/INST]",)),
        ]
    )


def test_report_print_shows_markup_and_escapes_as_written() -> None:
    out = io.StringIO()
    # a console as users make them: markup on, 80 columns
    hostile_report().print(Console(file=out, width=80, color_system=None))
    text = out.getvalue()
    assert_literal(text)
    assert "Failures (1)" in text and "[red]judge[/red]" in text and "tag\\x1b[2J" in text


@pytest.mark.anyio
async def test_the_comparison_shows_markup_and_escapes_as_written() -> None:
    comparison = await compare(hostile_report(passed=True), hostile_report())
    out = io.StringIO()
    comparison.print(Console(file=out, width=80, color_system=None))
    text = out.getvalue()
    assert "Regressions (passed → not passed): 1" in text and "[red]judge[/red]" in text
    # outputs are cut at 80 characters: the first escapes are shown, none is printed raw
    assert "answer [/INST] [/] [bold]x[/bold]" in text
    assert "\\x1b]8;;http://evil.example\\x07link" in text
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text), repr(text)


TARGET = f'''
HOSTILE = {HOSTILE!r}


async def hostile(params):
    return params[0] + " " + HOSTILE


class Repeat:
    """Fails with the output as its reason, as a judge quoting the answer would."""

    def evaluate(self, sample, output):
        from aeval import EvaluationResult

        if output.startswith("fine"):
            return EvaluationResult.passing()
        return EvaluationResult.failing("said: " + output)
'''

SAMPLES = """
- name: "[/] \\e[2J"
  parameters: ["[/INST]"]
  tags: ["[bold]x[/bold]", "t\\e[2J"]
- name: "fine \\e]0;owned\\a"
  parameters: ["fine"]
  tags: ["[bold]x[/bold]"]
"""

CONFIG = """
name: "[/]"
samples: samples.yaml
target: hostile_text:hostile
strategies: [{class: "hostile_text:Repeat"}, {name: not_blank}]
thresholds: {min_score: 50}
output: {dir: out}
"""


@pytest.fixture
def hostile_project(tmp_path: Path) -> Path:
    (tmp_path / "hostile_text.py").write_text(TARGET, encoding="utf-8")
    (tmp_path / "samples.yaml").write_text(SAMPLES, encoding="utf-8")
    write_config(tmp_path, CONFIG)
    return tmp_path


def test_every_command_prints_markup_and_escapes_as_written(
    hostile_project: Path, cli: Cli
) -> None:
    config = hostile_project / "aeval.yaml"
    first = cli("run", config, cwd=hostile_project)
    # the gate is met (3 of 4 rows pass): the summary must not turn that into a failure
    assert first.returncode == 0, first.stdout + first.stderr
    assert_literal(first.stdout)
    assert "[/] \\x1b[2J" in first.stdout and first.stdout.rstrip().endswith(
        "PASSED: score 75.00% >= 50.00%"
    )
    assert cli("run", config, "--quiet", cwd=hostile_project).returncode == 0
    for argv in (["runs"], ["history", "[/]"], ["compare", "[/]@latest~1", "[/]@latest"]):
        result = cli(*argv, cwd=hostile_project)
        assert result.returncode == 0, (argv, result.stderr)
        assert "[/]" in result.stdout, result.stdout
        assert "\x1b" not in result.stdout + result.stderr
    shards = [hostile_project / f"shard-{index}" for index in (1, 2)]
    for index, out in enumerate(shards, 1):
        done = cli("run", config, "--shard", f"{index}/2", "--output", out, cwd=hostile_project)
        assert done.returncode == 0, done.stderr
    merged = cli("merge", *shards, "--config", config, "--output", hostile_project / "merged")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert_literal(merged.stdout)


VERDICT_TAGS = (
    r"wide 漢字 and an emoji \U0001F600, combining e\u0301, zero width \u200b, nbsp \u00a0.",
    r"cr \r and del \x7f",
    r"tab\tstop\t\there",
    "   trailing and leading   ",
    "x" * 5_000,
    r"[/INST] [bold]x[/bold] \e]0;owned\a \e[2J \x9b2J",
)


@pytest.mark.parametrize("terminal", [False, True], ids=["log", "terminal"])
@pytest.mark.parametrize("columns", [None, "40"], ids=["wide", "columns-40"])
def test_the_quiet_verdict_line_is_the_line_rich_prints(
    terminal: bool,
    columns: str | None,
    tmp_path: Path,
    cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``aeval run --quiet`` prints its verdict without a console: the same characters as
    the console of ``aeval run`` prints, for tags with every kind of character in them."""
    (tmp_path / "verdict_target.py").write_text(
        "def echo(question):\n    return 'an answer'\n", encoding="utf-8"
    )
    (tmp_path / "samples.yaml").write_text(
        "".join(
            f'- name: s{index}\n  parameters: [q]\n  tags: ["{tag}"]\n'
            for index, tag in enumerate(VERDICT_TAGS)
        ),
        encoding="utf-8",
    )
    thresholds = "".join(f'    ? "{tag}"\n    : 50\n' for tag in VERDICT_TAGS)
    config = write_config(
        tmp_path,
        "samples: samples.yaml\ntarget: verdict_target:echo\n"
        "strategies: [{name: not_blank}]\noutput: {dir: out}\n"
        f"thresholds:\n  min_score: 50\n  tag_min_scores:\n{thresholds}",
    )
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setenv("FORCE_COLOR" if terminal else "NO_COLOR", "1")
    quiet = cli("run", config, "--quiet", "--no-store", cwd=tmp_path)
    loud = cli("run", config, "--no-store", cwd=tmp_path)
    assert quiet.returncode == loud.returncode == 0, quiet.stderr + loud.stderr
    assert quiet.stdout.startswith("PASSED: score 100.00% >= 50.00%; tag wide 漢字")
    assert "cr \\x0d and del \\x7f" in quiet.stdout and "\x1b" not in quiet.stdout
    assert loud.stdout.endswith(quiet.stdout)


def test_errors_on_stderr_show_escapes(hostile_project: Path, cli: Cli) -> None:
    result = cli("run", hostile_project / "no\x1b[2Jfile.yaml", cwd=hostile_project)
    assert result.returncode == 2
    assert "no\\x1b[2Jfile.yaml" in result.stderr and "\x1b" not in result.stderr


def test_the_pytest_terminal_section_shows_escapes(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\naddopts = -p no:cacheprovider -p no:benchmark -p no:hypothesispytest\n"
    )
    pytester.makepyfile(
        test_inner=textwrap.dedent(
            f"""
            from aeval import EvaluationResult, EvaluationSample, evaluate_sync

            HOSTILE = {HOSTILE!r}


            def repeat(sample, output):
                return EvaluationResult.failing("said: " + output)


            def test_hostile(record_evaluation):
                samples = [EvaluationSample("[/] \\x1b]0;owned\\x07", ["q"], "x")]
                record_evaluation(evaluate_sync(samples, lambda p: HOSTILE, repeat))
            """
        )
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    text = result.stdout.str()
    assert "aeval evaluations" in text
    section = text[text.index("aeval evaluations") :]
    assert_literal(section)


# --- widths -------------------------------------------------------------------------------


def test_a_report_printed_off_a_terminal_is_wide_unless_columns_says(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    long_report().print()
    wide = capsys.readouterr().out
    assert max(len(line) for line in wide.splitlines()) > 200
    monkeypatch.setenv("COLUMNS", "80")
    long_report().print()
    narrow = capsys.readouterr().out
    at_80 = io.StringIO()
    long_report().print(Console(file=at_80, width=80, highlight=False, color_system=None))
    assert narrow == at_80.getvalue()
    _numbers_whole(narrow)


def long_report(*, passing: int = 0) -> EvaluationReport:
    """Rows whose names and reasons are long, with scores and intervals of every width."""
    rows = []
    for index in range(40):
        passed = index % 3 or index < passing
        result = (
            EvaluationResult.passing() if passed else EvaluationResult.failing("a reason " * 12)
        )
        rows.append(
            row(
                f"a sample with a rather long descriptive name number {index}",
                f"AStrategyWithAVeryLongNameIndeed{index % 2}",
                result,
                index=index,
                tags=(f"a-long-tag-name-{index % 4}", "every"),
                output="y",
            )
        )
    return EvaluationReport(rows)


PERCENT = re.compile(r"\d+\.\d\d%")


def _numbers_whole(text: str) -> None:
    assert "…" not in text, text
    # every score line of a table keeps its percent and its interval on one line
    for line in text.splitlines():
        if line.strip().startswith(("a-long-tag-name", "every", "AStrategyWithAVery")):
            assert PERCENT.search(line) and re.search(r"\d–\d", line), line


def test_the_summary_keeps_numbers_whole_at_80_columns() -> None:
    out = io.StringIO()
    long_report().print(Console(file=out, width=80, color_system=None))
    text = out.getvalue()
    _numbers_whole(text)
    assert "Failures (14)" in text and "name number 39" in text


def test_the_run_summary_in_a_log_is_wide_and_with_columns_80_keeps_numbers(
    project: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\n"
        "strategies: [{name: exact_match}, {name: not_blank}]\noutput: {dir: out}\n"
        "thresholds: {min_score: 10, tag_min_scores: {smoke: 50}}\n",
    )
    monkeypatch.delenv("COLUMNS")
    log = cli("run", config, cwd=project)
    assert log.returncode == 0, log.stderr
    assert "…" not in log.stdout
    assert re.search(r"\n  smoke +2 +4 +4 +100\.00% +\d+\.\d\d–100\.00 +50\.00% ok *\n", log.stdout)
    narrow = cli("run", config, cwd=project, env={"COLUMNS": "60"})
    assert narrow.returncode == 0, narrow.stderr
    assert "…" not in narrow.stdout
    assert re.search(
        r"\n  smoke +2 +4 +4 +100\.00% +\d+\.\d\d–100\.00 +50\.00% ok *\n", narrow.stdout
    )
    assert re.search(
        r"\n  ExactMatchStrategy +3 +2 +1 .* 66\.67% +\d+\.\d\d–\d+\.\d\d *\n", narrow.stdout
    )
    assert re.search(r"\n  mismatch +ExactMatchStrategy +failed +Expected", narrow.stdout)


@pytest.mark.anyio
async def test_compare_keeps_intervals_on_one_line_at_80_columns() -> None:
    comparison = await compare(long_report(), long_report(passing=20))
    out = io.StringIO()
    comparison.print(Console(file=out, width=80, color_system=None))
    text = out.getvalue()
    per_tag = [line for line in text.splitlines() if line.lstrip().startswith("a-long-tag")]
    assert len(per_tag) == 4
    for line in per_tag:
        assert re.search(r"[+-]\d+\.\d\d \([+-]\d+\.\d\d…[+-]\d+\.\d\d\)", line), line
        assert re.search(r"\d+\.\d\d% → \d+\.\d\d%", line), line


def test_the_summary_says_where_its_duration_comes_from() -> None:
    sample = EvaluationSample("A", ["q"], "a")
    rows = [EvaluationRow.from_result(sample, "s", "a", EvaluationResult.passing(), duration=1.5)]
    reports = {
        "1.50 s of calls, summed": EvaluationReport(rows),
        "12.50 s wall clock": EvaluationReport(rows, run=RunInfo(0.0, 12.5)),
        "duration unknown": EvaluationReport(rows, run=RunInfo(0.0, complete=False)),
    }
    for said, report in reports.items():
        out = io.StringIO()
        report.print(Console(file=out, width=120, color_system=None))
        line = next(line for line in out.getvalue().splitlines() if line.strip().startswith("run"))
        assert line.rstrip().endswith(f", {said}"), line
