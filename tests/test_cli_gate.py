"""The gate of ``aeval run`` and ``aeval merge``: runs that scored nothing, ``max_errors``,
and the thresholds and verdict that every report records."""

from __future__ import annotations

import socket
import xml.etree.ElementTree as ET
from pathlib import Path

import orjson
import pytest
from _cli import Cli, cli, project, write_config

from aeval.formatters.json import report_from_json, report_to_dict

__all__ = ["cli", "project"]

_FAILING = "def answer(params):\n    raise ConnectionError('backend down')\n"


def _failing_project(project: Path, extra: str = "") -> Path:
    (project / "down_bot.py").write_text(_FAILING)
    return write_config(
        project,
        "samples: samples.yaml\ntarget: down_bot:answer\n"
        "strategies: [{name: not_blank}, {name: json}]\n"
        "output: {dir: out, formats: [json, junit, markdown, html]}\n" + extra,
    )


def test_a_run_where_every_call_failed_fails_naming_the_error(project: Path, cli: Cli) -> None:
    config = _failing_project(project)

    result = cli("run", config, "--quiet", cwd=project)

    assert result.returncode == 1
    assert result.stdout == (
        "FAILED: scored rows: none of the 6 rows could be scored (6 errors); the most common "
        "error: ConnectionError in 6 rows: backend down\n"
    )
    gate = orjson.loads((project / "out" / "report.json").read_bytes())["gate"]
    assert gate["verdict"] == "missed"
    assert [check["name"] for check in gate["checks"]] == ["scored rows"]


def test_a_judge_that_cannot_be_reached_fails_the_run(project: Path, cli: Cli) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\nstore: false\n"
        "strategies:\n  - name: judge\n    model:\n"
        f"      model: m\n      base_url: http://127.0.0.1:{port}/v1\n      max_attempts: 1\n",
    )

    result = cli("run", config, "--quiet", cwd=project)

    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.startswith(
        "FAILED: scored rows: none of the 3 rows could be scored (3 errors); the most common "
        "error: "
    )


def test_a_run_that_scored_some_rows_keeps_its_exit_code(project: Path, cli: Cli) -> None:
    config = write_config(
        project, "samples: samples.yaml\ntarget: cli_targets:echo\nstrategies: [{name: json}]\n"
    )
    result = cli("run", config, "--quiet", cwd=project)
    assert (result.returncode, result.stdout) == (0, "DONE: no threshold configured\n")


_ONE_BAD = (
    "def answer(params):\n"
    "    if params[0] == 'left':\n        raise ValueError('no')\n"
    "    return params[0]\n"
)


@pytest.mark.parametrize(
    ("limit", "code", "line"),
    [
        ("1", 0, "PASSED: errors 1 <= 1; score 66.67% >= 0.00%"),
        ("0", 1, "FAILED: errors 1 > 0"),
        ("'34%'", 0, "PASSED: errors 33.33% <= 34.00%; score 66.67% >= 0.00%"),
        ("'33.3%'", 1, "FAILED: errors 33.33% > 33.30%"),
    ],
)
def test_max_errors_in_the_config(
    project: Path, cli: Cli, limit: str, code: int, line: str
) -> None:
    (project / "one_bad.py").write_text(_ONE_BAD)
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: one_bad:answer\nstrategies: [{name: exact_match}]\n"
        f"thresholds:\n  min_score: 0\n  max_errors: {limit}\n",
    )
    result = cli("run", config, "--quiet", cwd=project)
    assert (result.returncode, result.stdout) == (code, line + "\n")


@pytest.mark.parametrize(
    ("flag", "code", "line"),
    [
        ("0", 1, "FAILED: errors 1 > 0"),
        ("1", 0, "PASSED: errors 1 <= 1"),
        ("34%", 0, "PASSED: errors 33.33% <= 34.00%"),
        ("33%", 1, "FAILED: errors 33.33% > 33.00%"),
    ],
)
def test_max_errors_on_the_command_line_overrides_the_config(
    project: Path, cli: Cli, flag: str, code: int, line: str
) -> None:
    (project / "one_bad.py").write_text(_ONE_BAD)
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: one_bad:answer\nstrategies: [{name: exact_match}]\n"
        "thresholds: {max_errors: 3}\n",
    )
    result = cli("run", config, "--quiet", "--max-errors", flag, cwd=project)
    assert (result.returncode, result.stdout) == (code, line + "\n")


def test_max_errors_that_is_not_a_count_or_percentage_is_a_config_error(
    project: Path, cli: Cli
) -> None:
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\nstrategies: [{name: json}]\n"
        "thresholds:\n  max_errors: '150%'\n",
    )
    result = cli("run", config, cwd=project)
    assert result.returncode == 2
    assert result.stderr == (
        f"aeval: error: {config}:5: thresholds.max_errors: expected a count >= 0 or a "
        "percentage from 0% to 100% like '5%', got '150%'\n"
    )
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\nstrategies: [{name: json}]\n"
        "thresholds:\n  max_errors: lots\n",
    )
    result = cli("run", config, cwd=project)
    assert result.returncode == 2
    assert "thresholds.max_errors: expected an integer or a string" not in result.stderr
    assert "max_errors" in result.stderr

    result = cli("run", config, "--max-errors", "-1", cwd=project)
    assert result.returncode == 2
    assert "argument --max-errors: expected a count >= 0 or a percentage" in result.stderr


def _gate_of_reports(out: Path) -> tuple[dict[str, object], dict[str, str], str, str]:
    document = orjson.loads((out / "report.json").read_bytes())
    root = ET.parse(out / "report.xml").getroot()
    properties = {p.get("name", ""): p.get("value", "") for p in root.iter("property")}
    return (
        document["gate"],
        properties,
        (out / "report.md").read_text(),
        (out / "report.html").read_text(),
    )


