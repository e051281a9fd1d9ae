"""``aeval run --shard I/N`` and ``aeval merge``, as a CI matrix runs them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from _cli import Cli, cli, project, records_of, rows_of, write_config

from aeval import Shard

__all__ = ["cli", "project"]

SAMPLES = 30

CONFIG = """\
samples: {samples}
target: cli_targets:echo
strategies:
  - name: exact_match
  - name: not_blank
thresholds:
  min_score: {min_score}
  tag_min_scores: {{smoke: 100}}
output:
  formats: [markdown, json, junit]
"""


def write_samples(directory: Path, kind: str) -> str:
    items = [
        {
            "name": f"q{i}",
            "parameters": [f"a{i}"],
            "expected-output": f"a{i}" if i % 5 else "other",
            "tags": ["smoke"] if i % 5 else ["edge"],
        }
        for i in range(SAMPLES)
    ]
    if kind == "jsonl":
        (directory / "data.jsonl").write_bytes(b"".join(orjson.dumps(i) + b"\n" for i in items))
        return "data.jsonl"
    (directory / "data.json").write_bytes(orjson.dumps(items))
    return "data.json"


def configure(directory: Path, kind: str, min_score: int) -> Path:
    return write_config(
        directory, CONFIG.format(samples=write_samples(directory, kind), min_score=min_score)
    )


def comparable(path: Path) -> list[dict[str, Any]]:
    rows = rows_of(path)
    for row in rows:
        row.pop("duration")
        row.pop("strategy_duration")
    return sorted(rows, key=lambda r: (r["index"], r["repeat"], r["position"]))


def run_shards(cli: Cli, config: Path, out: Path, count: int, *skip: int) -> None:
    for index in range(1, count + 1):
        if index in skip:
            continue
        done = cli("run", config, "--shard", f"{index}/{count}", "--output", out / f"shard-{index}")
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"DONE: shard {index}/{count}" in done.stdout
        assert "the thresholds are checked by `aeval merge`" in done.stdout


@pytest.mark.parametrize("kind", ["json", "jsonl"])
def test_shards_merge_into_the_rows_and_verdict_of_one_run(
    project: Path, cli: Cli, kind: str
) -> None:
    config = configure(project, kind, 70)
    whole = cli("run", config, "--output", project / "whole", "--quiet")
    assert whole.returncode == 0, whole.stderr
    run_shards(cli, config, project / "shards", 3)
    header = records_of(project / "shards" / "shard-2" / "rows.jsonl")[0]
    assert header["shard"] == "2/3" and header["dataset_samples"] == SAMPLES
    held = [r["name"] for r in rows_of(project / "shards" / "shard-2" / "rows.jsonl")]
    assert held and all(Shard(2, 3).holds(name) for name in held)
    assert header["samples_expected"] == len(set(held))

    merged = cli("merge", project / "shards", "--config", config, "--output", project / "merged")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "PASSED: score 90.00% >= 70.00%" in merged.stdout
    assert comparable(project / "merged" / "rows.jsonl") == comparable(
        project / "whole" / "rows.jsonl"
    )
    report = json.loads((project / "merged" / "report.json").read_text())
    assert report["complete"] is True and report["samplesExpected"] == SAMPLES
    assert report["globalScore"] == 90.0
    assert (project / "merged" / "report.xml").is_file()
    assert (project / "merged" / "report.md").is_file()


def test_merge_gates_with_the_thresholds_and_exit_codes_of_run(project: Path, cli: Cli) -> None:
    config = configure(project, "json", 95)
    run_shards(cli, config, project / "shards", 2)
    files = sorted((project / "shards").rglob("rows.jsonl"))
    failed = cli("merge", *files, "--config", config, "--output", project / "m1", "--quiet")
    assert failed.returncode == 1
    assert failed.stdout.strip() == "FAILED: score 90.00% < 95.00%"
    flags = cli("merge", *files, "--min-score", "85", "--output", project / "m2", "--quiet")
    assert flags.returncode == 0
    assert flags.stdout.strip() == "PASSED: score 90.00% >= 85.00%"
    none = cli("merge", *files, "--output", project / "m3", "--format", "html", "--quiet")
    assert none.returncode == 0 and "DONE: no threshold configured" in none.stdout
    assert (project / "m3" / "report.html").is_file()


def test_a_missing_shard_gives_a_partial_report_naming_it(project: Path, cli: Cli) -> None:
    config = configure(project, "json", 0)
    run_shards(cli, config, project / "shards", 4, 3)
    done = cli("merge", project / "shards", "--config", config, "--output", project / "merged")
    assert done.returncode == 3
    assert "shard 3/4 missing" in done.stdout
    assert "PARTIAL" in done.stdout and "no threshold was checked" in done.stdout
    report = json.loads((project / "merged" / "report.json").read_text())
    assert report["complete"] is False and report["samplesExpected"] == SAMPLES
    assert any("shard 3/4 missing" in w for w in report["run"]["warnings"])
    assert "PARTIAL RUN" in (project / "merged" / "report.md").read_text()


def test_merge_refuses_duplicates_other_configs_and_bad_inputs(project: Path, cli: Cli) -> None:
    config = configure(project, "json", 0)
    run_shards(cli, config, project / "shards", 2)
    one = project / "shards" / "shard-1" / "rows.jsonl"
    shutil.copytree(project / "shards" / "shard-1", project / "copy")
    twice = cli("merge", project / "shards", project / "copy", "--output", project / "m")
    assert twice.returncode == 2
    assert "shard 1/2 appears twice" in twice.stderr

    other = write_config(
        project, CONFIG.format(samples="data.json", min_score=1), name="other.yaml"
    )
    cli("run", other, "--shard", "2/2", "--output", project / "other", "--quiet")
    mixed = cli("merge", one, project / "other", "--output", project / "m")
    assert mixed.returncode == 2 and "different configurations" in mixed.stderr

    wrong = cli("merge", project / "shards", "--config", other, "--output", project / "m")
    assert wrong.returncode == 2
    assert "--config: the shards were run with another configuration" in wrong.stderr

    split = cli("run", config, "--shard", "1/3", "--output", project / "three", "--quiet")
    assert split.returncode == 0
    splits = cli("merge", one, project / "three", "--output", project / "m")
    assert splits.returncode == 2 and "different splits" in splits.stderr

    assert cli("merge", project / "nowhere").returncode == 2
    into_input = cli("merge", project / "shards", "--output", project / "shards" / "shard-1")
    assert into_input.returncode == 2 and "is one of the inputs" in into_input.stderr
    bad = cli("run", config, "--shard", "5/4")
    assert bad.returncode == 2 and "1 <= I <= N" in bad.stderr


def test_a_shard_without_samples_runs_nothing_and_still_merges(project: Path, cli: Cli) -> None:
    config = write_config(project, CONFIG.format(samples="samples.yaml", min_score=0))
    count = 8
    names = ("hello", "world", "mismatch")
    empty = next(i for i in range(1, count + 1) if not any(Shard(i, count).holds(n) for n in names))
    done = cli("run", config, "--shard", f"{empty}/{count}", "--output", project / "e", "--quiet")
    assert done.returncode == 0
    assert rows_of(project / "e" / "rows.jsonl") == []


def test_shard_runs_stay_out_of_history_and_merge_records_the_run(project: Path, cli: Cli) -> None:
    store = project / "runs.sqlite"
    config = configure(project, "json", 70)
    for index in (1, 2):
        done = cli(
            "run",
            config,
            "--shard",
            f"{index}/2",
            "--output",
            project / f"s{index}",
            "--store",
            store,
            "--quiet",
        )
        assert done.returncode == 0, done.stderr
    listed = cli("runs", "--store", store, "--format", "json")
    assert json.loads(listed.stdout) == []
    shards = json.loads(cli("runs", "--store", store, "--format", "json", "--shards").stdout)
    assert [run["shard"] for run in shards] == ["1/2", "2/2"]
    alone = cli("history", "aeval", "--store", store)
    assert alone.returncode == 2
    assert "holds only the runs of single shards of 'aeval' (2)" in alone.stderr
    latest = cli("compare", "latest", "latest", "--store", store)
    assert latest.returncode == 2
    assert "holds only 2 run(s) of single shards (aeval run --shard)" in latest.stderr

    merged = cli(
        "merge",
        project / "s1",
        project / "s2",
        "--store",
        store,
        "--output",
        project / "m",
        "--label",
        "nightly",
    )
    assert merged.returncode == 0, merged.stdout + merged.stderr
    [run] = json.loads(cli("runs", "--store", store, "--format", "json").stdout)
    assert run["id"] in merged.stdout
    assert (run["name"], run["shard"], run["complete"]) == ("aeval", None, True)
    assert run["samples"] == SAMPLES and run["score"] == 90.0 and run["labels"] == ["nightly"]
    history = json.loads(cli("history", "aeval", "--store", store, "--format", "json").stdout)
    assert [point["run_id"] for point in history["points"]] == [run["id"]]
    with_shards = cli("history", "aeval", "--store", store, "--format", "json", "--shards")
    assert len(json.loads(with_shards.stdout)["points"]) == 3

    named = cli(
        "merge",
        project / "s1",
        project / "s2",
        "--config",
        config,
        "--store",
        store,
        "--output",
        project / "m2",
        "--quiet",
    )
    assert named.returncode == 0, named.stderr
    assert len(json.loads(cli("runs", "aeval", "--store", store, "--format", "json").stdout)) == 2

    off = cli(
        "merge",
        project / "s1",
        project / "s2",
        "--no-store",
        "--output",
        project / "m3",
        "--quiet",
    )
    assert off.returncode == 0
    assert len(json.loads(cli("runs", "--store", store, "--format", "json").stdout)) == 2

    elsewhere = project / "other.sqlite"
    unnamed = cli(
        "merge",
        project / "s1",
        project / "s2",
        "--store",
        elsewhere,
        "--output",
        project / "m4",
        "--quiet",
    )
    assert unnamed.returncode == 0
    assert "the merged run was not recorded in" in unnamed.stderr
    assert "give --name NAME or --config CONFIG" in unnamed.stderr
