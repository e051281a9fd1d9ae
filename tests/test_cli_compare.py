"""``aeval compare BASE CAND`` and ``aeval run CONFIG --baseline REF``: the tables, the files,
the gates and their exit codes (0 passed, 1 a gate failed, 2 bad input)."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import anyio
import orjson
import pytest
import xmlschema
from _cli import DATA, Cli, cli, write_config
from _compare import run

import aeval
from aeval import EvaluationReport, EvaluationResult, EvaluationRow, EvaluationSample
from aeval.strategies import ExactMatchStrategy

__all__ = ["cli"]

SCHEMA = xmlschema.XMLSchema(DATA / "junit.xsd")


def write_rows(path: Path, report: EvaluationReport) -> Path:
    """``report``'s rows as a run's ``rows.jsonl``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sink = aeval.JsonlSink(path)

    async def write() -> None:
        for row in report.evaluations:
            await sink.send(row)
        await sink.flush()

    anyio.run(write)
    return path


def forty(passed: int) -> EvaluationReport:
    tags = {f"s{i}": ["early"] if i < 10 else ["late"] for i in range(40)}
    return run({f"s{i}": {"exact": "P" if i < passed else "F"} for i in range(40)}, tags=tags)


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Path, Path]:
    """A baseline passing 38 of 40 samples and a candidate passing 20."""
    return (
        write_rows(tmp_path / "main" / "rows.jsonl", forty(38)),
        write_rows(tmp_path / "branch" / "rows.jsonl", forty(20)),
    )


def test_compare_prints_the_tables_and_exits_0_without_a_gate(
    sides: tuple[Path, Path], cli: Cli
) -> None:
    base, cand = sides
    result = cli("compare", base, cand)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"baseline          {base}" in out
    assert "difference        -45.00 points (95% CI -" in out
    assert "p-value           p < 0.001 (exact McNemar test)" in out
    assert "power             with 40 samples only a change of" in out
    assert "Regressions (passed → not passed): 18" in out
    assert re.search(r"late\s+30\s+93\.33% → 33\.33%", out)
    assert out.splitlines()[-1] == (
        "DONE: worse; no gate set (--fail-on-regression, --require-non-inferiority)"
    )
    assert result.stderr == ""


def test_fail_on_regression_exits_1_naming_each_regression(
    sides: tuple[Path, Path], cli: Cli
) -> None:
    base, cand = sides
    result = cli("compare", base, cand, "--fail-on-regression", "--margin", "2")
    assert result.returncode == 1
    last = result.stdout.splitlines()[-1]
    assert last.startswith(
        "FAILED: significant regression on overall: 95.00% → 50.00%, -45.00 points (95% CI"
    )
    assert "beyond the margin of 2.00 points; significant regression on tag late: " in last
    assert "tag early" not in last, "8 of 10 early samples still pass: not significant"


def test_a_wide_margin_or_a_better_candidate_passes_the_gate(
    sides: tuple[Path, Path], cli: Cli
) -> None:
    base, cand = sides
    wide = cli("compare", base, cand, "--fail-on-regression", "--margin", "80")
    assert wide.returncode == 0
    assert wide.stdout.splitlines()[-1] == "PASSED: no significant regression beyond 80.00 points"
    better = cli("compare", cand, base, "--fail-on-regression")
    assert better.returncode == 0
    assert "verdict           better" in better.stdout


def test_non_inferiority_needs_the_interval_above_minus_the_margin(
    tmp_path: Path, cli: Cli
) -> None:
    base = write_rows(tmp_path / "a.jsonl", forty(30))
    same = write_rows(tmp_path / "b.jsonl", forty(30))
    result = cli("compare", base, same, "--require-non-inferiority", "10")
    assert result.returncode == 0
    assert result.stdout.splitlines()[-1] == (
        "PASSED: non-inferior: the interval's low end -8.76 is above -10.00 points"
    )
    # 40 identical samples cannot show that nothing moved by more than 1 point
    result = cli("compare", base, same, "--require-non-inferiority", "1")
    assert result.returncode == 1
    assert result.stdout.splitlines()[-1].startswith(
        "FAILED: non-inferiority not shown: the difference 0.00 points has the 95% interval -8.76"
    )
    worse = write_rows(tmp_path / "c.jsonl", forty(28))
    result = cli("compare", base, worse, "--require-non-inferiority", "5")
    assert result.returncode == 1
    assert result.stdout.splitlines()[-1].startswith(
        "FAILED: non-inferiority not shown: the difference -5.00 points has the 95% interval -"
    )
    assert "--fail-on-regression" not in result.stdout.splitlines()[-1]


