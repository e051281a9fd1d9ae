"""The ``aeval`` command imports what its subcommand needs, and ``aeval --help`` lists all."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _cli import ROOT, Cli, cli, project, unmeasured, write_config

__all__ = ["cli", "project"]

COMMANDS = (
    "run",
    "rescore",
    "merge",
    "report",
    "compare",
    "calibrate",
    "dataset",
    "runs",
    "history",
    "view",
    "schema",
)

PROBE = """
import json, sys
from aeval._cli._main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def figures_after(*args: str, cwd: Path, probe: str = PROBE) -> dict[str, Any]:
    """What ``probe`` prints last (as JSON) in a fresh process after running ``aeval ARGS``."""
    done = subprocess.run(
        [sys.executable, "-c", probe, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env=unmeasured({"PYTHONPATH": os.pathsep.join([str(ROOT), str(cwd)])}),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def modules_after(*args: str, cwd: Path) -> set[str]:
    """The modules a fresh process holds after running ``aeval ARGS``."""
    figures = figures_after(*args, cwd=cwd)
    assert figures["code"] == 0, figures
    return set(figures["modules"])


JSON_RUN = (
    "samples: samples.yaml\ntarget: cli_targets:echo\nstrategies: [{name: not_blank}]\n"
    "output: {dir: out, formats: [json]}\n"
)
"""A run of a Python target with one text check and a JSON report."""


def quiet_json_run(project: Path) -> set[str]:
    """The modules a fresh ``aeval run --quiet --no-store`` of :data:`JSON_RUN` loaded."""
    write_config(project, JSON_RUN)
    return modules_after("run", "aeval.yaml", "--quiet", "--no-store", cwd=project)


def test_every_subcommand_is_listed_whichever_is_run(cli: Cli) -> None:
    listed = cli("--help")
    assert listed.returncode == 0
    for command in COMMANDS:
        assert re.search(rf"^    {command}\b", listed.stdout, re.MULTILINE), command
    unknown = cli("nosuchcommand")
    assert unknown.returncode == 2
    assert "choose from " + ", ".join(f"'{c}'" for c in COMMANDS) in unknown.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_the_subcommand_run_is_declared_in_full(command: str, cli: Cli) -> None:
    helped = cli(command, "--help")
    assert helped.returncode == 0
    assert helped.stdout.startswith(f"usage: aeval {command} [-h]")
    assert "options:\n  -h, --help" in helped.stdout


def test_aeval_run_imports_no_other_subcommand(project: Path) -> None:
    modules = quiet_json_run(project)
    assert (project / "out" / "rows.jsonl").is_file()
    for module in ("aeval._cli._calibrate", "aeval._cli._dataset", "aeval._cli._view"):
        assert module not in modules
    # a Python target, no model, no store: neither httpx, the model clients nor the store
    for module in ("httpx", "aeval.models.openai", "tenacity", "aeval._store"):
        assert module not in modules
    # one text strategy: not the judges (their cache, sqlite3) nor the other strategies
    assert "aeval.strategies.text" in modules
    for module in ("aeval.strategies.judge", "aeval.strategies.rubrics", "sqlite3"):
        assert module not in modules


def test_aeval_run_of_a_json_report_loads_nothing_for_other_formats_or_errors(
    project: Path,
) -> None:
    """What a run does not need waits for its first use: XML for a JUnit report, the trace
    and transcript views for Markdown, difflib for a suggestion in an error message, hashlib
    for shards and page hashes, secrets for a temporary name, the rescoring of a run, the
    chat types of a simulated user."""
    modules = quiet_json_run(project)
    assert (project / "out" / "report.json").is_file()
    for module in (
        "xml.etree.ElementTree",
        "aeval.formatters._trace_view",
        "aeval.formatters._transcript_view",
        "difflib",
        "hashlib",
        "secrets",
        "aeval._engine._rescore",
        "aeval._model_types",
    ):
        assert module not in modules, module


def test_aeval_run_quiet_prints_its_verdict_without_rich(project: Path) -> None:
    modules = quiet_json_run(project)
    assert (project / "out" / "report.json").is_file()
    assert not {m for m in modules if m == "rich" or m.startswith("rich.")}
    assert "aeval.formatters._report_terminal" not in modules
    # the tables need it: a run that is not quiet prints them
    modules = modules_after("run", "aeval.yaml", "--no-store", cwd=project)
    assert {"rich.console", "aeval.formatters._report_terminal"} <= modules


def test_a_json_report_does_not_compile_the_html_pages_pattern(project: Path) -> None:
    write_config(project, JSON_RUN)
    probe = PROBE.replace(
        '"modules": sorted(sys.modules)',
        '"modules": sorted(sys.modules), "compiled": __import__('
        '"aeval.formatters._escape").formatters._escape.html_suspect.cache_info().currsize',
    )
    figures = figures_after("run", "aeval.yaml", "--quiet", "--no-store", cwd=project, probe=probe)
    assert (figures["code"], figures["compiled"]) == (0, 0)


@pytest.mark.parametrize("package", ["aeval.models", "aeval.strategies"])
def test_the_names_of_a_lazy_package_load_on_first_use(package: str) -> None:
    module = importlib.import_module(package)
    assert set(module.__all__) <= set(dir(module))
    lazy = module._LAZY_MODULES
    assert sorted(name for names in lazy.values() for name in names) == sorted(module.__all__)
    for where, names in lazy.items():
        defining = importlib.import_module(where, package)
        for name in names:
            assert getattr(module, name) is getattr(defining, name)
    with pytest.raises(AttributeError, match="no attribute 'Missing'"):
        _ = module.Missing


def test_the_rubrics_submodule_is_an_attribute_of_the_strategies() -> None:
    import aeval.strategies

    assert "rubrics" in dir(aeval.strategies)
    assert aeval.strategies.rubrics is importlib.import_module("aeval.strategies.rubrics")


def test_aeval_run_without_a_baseline_does_not_import_the_comparison(project: Path) -> None:
    modules = quiet_json_run(project)
    assert "aeval._cli._run_command" in modules
    assert not {m for m in modules if m == "aeval._compare" or m.startswith("aeval._compare.")}
    # a json report: the HTML page's code loads only when an HTML report is written
    assert "aeval.formatters.html" in modules
    assert "aeval.formatters._html_report" not in modules
