"""The registries skip ``importlib.metadata`` only when no distribution can declare their group,
and an installed plugin is found as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from _cli import ROOT, write_config

GROUP = "aeval.formatters"

PLUGIN = """
class CsvFormatter:
    name = "csv"
    extension = ".csv"

    def format(self, report, **options):
        return f"samples\\n{report.sample_count}\\n"
"""


def _distribution(site: Path, name: str, entry_points: bytes | None) -> Path:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    if entry_points is not None:
        (info / "entry_points.txt").write_bytes(entry_points)
    return info


PROBE = """
import json, runpy, sys
if sys.argv[1] == "finder":
    class Finder:
        @staticmethod
        def find_spec(*args, **kwargs):
            return None
        @staticmethod
        def find_distributions(*args, **kwargs):
            return []
    sys.meta_path.append(Finder())
sys.argv[:2] = ["aeval"]
try:
    runpy.run_module("aeval", run_name="__main__")
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "metadata": "importlib.metadata" in sys.modules}))
"""


def _run(project: Path, *paths: Path, finder: bool = False) -> dict[str, object]:
    """``aeval run`` in a process whose ``sys.path`` has ``paths`` (and another finder of
    distributions on its meta path): its exit code and whether it read entry points."""
    first = "finder" if finder else "-"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, first, "run", "aeval.yaml", "--quiet", "--no-store"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(project), *map(str, paths)]),
        },
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose run writes a JSON report, and a CSV one when a plugin gives it."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "samples.jsonl").write_text('{"name": "s0", "parameters": ["a"]}\n')
    (folder / "targets.py").write_text("def echo(text: str) -> str:\n    return text\n")
    _config(folder, csv=False)
    return folder


def _config(project: Path, *, csv: bool) -> None:
    write_config(
        project,
        "samples: samples.jsonl\ntarget: targets:echo\nstrategies: [{name: not_blank}]\n"
        f"output: {{dir: out, formats: [json{', csv' if csv else ''}]}}\n",
    )


def test_distributions_that_name_no_aeval_group_are_not_read(project: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    _distribution(site, "other", b"[console_scripts]\nother = other:main\n")
    _distribution(site, "no_entry_points", None)
    _distribution(site, "loaders_elsewhere", b"[other.loaders]\nx = y:z\n")
    assert _run(project, site) == {"code": 0, "metadata": False}


def test_a_plugin_in_an_egg_info_folder_is_used_too(project: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = site / "legacy.egg-info"
    info.mkdir(parents=True)
    (info / "PKG-INFO").write_text("Metadata-Version: 1.0\nName: legacy\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[aeval.formatters]\ncsv = legacy:CsvFormatter\n")
    (site / "legacy.py").write_text(PLUGIN)
    _config(project, csv=True)
    assert _run(project, site) == {"code": 0, "metadata": True}
    assert (project / "out" / "report.csv").read_text() == "samples\n1\n"


@pytest.mark.parametrize("layout", ["zip", "egg", "finder"])
def test_what_cannot_be_read_as_importlib_metadata_would_is_read_by_it(
    project: Path, tmp_path: Path, layout: str
) -> None:
    if layout == "zip":
        archive = tmp_path / "bundle.zip"
        with zipfile.ZipFile(archive, "w") as bundle:
            bundle.writestr("z-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: z\n")
            bundle.writestr("z-1.0.dist-info/entry_points.txt", "[aeval.formatters]\n")
        assert _run(project, archive) == {"code": 0, "metadata": True}
    elif layout == "egg":
        egg = tmp_path / "old-1.0.egg"
        (egg / "EGG-INFO").mkdir(parents=True)
        (egg / "EGG-INFO" / "PKG-INFO").write_text("Metadata-Version: 1.0\nName: old\n")
        assert _run(project, egg) == {"code": 0, "metadata": True}
    else:
        assert _run(project, finder=True) == {"code": 0, "metadata": True}


def test_an_installed_plugin_formatter_is_used_by_aeval_run(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "samples.jsonl").write_text('{"name": "s0", "parameters": ["a"]}\n')
    (project / "targets.py").write_text("def echo(text: str) -> str:\n    return text\n")
    write_config(
        project,
        "samples: samples.jsonl\ntarget: targets:echo\nstrategies: [{name: not_blank}]\n"
        "output: {dir: out, formats: [json]}\n",
    )
    # no distribution declares a formatter or a loader: importlib.metadata is not imported
    assert _run(project) == {"code": 0, "metadata": False}
    site = tmp_path / "site"
    _distribution(site, "aeval_csv", b"[aeval.formatters]\ncsv = aeval_csv:CsvFormatter\n")
    (site / "aeval_csv.py").write_text(PLUGIN)
    write_config(
        project,
        "samples: samples.jsonl\ntarget: targets:echo\nstrategies: [{name: not_blank}]\n"
        "output: {dir: out, formats: [json, csv]}\n",
    )
    assert _run(project, site) == {"code": 0, "metadata": True}
    assert (project / "out" / "report.csv").read_text() == "samples\n1\n"