def test_formats_go_to_stdout_or_to_a_file(sides: tuple[Path, Path], cli: Cli) -> None:
    base, cand = sides
    result = cli("compare", base, cand, "--format", "json", "--fail-on-regression")
    assert result.returncode == 1
    data = orjson.loads(result.stdout)
    assert data["verdict"] == "worse" and data["baseline"] == str(base)
    assert result.stderr.startswith("aeval: FAILED: significant regression on overall")
    out = base.parent.parent / "reports" / "comparison.xml"
    result = cli("compare", base, cand, "--output", out, "--margin", "1")
    assert result.returncode == 0
    SCHEMA.validate(out.read_text(encoding="utf-8"))
    assert f"Comparison written to {out}" in result.stdout
    assert "beyond the margin of 1.00 points" in out.read_text(encoding="utf-8")
    html = base.parent / "c.html"
    assert cli("compare", base, cand, "--format", "html", "--output", html).returncode == 0
    assert html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    text = base.parent / "c.log"
    assert cli("compare", base, cand, "--format", "terminal", "--output", text).returncode == 0
    assert "Comparison (candidate − baseline)" in text.read_text(encoding="utf-8")


def test_a_report_json_side_works_and_one_without_every_row_is_refused(
    tmp_path: Path, sides: tuple[Path, Path], cli: Cli
) -> None:
    base, _ = sides
    whole = tmp_path / "report.json"
    whole.write_text(forty(20).format("json"), encoding="utf-8")
    assert cli("compare", base, whole).returncode == 0
    samples = [EvaluationSample(f"s{i}", [i], "P") for i in range(40)]
    partial_report = aeval.evaluate_sync(
        samples, lambda i: "P" if i < 20 else "F", ExactMatchStrategy(), keep="failures"
    )
    cut = tmp_path / "cut" / "report.json"
    cut.parent.mkdir()
    cut.write_text(partial_report.format("json"), encoding="utf-8")
    result = cli("compare", base, cut)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"aeval: error: the candidate ({cut}) holds 20 of its 40 rows (it was built with "
        "keep='failures' or keep='none'), and a comparison needs every row: compare the run's "
        "rows.jsonl, or build the report with keep='all'\n"
    )


def test_bad_input_exits_2_naming_the_side_and_the_fix(
    tmp_path: Path, sides: tuple[Path, Path], cli: Cli
) -> None:
    cli.use_default_store()
    base, cand = sides
    missing = cli("compare", tmp_path / "nope.jsonl", cand)
    assert missing.returncode == 2
    assert missing.stderr.startswith(f"aeval: error: the baseline file {tmp_path / 'nope.jsonl'}")
    ref = cli("compare", base, "latest", cwd=tmp_path)
    assert ref.returncode == 2
    assert ref.stderr == (
        "aeval: error: the candidate 'latest' is not a file, and there is no run store at "
        ".aeval/runs.sqlite to look it up in: give the path of a run's rows.jsonl or "
        "report.json, or point --store (or $AEVAL_STORE) at the store that aeval run records "
        "into\n"
    )
    env = cli("compare", "latest~1", cand, env={"AEVAL_STORE": str(tmp_path / "ci.sqlite")})
    assert f"there is no run store at {tmp_path / 'ci.sqlite'}" in env.stderr
    flag = cli("compare", "main@latest", cand, "--store", tmp_path / "x.sqlite")
    assert f"there is no run store at {tmp_path / 'x.sqlite'}" in flag.stderr
    twin = EvaluationSample("s0", ["another question"], "another answer")
    extra = EvaluationRow.from_result(twin, "exact", "x", EvaluationResult.passing(), index=40)
    twins = write_rows(tmp_path / "twins.jsonl", EvaluationReport([*forty(1).evaluations, extra]))
    dup = cli("compare", twins, cand)
    assert dup.returncode == 2
    assert dup.stderr == (
        f"aeval: error: the baseline ({twins}) has different samples under one name: 's0' (2 "
        "different samples, at positions 1, 41). Runs are aligned by sample name: give each "
        "sample a unique name and run again.\n"
    )
    for flags, said in (
        (["--margin", "-1"], "expected percentage points from 0 to 100, got '-1'"),
        (["--confidence", "95"], "expected a confidence strictly between 0 and 1"),
        (["--format", "pdf"], "invalid choice: 'pdf'"),
    ):
        usage = cli("compare", base, cand, *flags)
        assert usage.returncode == 2, flags
        assert said in usage.stderr
    unknown = cli("compare", base, cand, "--output", tmp_path / "c.pdf")
    assert unknown.returncode == 2
    assert "no comparison format for the extension '.pdf'" in unknown.stderr


# -- aeval run --baseline -------------------------------------------------------------------

CONFIG = """\
samples: samples.yaml
target: cli_targets:{target}
strategies:
  - name: exact_match
output:
  dir: {out}
  formats: [markdown, json, junit]
"""


