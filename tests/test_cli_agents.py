"""``aeval run`` with agent strategies by name and ``--tools``; ``aeval rescore``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from _cli import ROOT, Cli, cli, records_of, rows_of, write_config

from aeval import RunStore

__all__ = ["cli"]

TARGET = """\
import os

import aeval


@aeval.tool
def get_weather(city: str) -> str:
    return f"live weather of {city}"


def agent(city: str) -> str:
    if os.environ.get("AGENT_MUST_NOT_RUN"):
        raise AssertionError("the target was called")
    return get_weather(city)
"""

SAMPLES = """\
- name: mysore
  parameters: [Mysore]
  expected-tools: [get_weather]
  tools:
    get_weather:
      - arguments: {city: Mysore}
        result: fixture sunny
- name: ooty
  parameters: [Ooty]
  expected-tools: [get_weather, book_ticket]
  forbidden-tools: [get_weather]
  tools:
    get_weather:
      - arguments: {city: Ooty}
        result: fixture rain
"""

CONFIG = """\
samples: samples.yaml
target: agent_target:agent
{tools}strategies:
  - name: tool_called
    tool: get_weather
    max_calls: 1
  - name: tool_sequence
  - name: tool_policy
    deny: book_ticket
  - name: tool_arguments
    tool: get_weather
    expected: {{city: Mysore}}
  - name: budget
    max_tool_calls: 1
    label: one call
  - name: tool_policy
    label: forbidden
  - name: contains
    must_contain: fixture
output:
  dir: out
"""


@pytest.fixture
def agents(tmp_path: Path) -> Path:
    (tmp_path / "agent_target.py").write_text(TARGET)
    (tmp_path / "samples.yaml").write_text(SAMPLES)
    return tmp_path


def outcomes(path: Path) -> dict[tuple[str, str], str]:
    return {(row["name"], row["strategy"]): row["outcome"] for row in rows_of(path)}


def test_agent_strategies_by_name_with_fixtures(agents: Path, cli: Cli) -> None:
    config = write_config(agents, CONFIG.format(tools="tools: fixtures\n"))
    result = cli("run", config, cwd=agents)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = outcomes(agents / "out" / "rows.jsonl")
    assert rows == {
        ("mysore", "ToolCalledStrategy"): "passed",
        ("mysore", "ToolSequenceStrategy"): "passed",
        ("mysore", "ToolPolicyStrategy"): "passed",
        ("mysore", "ToolArgumentsStrategy"): "passed",
        ("mysore", "one call"): "passed",
        ("mysore", "forbidden"): "passed",
        ("mysore", "ContainsStrategy"): "passed",
        ("ooty", "ToolCalledStrategy"): "passed",
        ("ooty", "ToolSequenceStrategy"): "failed",
        ("ooty", "ToolPolicyStrategy"): "passed",
        ("ooty", "ToolArgumentsStrategy"): "failed",
        ("ooty", "one call"): "passed",
        ("ooty", "forbidden"): "failed",
        ("ooty", "ContainsStrategy"): "passed",
    }
    assert records_of(agents / "out" / "rows.jsonl")[0]["tools"] == "fixtures"


def test_the_tools_flag_overrides_the_config_and_replays_a_stored_run(
    agents: Path, cli: Cli
) -> None:
    config = write_config(agents, CONFIG.format(tools="tools: fixtures\n"))
    live = cli("run", config, "--tools", "live", cwd=agents)
    assert live.returncode == 0, live.stdout + live.stderr
    rows = rows_of(agents / "out" / "rows.jsonl")
    assert {row["output"] for row in rows} == {"live weather of Mysore", "live weather of Ooty"}
    assert "tools" not in records_of(agents / "out" / "rows.jsonl")[0]

    assert cli("run", config, cwd=agents).returncode == 0
    for ref in ("latest", "out/rows.jsonl"):
        replayed = cli(
            "run", config, "--tools", f"replay:{ref}", "--output", agents / "again", cwd=agents
        )
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        header, *rows = records_of(agents / "again" / "rows.jsonl")[:-1]
        assert {row["output"] for row in rows} == {"fixture sunny", "fixture rain"}
        assert header["tools"].startswith("replay:")


def test_bad_tools_are_usage_or_config_errors(agents: Path, cli: Cli) -> None:
    config = write_config(agents, CONFIG.format(tools=""))
    flag = cli("run", config, "--tools", "mocked", cwd=agents)
    assert flag.returncode == 2
    assert "live (call the tools), fixtures" in flag.stderr
    bad = write_config(agents, CONFIG.format(tools="tools: mock\n"), name="bad.yaml")
    result = cli("run", bad, cwd=agents)
    assert result.returncode == 2
    assert "bad.yaml:3" in result.stderr and "replay:REF" in result.stderr
    missing = cli("run", config, "--tools", "replay:nope/rows.jsonl", cwd=agents)
    assert missing.returncode == 2
    assert "replay source file nope/rows.jsonl does not exist" in missing.stderr


def test_an_agent_strategy_entry_with_a_wrong_option_names_it(agents: Path, cli: Cli) -> None:
    config = write_config(
        agents,
        CONFIG.format(tools="").replace("    max_calls: 1\n", "    max_calls: 1\n    times: 2\n"),
    )
    result = cli("run", config, cwd=agents)
    assert result.returncode == 2
    assert "strategies[0]" in result.stderr and "times" in result.stderr


RESCORE = """\
samples: samples.yaml
target: agent_target:agent
strategies:
  - name: tool_called
    tool: get_weather
  - name: contains
    must_contain: live
