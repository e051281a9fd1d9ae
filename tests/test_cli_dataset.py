"""``aeval dataset from REF --failures``: failed rows become samples the loaders read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from _cli import Cli, cli

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    RunInfo,
    RunStore,
    Samples,
)
from aeval.online import OnlineEvaluator
from aeval.strategies import NotBlankStrategy

__all__ = ["cli"]

TRICKY = 'He said: "no" — it\'s 100% wrong\n- not a list\nkey: value # not a comment\tyes'
SAMPLES = [
    EvaluationSample(
        "refund",
        {"question": "Can I get a refund?", "order": 42},
        "Yes, within 30 days.",
        tags=["billing", "smoke"],
        metadata={"label": "pass", "owner": "support", "must_contain": ["30 days"]},
    ),
    EvaluationSample("hours", ["When are you open?"], ["9-5", "nine to five"]),
    EvaluationSample("tricky: yes", [TRICKY], "null"),
    EvaluationSample("fine", ["hi"], "hello"),
    EvaluationSample("émoji ✓", ["ça va ? 🤖"]),
]
OUTPUTS = {
    "refund": "No refunds, ever.",
    "hours": {"open": "never", "days": []},
    "tricky: yes": TRICKY + "\nyes\n",
    "fine": "hello",
    "émoji ✓": "ça va 🤖",
}
VERDICTS = {"refund": False, "hours": False, "tricky: yes": False, "fine": True, "émoji ✓": True}


def make_report() -> EvaluationReport:
    rows = []
    for index, sample in enumerate(SAMPLES):
        passed = VERDICTS[sample.name]
        for position, strategy in enumerate(("judge", "exact")):
            result = EvaluationResult(passed, 1.0 if passed else 0.0, f"{strategy} says so")
            rows.append(
                EvaluationRow.from_result(
                    sample,
                    strategy,
                    OUTPUTS[sample.name],
                    result,
                    index=index,
                    position=position,
                )
            )
    return EvaluationReport(rows, run=RunInfo(started_at=1.0e9, finished_at=1.0e9 + 1))


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "runs.sqlite"

    async def fill() -> str:
        async with RunStore(path) as store:
            run_id = await store.save(make_report(), "bot")
            await store.add_label(
                run_id,
                sample="refund",
                strategy="judge",
                reviewer="ann",
                verdict="fail",
                note='Refunds are allowed: "30 days"\nsee policy §4',
            )
            await store.add_label(
                run_id,
                sample="émoji ✓",
                strategy="judge",
                reviewer="bob",
                verdict="fail",
                note="should answer in French",
            )
            await store.add_label(
                run_id, sample="fine", strategy="judge", reviewer="bob", verdict="pass"
            )
            return run_id

    return path, anyio.run(fill)


def load(path: Path) -> dict[str, EvaluationSample]:
    return {sample.name: sample for sample in Samples.load_sync(path)}


def test_failed_rows_become_samples_that_load_back(
    stored: tuple[Path, str], tmp_path: Path, cli: Cli
) -> None:
    store, run_id = stored
    output = tmp_path / "evals" / "failed.yaml"
    args = ("dataset", "from", "bot@latest", "--failures", "--output", output)
    result = cli(*args, "--store", store)
    assert result.returncode == 0, result.stderr
    assert f"3 sample(s) (6 failed rows) of run {run_id} written to" in result.stdout
    text = output.read_text(encoding="utf-8")
    assert text.startswith(f"# 3 sample(s) from the failed rows of run {run_id}")
    assert "émoji" not in text  # it passed
    assert "\\u" not in text  # unicode written as it is
    samples = load(output)
    assert list(samples) == ["refund", "hours", "tricky: yes"]
    refund = samples["refund"]
    assert refund.parameters.names == ("question", "order")
    assert list(refund.parameters.values) == ["Can I get a refund?", 42]
    assert refund.expected_output == "Yes, within 30 days."
    assert refund.tags == ("billing", "smoke")
    metadata = dict(refund.metadata)
    assert "label" not in metadata  # the label judged another output
    assert metadata["owner"] == "support"
    assert metadata["must_contain"] == ["30 days"]
    assert metadata["description"] == 'Refunds are allowed: "30 days"\nsee policy §4'
    assert metadata["failed_output"] == "No refunds, ever."
    assert metadata["failure"] == {
        "run": run_id,
        "strategies": ["judge", "exact"],
        "outcome": "failed",
        "score": 0.0,
        "explanation": "judge says so",
        "reviewers": ["ann"],
    }
    hours = samples["hours"]
    assert list(hours.parameters.values) == ["When are you open?"]
    assert hours.expected_output == ["9-5", "nine to five"]
    assert hours.metadata["failed_output"] == {"open": "never", "days": []}
    assert "description" not in hours.metadata
    tricky = samples["tricky: yes"]
    assert list(tricky.parameters.values) == [TRICKY]
    assert tricky.expected_output == "null"
    assert tricky.metadata["failed_output"] == TRICKY + "\nyes\n"


def test_a_failed_row_a_reviewer_labelled_pass_is_noted(
    stored: tuple[Path, str], tmp_path: Path, cli: Cli
) -> None:
    store, run_id = stored

    async def label() -> None:
        async with RunStore(store) as opened:
            await opened.add_label(
                run_id, sample="hours", strategy="exact", reviewer="cy", verdict="pass"
            )

    anyio.run(label)
    output = tmp_path / "failed.yaml"
    result = cli("dataset", "from", "latest", "--failures", "--output", output, "--store", store)
    assert result.returncode == 0, result.stderr
    assert "1 of these failed sample(s) a reviewer labelled pass (hours)" in result.stderr
    samples = load(output)
    assert samples["hours"].metadata["failure"]["labelled_pass_by"] == ["cy"]
    assert "labelled_pass_by" not in samples["refund"].metadata["failure"]


def test_reviewer_failed_rows_whatever_the_strategy_said(
    stored: tuple[Path, str], tmp_path: Path, cli: Cli
) -> None:
    store, _ = stored
    output = tmp_path / "reviewed.yaml"
    result = cli(
        "dataset",
        "from",
        "latest",
        "--failures",
        "--reviewed",
        "fail",
        "--output",
        output,
        "--store",
        store,
    )
    assert result.returncode == 0, result.stderr
    samples = load(output)
    assert list(samples) == ["refund", "émoji ✓"]
    french = samples["émoji ✓"]
    assert list(french.parameters.values) == ["ça va ? 🤖"]
    assert french.expected_output is None
    assert french.metadata["description"] == "should answer in French"
    assert french.metadata["failure"]["outcome"] == "passed"
    assert french.metadata["failure"]["strategies"] == ["judge"]


def test_an_existing_file_is_kept_unless_forced(
    stored: tuple[Path, str], tmp_path: Path, cli: Cli
) -> None:
    store, _ = stored
    output = tmp_path / "failed.yaml"
    output.write_text("- name: mine\n", encoding="utf-8")
    args: list[Any] = ["dataset", "from", "latest", "--failures", "--output", output]
    refused = cli(*args, "--store", store)
    assert refused.returncode == 2
    assert "the file exists: give --force to replace it, or another --output" in refused.stderr
    assert output.read_text(encoding="utf-8") == "- name: mine\n"
    forced = cli(*args, "--force", "--store", store)
    assert forced.returncode == 0, forced.stderr
    assert len(load(output)) == 3


def test_names_stay_unique_when_live_traffic_reuses_one(tmp_path: Path, cli: Cli) -> None:
    store_path = tmp_path / "runs.sqlite"

    async def serve() -> None:
        store = RunStore(store_path)
        async with OnlineEvaluator(NotBlankStrategy(), store=store, name="support") as online:
            online.submit({"question": "capital?"}, "", name="req")
            online.submit({"question": "capital?"}, "Paris", name="ok")
            online.submit({"question": "again?"}, "  ", name="req", tags=["retry"])
            await online.join()
        await store.aclose()

    anyio.run(serve)
    output = tmp_path / "live.yaml"
    args = ("dataset", "from", "support@latest", "--failures", "--output", output)
    result = cli(*args, "--store", store_path)
    assert result.returncode == 0, result.stderr
    samples = load(output)
    assert list(samples) == ["req", "req-2"]
    assert samples["req"].parameters.names == ("question",)
    assert samples["req-2"].tags == ("retry",)
    assert samples["req-2"].metadata["failed_output"] == "  "
    again = tmp_path / "again.yaml"
    cli(*args[:-1], again, "--store", store_path)
    assert (
        again.read_text(encoding="utf-8").split("\n", 2)[2]
        == output.read_text(encoding="utf-8").split("\n", 2)[2]
    )


def test_nothing_to_write_writes_nothing(tmp_path: Path, cli: Cli) -> None:
    path = tmp_path / "runs.sqlite"

    async def fill() -> None:
        async with RunStore(path) as store:
            rows = [
                EvaluationRow.from_result(
                    SAMPLES[3], "judge", "hello", EvaluationResult.from_boolean(True)
                )
            ]
            await store.save(EvaluationReport(rows), "bot")

    anyio.run(fill)
    output = tmp_path / "none.yaml"
    result = cli("dataset", "from", "latest", "--failures", "--output", output, "--store", path)
    assert result.returncode == 0
    assert "has no failed rows: nothing written" in result.stderr
    assert not output.exists()


def test_the_file_is_plain_yaml(stored: tuple[Path, str], tmp_path: Path, cli: Cli) -> None:
    store, _ = stored
    output = tmp_path / "failed.yaml"
    cli("dataset", "from", "latest", "--failures", "--output", output, "--store", store)
    document = yaml.safe_load(output.read_text(encoding="utf-8"))
    assert [entry["name"] for entry in document] == ["refund", "hours", "tricky: yes"]
    assert set(document[0]) == {"name", "parameters", "expected-output", "tags", "metadata"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "no stored run matches 'nope'"),
        (["latest", "--reviewed", "pass"], "invalid choice: 'pass'"),
    ],
)
def test_bad_input_exits_2(
    stored: tuple[Path, str], tmp_path: Path, cli: Cli, args: list[str], message: str
) -> None:
    store, _ = stored
    output = tmp_path / "x.yaml"
    result = cli("dataset", "from", *args, "--failures", "--output", output, "--store", store)
    assert result.returncode == 2
    assert message in result.stderr
    assert not output.exists()


NASTY = [
    "",
    " ",
    "  padded  ",
    "---",
    "...",
    "&anchor *alias !tag %dir @at `tick` | > ~",
    "0x10",
    "1e3",
    "True",
    "no",
    "null",
    "a\r\nb",
    "line one\nline two\n\n",
    "trailing spaces  \nnext",
    "\ttab first",
    "\x00\x07\x1b[2J escape",
    "\u2028 line separator \u0085 next line",
    "\ufeff bom",
    "emoji 👩‍👩‍👧 and ünïcödé",
    "{not: a mapping}",
    "[not, a, list]",
    "# not a comment",
    "key: value",
]


def dataset_of(row: EvaluationRow, tmp_path: Path, cli: Cli) -> Path:
    """The samples file ``aeval dataset from latest --failures`` writes of a run of ``row``."""
    store = tmp_path / "runs.sqlite"

    async def save() -> None:
        async with RunStore(store) as runs:
            await runs.save(EvaluationReport([row]), "r")

    anyio.run(save)
    path = tmp_path / "failed.yaml"
    result = cli("dataset", "from", "latest", "--failures", "--output", path, "--store", store)
    assert result.returncode == 0, result.stderr
    return path


@pytest.mark.parametrize("text", NASTY)
def test_any_text_round_trips_through_the_loader(text: str, tmp_path: Path, cli: Cli) -> None:
    sample = EvaluationSample("s", {"q": text}, text, metadata={"note": text})
    row = EvaluationRow.from_result(sample, "judge", text, EvaluationResult.from_boolean(False))
    (loaded,) = Samples.load_sync(dataset_of(row, tmp_path, cli))
    assert list(loaded.parameters.values) == [text]
    assert loaded.expected_output == text
    assert loaded.metadata["note"] == text
    assert loaded.metadata["failed_output"] == text


def test_a_lone_surrogate_is_written_escaped(tmp_path: Path, cli: Cli) -> None:
    sample = EvaluationSample("s", ["cut \ud83e"])
    row = EvaluationRow.from_result(sample, "judge", "x", EvaluationResult.from_boolean(False))
    (loaded,) = Samples.load_sync(dataset_of(row, tmp_path, cli))
    assert list(loaded.parameters.values) == ["cut \\ud83e"]


def test_a_directory_is_not_a_file(stored: tuple[Path, str], tmp_path: Path, cli: Cli) -> None:
    store, _ = stored
    result = cli("dataset", "from", "latest", "--failures", "--output", tmp_path, "--store", store)
    assert result.returncode == 2
    assert "is a directory: give a file" in result.stderr
