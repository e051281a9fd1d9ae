"""``aeval calibrate REF``: the judge against the stored labels, the reviewers' agreement and
the kappa gate, from the store alone."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from _cli import Cli, cli

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    RunInfo,
    RunStore,
)

__all__ = ["cli"]

#                 s0    s1     s2    s3     s4    s5     s6    s7
VERDICTS = [True, True, False, False, True, False, True, False]
ANN = [True, True, False, False, False, False, True, True]
BOB = [True, False, False, False, False, False, True, True]


def make_report() -> EvaluationReport:
    rows = [
        EvaluationRow.from_result(
            EvaluationSample(f"s{i}", [i], metadata={"label": "pass"} if i < 2 else None),
            "judge",
            f"answer {i}",
            EvaluationResult(passed, 0.8 if passed else 0.2, f"why {i}"),
            index=i,
        )
        for i, passed in enumerate(VERDICTS)
    ]
    return EvaluationReport(rows, run=RunInfo(started_at=1.0e9, finished_at=1.0e9 + 1))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "runs.sqlite"

    async def fill() -> None:
        async with RunStore(path) as runs:
            run_id = await runs.save(make_report(), "bot")
            for reviewer, verdicts in (("ann", ANN), ("bob", BOB)):
                for i, passed in enumerate(verdicts):
                    await runs.add_label(
                        run_id,
                        sample=f"s{i}",
                        strategy="judge",
                        reviewer=reviewer,
                        verdict="pass" if passed else "fail",
                        note="wrong year" if i == 4 else None,
                    )

    anyio.run(fill)
    return path


def test_calibrate_prints_the_judge_the_sources_and_the_agreement(store: Path, cli: Cli) -> None:
    result = cli("calibrate", "bot@latest", "--reviewer", "ann", "--store", store)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    # ann against the verdicts: s4 (label fail, verdict pass) and s7 (pass, fail) disagree
    assert "Review labels (ann): kappa 0.50 [" in out
    assert "accuracy 75.00% over 8 rows" in out
    assert "  label pass               3             1" in out
    assert "  label fail               1             3" in out
    assert "    s4: label fail, verdict pass: why 4" in out
    assert "    s7: label pass, verdict fail: why 7" in out
    assert "Sample file labels: kappa undefined (every label and every verdict is pass)" in out
    assert "Reviewer agreement: Cohen's kappa ann / bob: kappa 0.75 [" in out
    assert "87.50% agreed over 8 rows" in out
    assert result.stderr == ""


def test_the_gate_exits_1_below_the_minimum(store: Path, cli: Cli) -> None:
    below = cli("calibrate", "latest", "--reviewer", "ann", "--min-kappa", "0.6", "--store", store)
    assert below.returncode == 1
    assert "aeval: kappa 0.50 is below the minimum 0.6" in below.stderr
    met = cli("calibrate", "latest", "--reviewer", "ann", "--min-kappa", "0.5", "--store", store)
    assert met.returncode == 0, met.stderr
    assert "aeval: kappa 0.50 is at least the minimum 0.5" in met.stderr


def test_json_holds_every_figure(store: Path, cli: Cli) -> None:
    result = cli("calibrate", "latest", "--format", "json", "--min-kappa", "0.9", "--store", store)
    assert result.returncode == 1
    document = json.loads(result.stdout)
    assert document["strategy"] == "judge"
    assert document["reviewers"] == ["ann", "bob"]
    # no --reviewer: ann and bob split on s1 (a tie, left out); the majority elsewhere
    assert document["ties"] == 1
    assert document["review"]["rows"] == 7
    assert document["agreement"]["method"] == "cohen"
    assert document["agreement"]["kappa"] == pytest.approx(0.75)
    assert document["sampleFile"]["rows"] == 2
    assert document["gate"] == {
        "minKappa": 0.9,
        "kappa": document["review"]["kappa"],
        "passed": False,
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "no stored run matches 'nope'"),
        (["latest", "--reviewer", "zed"], "no current review label by 'zed'"),
        (["latest", "--strategy", "exact"], "the strategy 'exact' has no current review label"),
        (["latest", "--min-kappa", "2"], "expected a kappa from -1 to 1, got '2'"),
    ],
)
def test_what_cannot_be_calibrated_exits_2(
    store: Path, cli: Cli, args: list[str], message: str
) -> None:
    result = cli("calibrate", *args, "--store", store)
    assert result.returncode == 2
    assert message in result.stderr


def test_no_store_exits_2(tmp_path: Path, cli: Cli) -> None:
    result = cli("calibrate", "latest", "--store", tmp_path / "none.sqlite")
    assert result.returncode == 2
    assert "no run store there" in result.stderr
