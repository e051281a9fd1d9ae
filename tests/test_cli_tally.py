"""``aeval run`` counts each row as the rows reach its sinks (a tally, the last sink): the
error types of the verdict and the display's counts cover every row, also rows the report
does not keep."""

from __future__ import annotations

from pathlib import Path

import orjson
from _cli import Cli, cli, project, write_config

__all__ = ["cli", "project"]

_TARGET = """
async def answer(text: str) -> str:
    number = int(text.removeprefix("in-"))
    if number % 5 < 3:
        raise ValueError(f"bad {number}")
    raise KeyError(number)
"""


def _streamed_project(project: Path, count: int) -> Path:
    (project / "flaky_bot.py").write_text(_TARGET)
    lines = [
        orjson.dumps({"name": f"s{i}", "parameters": [f"in-{i}"], "expected-output": "x"})
        for i in range(count)
    ]
    (project / "samples.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return write_config(
        project,
        "samples: samples.jsonl\ntarget: flaky_bot:answer\nstrategies: [{name: not_blank}]\n"
        "output: {dir: out, formats: [json]}\n",
    )


def test_the_verdict_names_the_most_common_error_of_rows_the_report_does_not_keep(
    project: Path, cli: Cli
) -> None:
    config = _streamed_project(project, 10)

    result = cli("run", config, "--quiet", "--keep", "none", "--no-store", cwd=project)

    assert result.returncode == 1
    assert result.stdout == (
        "FAILED: scored rows: none of the 10 rows could be scored (10 errors); the most "
        "common error: ValueError in 6 rows\n"
    )
    report = orjson.loads((project / "out" / "report.json").read_bytes())
    assert (report["rows"], report["errors"]) == (10, 10)
    rows = (project / "out" / "rows.jsonl").read_bytes().splitlines()[1:-1]
    types = sorted(orjson.loads(line)["error"]["type"] for line in rows)
    assert types == ["KeyError"] * 4 + ["ValueError"] * 6


def test_the_display_counts_every_row(project: Path, cli: Cli) -> None:
    config = _streamed_project(project, 7)

    result = cli("run", config, "--no-store", cwd=project)

    assert result.returncode == 1
    done = [line for line in result.stderr.splitlines() if line.startswith("aeval: done: ")]
    assert len(done) == 1, done
    assert done[0].startswith("aeval: done: 7/7 samples | 7 rows | pass 0.0% | 7 errors"), done
    assert "the most common error: ValueError in 5 rows: bad 0" in result.stdout


def test_without_a_display_the_error_types_of_kept_rows_match_the_tally(
    project: Path, cli: Cli
) -> None:
    """``--quiet`` with a report that keeps the failures counts the error types from it, at
    the end; ``--keep none`` counts them as rows arrive: the same counts either way."""
    config = _streamed_project(project, 12)
    verdicts = {}
    for keep in ("failures", "all", "none"):
        result = cli("run", config, "--quiet", "--keep", keep, "--no-store", cwd=project)
        assert result.returncode == 1
        verdicts[keep] = result.stdout
    common = (
        "FAILED: scored rows: none of the 12 rows could be scored (12 errors); the most "
        "common error: ValueError in 8 rows"
    )
    assert verdicts["none"] == common + "\n"
    assert verdicts["failures"] == verdicts["all"] == common + ": bad 0\n"