thresholds:
  min_score: 100
output:
  dir: rescored
"""


def test_rescore_applies_the_configs_strategies_without_calling_the_target(
    agents: Path, cli: Cli
) -> None:
    first = write_config(agents, CONFIG.format(tools=""))
    assert cli("run", first, cwd=agents).returncode == 0
    second = write_config(agents, RESCORE, name="rescore.yaml")
    result = cli(
        "rescore", "latest", "--config", second, cwd=agents, env={"AGENT_MUST_NOT_RUN": "1"}
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].startswith("PASSED")
    rows = rows_of(agents / "rescored" / "rows.jsonl")
    assert [(row["name"], row["strategy"], row["outcome"]) for row in rows] == [
        ("mysore", "ToolCalledStrategy", "passed"),
        ("mysore", "ContainsStrategy", "passed"),
        ("ooty", "ToolCalledStrategy", "passed"),
        ("ooty", "ContainsStrategy", "passed"),
    ]
    assert (agents / "rescored" / "report.json").is_file()

    async def stored() -> list[Any]:
        async with RunStore(os.environ["AEVAL_STORE"]) as store:
            return await store.runs()

    first_run, rescored = anyio.run(stored)
    assert rescored.name == "rescore"
    assert f"rescore-of:{first_run.id}" in rescored.labels
    assert f"rescore of {first_run.id}" in result.stdout

    from_file = cli(
        "rescore",
        "out/rows.jsonl",
        "--config",
        second,
        "--no-store",
        cwd=agents,
        env={"AGENT_MUST_NOT_RUN": "1"},
    )
    assert from_file.returncode == 0, from_file.stdout + from_file.stderr
    missing = cli("rescore", "nope.jsonl", "--config", second, cwd=agents)
    assert missing.returncode == 2
    assert "nope.jsonl does not exist" in missing.stderr


def _documented_rescore() -> tuple[str, list[str]]:
    """The configuration and the command docs/cli.md shows for ``aeval rescore``."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text.split("## `aeval rescore REF --config CONFIG`", 1)[1].split("\n## ", 1)[0]
    config = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    command = section.split("```console\n$ aeval ", 1)[1].split("\n", 1)[0]
    return config, command.split()


BUDGET = """\
name: travel-budget
strategies:
  - name: budget
    max_tool_calls: 2
  - name: tool_called
    tool: get_weather
thresholds:
  min_score: 100
output:
  dir: rescored
"""


def test_the_documented_rescore_config_has_strategies_only() -> None:
    config, command = _documented_rescore()
    assert "strategies:" in config
    assert "samples:" not in config
    assert "target:" not in config
    assert command[:1] == ["rescore"] and "--config" in command
    # tests/test_docs_run.py runs the page's blocks, this command among them


def test_a_rescore_config_needs_only_strategies(agents: Path, cli: Cli) -> None:
    travel = write_config(agents, CONFIG.format(tools=""), name="travel.yaml")
    assert cli("run", travel, cwd=agents).returncode == 0
    write_config(agents, BUDGET, name="with-budget.yaml")

    result = cli(
        "rescore",
        "travel@latest",
        "--config",
        "with-budget.yaml",
        cwd=agents,
        env={"AGENT_MUST_NOT_RUN": "1"},
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].startswith("PASSED")
    rows = rows_of(agents / "rescored" / "rows.jsonl")
    assert [(row["name"], row["strategy"], row["outcome"]) for row in rows] == [
        ("mysore", "BudgetStrategy", "passed"),
        ("mysore", "ToolCalledStrategy", "passed"),
        ("ooty", "BudgetStrategy", "passed"),
        ("ooty", "ToolCalledStrategy", "passed"),
    ]

    async def names() -> list[str]:
        async with RunStore(os.environ["AEVAL_STORE"]) as store:
            return [run.name for run in await store.runs()]

    assert anyio.run(names) == ["travel", "travel-budget"]


def test_a_rescore_config_still_checks_what_it_gives(agents: Path, cli: Cli) -> None:
    config = write_config(agents, "strategies: [{name: budget, max_tool_calls: -1}]\n")

    result = cli("rescore", "latest", "--config", config, cwd=agents)

    assert result.returncode == 2
    assert "missing required key" not in result.stderr
    assert "max_tool_calls" in result.stderr