@pytest.fixture
def thirty(tmp_path: Path) -> Path:
    """A project with 30 samples whose expected output is their (lower-case) parameter."""
    (tmp_path / "cli_targets.py").write_text(
        (DATA / "cli_targets.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    lines = [
        f'- name: "s{i}"\n  parameters: ["word{i}"]\n  expected-output: "word{i}"\n'
        for i in range(30)
    ]
    (tmp_path / "samples.yaml").write_text("".join(lines), encoding="utf-8")
    return tmp_path


def test_run_with_a_baseline_compares_at_the_end_and_gates(thirty: Path, cli: Cli) -> None:
    first = write_config(thirty, CONFIG.format(target="echo", out="main"), "main.yaml")
    assert cli("run", first, cwd=thirty).returncode == 0
    second = write_config(thirty, CONFIG.format(target="shout", out="branch"), "branch.yaml")
    result = cli("run", second, "--baseline", "main/rows.jsonl", "--fail-on-regression", cwd=thirty)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[-2] == "DONE: no threshold configured"
    assert lines[-1].startswith(
        "BASELINE FAILED: significant regression on overall: 100.00% → 0.00%, -100.00 points"
    )
    assert "Regressions (passed → not passed): 30" in result.stdout
    branch = thirty / "branch"
    assert sorted(p.name for p in branch.glob("comparison.*")) == [
        "comparison.json",
        "comparison.md",
        "comparison.xml",
    ]
    SCHEMA.validate((branch / "comparison.xml").read_text(encoding="utf-8"))
    data = orjson.loads((branch / "comparison.json").read_bytes())
    assert data["baseline"] == "main/rows.jsonl"
    assert data["candidate"] == f"this run ({branch})"
    again = cli("run", first, "--baseline", "main/report.json", "--quiet", cwd=thirty)
    assert again.returncode == 0
    assert again.stdout.splitlines()[-1] == (
        "BASELINE DONE: no significant difference; no gate set (--fail-on-regression, "
        "--require-non-inferiority)"
    )


def test_run_refuses_a_bad_baseline_before_running(thirty: Path, cli: Cli) -> None:
    config = write_config(thirty, CONFIG.format(target="echo", out="out"))
    result = cli("run", config, "--baseline", "gone/rows.jsonl", cwd=thirty)
    assert result.returncode == 2
    assert result.stderr.startswith("aeval: error: the baseline file gone/rows.jsonl")
    assert not (thirty / "out").exists(), "nothing ran"
    gate = cli("run", config, "--fail-on-regression", cwd=thirty)
    assert gate.returncode == 2
    assert "give it with --baseline REF" in gate.stderr


def test_a_streamed_run_is_compared_through_its_rows_jsonl(thirty: Path, cli: Cli) -> None:
    lines = [
        orjson.dumps({"name": f"s{i}", "parameters": [f"word{i}"], "expected-output": f"word{i}"})
        for i in range(30)
    ]
    (thirty / "samples.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    text = CONFIG.format(target="echo", out="{out}").replace("samples.yaml", "samples.jsonl")
    first = write_config(thirty, text.format(out="a"), "a.yaml")
    assert cli("run", first, cwd=thirty).returncode == 0
    # a streamed run keeps only the failures in report.json: refused as a side, saying why
    again = write_config(thirty, text.format(out="b"), "b.yaml")
    refused = cli("run", again, "--baseline", "a/report.json", cwd=thirty)
    assert refused.returncode == 2
    assert refused.stderr.startswith("aeval: error: the baseline (a/report.json) holds 0 of its")
    # its rows.jsonl has every row; the candidate is compared through its own rows.jsonl
    result = cli("run", again, "--baseline", "a/rows.jsonl", cwd=thirty)
    assert result.returncode == 0
    assert f"candidate         {thirty / 'b' / 'rows.jsonl'}" in result.stdout
    assert "difference        0.00 points" in result.stdout


# -- stored runs ----------------------------------------------------------------------------


async def _store_runs(path: Path, *reports: EvaluationReport) -> list[str]:
    store = aeval.RunStore(path)  # type: ignore[attr-defined, unused-ignore]
    try:
        return [str(await store.save(report, name="bot")) for report in reports]
    finally:
        close = getattr(store, "aclose", None) or getattr(store, "close", None)
        if close is not None:
            result = close()
            if hasattr(result, "__await__"):
                await result


def test_compare_takes_stored_runs_by_ref(tmp_path: Path, cli: Cli) -> None:
    cli.use_default_store()
    store = tmp_path / ".aeval" / "runs.sqlite"
    ids = anyio.run(partial(_store_runs, store, forty(38), forty(20)))
    result = cli("compare", "latest~1", "latest", "--fail-on-regression", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert f"baseline          run {ids[0]} (latest~1)" in result.stdout
    assert f"candidate         run {ids[1]} (latest)" in result.stdout
    by_name = cli("compare", "bot@latest", ids[0], "--store", store, cwd=tmp_path.parent)
    assert by_name.returncode == 0 and "verdict           better" in by_name.stdout
    from_env = cli(
        "compare", ids[0], "latest", cwd=tmp_path.parent, env={"AEVAL_STORE": str(store)}
    )
    assert from_env.returncode == 0 and "verdict           worse" in from_env.stdout
    unknown = cli("compare", "nosuchrun", "latest", cwd=tmp_path)
    assert unknown.returncode == 2
    assert unknown.stderr.startswith(
        "aeval: error: the baseline 'nosuchrun' is not a file, and the run store cannot load it"
    )
