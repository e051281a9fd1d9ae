"""The registries skip ``importlib.metadata`` only when no distribution can declare their group,
and an installed plugin is found as before."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from _cli import ROOT, write_config

from aeval._util._plugins import may_declare

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


def _declared(group: str) -> bool:
    return bool(importlib.metadata.entry_points(group=group))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of distributions, alone on ``sys.path``."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.setattr(sys, "path", [str(folder), str(tmp_path / "missing")])
    return folder


def test_a_group_no_distribution_names_is_skipped_and_one_that_does_is_read(site: Path) -> None:
    _distribution(site, "other", b"[console_scripts]\nother = other:main\n")
    _distribution(site, "no_entry_points", None)
    assert not may_declare(GROUP)
    assert not _declared(GROUP)
    _distribution(site, "plugin", b"[aeval.formatters]\ncsv = plugin:CsvFormatter\n")
    assert may_declare(GROUP)
    assert _declared(GROUP)
    assert not may_declare("aeval.loaders")
    assert not _declared("aeval.loaders")


def test_an_egg_info_folder_is_read_too(site: Path) -> None:
    info = site / "legacy.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text("Metadata-Version: 1.0\nName: legacy\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[aeval.formatters]\ncsv = legacy:CsvFormatter\n")
    assert may_declare(GROUP)
    assert _declared(GROUP)


@pytest.mark.parametrize("layout", ["zip", "egg", "undecodable"])
def test_what_it_cannot_read_as_importlib_metadata_would_is_a_maybe(
    site: Path, layout: str
) -> None:
    if layout == "zip":
        archive = site.parent / "bundle.zip"
        with zipfile.ZipFile(archive, "w") as bundle:
            bundle.writestr("z-1.0.dist-info/entry_points.txt", "[aeval.formatters]\n")
        sys.path.append(str(archive))
    elif layout == "egg":
        egg = site.parent / "old-1.0.egg"
        (egg / "EGG-INFO").mkdir(parents=True)
        sys.path.append(str(egg))
    elif layout == "undecodable":
        _distribution(site, "broken", b"[console_scripts]\nx = \xff\xfe:main\n")
        with pytest.raises(UnicodeDecodeError):
            _declared(GROUP)  # importlib.metadata refuses it: so must the registry
    assert may_declare(GROUP)


def test_another_finder_of_distributions_is_a_maybe(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Finder:
        @staticmethod
        def find_distributions(*args: object, **kwargs: object) -> list[object]:
            return []

    assert not may_declare(GROUP)
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
    assert may_declare(GROUP)


PROBE = """
import json, sys
from aeval._cli._main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "metadata": "importlib.metadata" in sys.modules}))
"""


def _run(project: Path, *paths: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "run", "aeval.yaml", "--quiet", "--no-store"],
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