def test_every_report_records_the_missed_gate(project: Path, cli: Cli) -> None:
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\nstrategies: [{name: exact_match}]\n"
        "thresholds:\n  min_score: 90\n  tag_min_scores: {smoke: 100}\n  max_errors: 0\n"
        "output: {dir: out, formats: [json, junit, markdown, html]}\n",
    )

    result = cli("run", config, "--quiet", cwd=project)

    assert result.returncode == 1
    gate, properties, markdown, html = _gate_of_reports(project / "out")
    assert gate == {
        "verdict": "missed",
        "checks": [
            {
                "name": "errors",
                "bound": "max",
                "threshold": 0.0,
                "actual": 0.0,
                "passed": True,
                "text": "errors 0 <= 0",
            },
            {
                "name": "score",
                "bound": "min",
                "threshold": 90.0,
                "actual": pytest.approx(66.6667, abs=1e-3),
                "passed": False,
                "text": "score 66.67% < 90.00%",
            },
            {
                "name": "tag smoke",
                "bound": "min",
                "threshold": 100.0,
                "actual": 100.0,
                "passed": True,
                "text": "tag smoke 100.00% >= 100.00%",
            },
        ],
    }
    assert properties["gate"] == "missed"
    assert properties["gate.score"] == "missed: score 66.67% < 90.00%"
    assert properties["gate.tag.smoke"] == "met: tag smoke 100.00% >= 100.00%"
    assert properties["gate.errors"] == "met: errors 0 <= 0"
    assert "- **Gate**: MISSED: score 66.67% &lt; 90.00%" in markdown
    assert "<dt>Gate</dt><dd>MISSED: score 66.67% &lt; 90.00%</dd>" in html


def test_every_report_records_a_passed_gate_and_no_gate(project: Path, cli: Cli) -> None:
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\nstrategies: [{name: not_blank}]\n"
        "output: {dir: out, formats: [json, junit, markdown, html]}\n",
    )

    assert cli("run", config, "--quiet", "--min-score", "50", cwd=project).returncode == 0
    gate, properties, markdown, html = _gate_of_reports(project / "out")
    assert gate["verdict"] == "passed"
    assert properties["gate"] == "passed"
    assert "- **Gate**: PASSED: score 100.00% &gt;= 50.00%" in markdown
    assert "<dt>Gate</dt><dd>PASSED: score 100.00% &gt;= 50.00%</dd>" in html

    assert cli("run", config, "--quiet", cwd=project).returncode == 0
    gate, properties, markdown, html = _gate_of_reports(project / "out")
    assert gate == {"verdict": "none", "checks": []}
    assert properties["gate"] == "none"
    assert "- **Gate**: none (no threshold configured)" in markdown
    assert "<dt>Gate</dt><dd>none (no threshold configured)</dd>" in html


def test_merge_records_its_gate(project: Path, cli: Cli) -> None:
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\nstrategies: [{name: exact_match}]\n"
        "thresholds: {min_score: 50}\n",
    )
    for shard in ("1/2", "2/2"):
        out = project / "shards" / shard.replace("/", "-")
        result = cli("run", config, "--shard", shard, "--output", out, "--quiet", cwd=project)
        assert result.returncode == 0
        assert "gate" in orjson.loads((out / "report.json").read_bytes())
        shard_gate = orjson.loads((out / "report.json").read_bytes())["gate"]
        assert shard_gate["verdict"] == "none"
        assert [(c["name"], c["passed"]) for c in shard_gate["checks"]] == [("score", None)]

    result = cli(
        "merge",
        project / "shards",
        "--config",
        config,
        "--output",
        project / "merged",
        "--max-errors",
        "0",
        "--quiet",
        cwd=project,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    gate = orjson.loads((project / "merged" / "report.json").read_bytes())["gate"]
    assert gate["verdict"] == "passed"
    assert [check["name"] for check in gate["checks"]] == ["errors", "score"]


def test_json_counts_are_named_for_what_they_count_and_old_names_still_load(
    project: Path, cli: Cli
) -> None:
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\n"
        "strategies: [{name: exact_match}, {name: not_blank}]\nthresholds: {min_score: 10}\n",
    )
    assert cli("run", config, "--quiet", cwd=project).returncode == 0
    text = (project / "aeval-results" / "report.json").read_bytes()
    document = orjson.loads(text)
    assert (document["samples"], document["rows"]) == (3, 6)
    assert (document["passedRows"], document["failedRows"]) == (5, 1)

    report = report_from_json(text)
    again_document = report_to_dict(report)
    assert {k: v for k, v in again_document.items() if k != "evaluations"} == {
        k: v for k, v in document.items() if k != "evaluations"
    }
    assert report.run.gate is not None and report.run.gate.verdict == "passed"

    older = {
        k: v
        for k, v in document.items()
        if k not in ("samples", "passedRows", "failedRows", "gate")
    }
    again = report_from_json(orjson.dumps(older))
    assert (again.sample_count, again.passed_count, again.failed_count) == (3, 5, 1)
    assert again.run.gate is None


def test_a_gate_survives_the_rows_header_round_trip() -> None:
    from aeval import RunInfo

    check = {
        "name": "score",
        "bound": "min",
        "threshold": 80.0,
        "actual": 50.0,
        "passed": False,
        "text": "score 50.00% < 80.00%",
    }
    run = RunInfo.from_dict({"gate": {"verdict": "missed", "checks": [check]}})
    assert run.gate is not None and run.gate.verdict == "missed"
    assert run.to_dict()["gate"] == {"verdict": "missed", "checks": [check]}
    assert RunInfo.from_dict(orjson.loads(orjson.dumps(run.to_dict()))) == run
    assert "gate" not in RunInfo().to_dict()
