"""Every ``pip install`` of aeval that the docs and the messages show installs this project.

The distribution is ``aeval-engine`` (``aeval`` on the public index is another project);
the import name and the command stay ``aeval``. An install line names ``aeval-engine`` or a
checkout (``.``, ``-e .``), and only extras that pyproject.toml defines.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
DISTRIBUTION = "aeval-engine"
SOURCES = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    ROOT / "benchmarks" / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "aeval").rglob("*.py")),
    *sorted((ROOT / "examples").rglob("*.py")),
    *sorted((ROOT / "benchmarks").glob("*.py")),
]
TOKEN = re.compile(r"'([^'\n]*)'|\"([^\"\n]*)\"|([^\s'\"`]+)")
REQUIREMENT = re.compile(r"^([A-Za-z0-9._-]+)(?:\[([A-Za-z0-9_, -]*)\])?(?:[<>=!~;@].*)?$")
OPERATORS = {"&&", "||", ";", "|", "or", "then"}


def requirements(command: str) -> list[str]:
    """The requirements of the ``pip install`` that starts ``command`` (options skipped)."""
    found = []
    position = 0
    while match := TOKEN.match(command, position):
        quoted = match[1] if match[1] is not None else match[2]
        bare = match[3]
        if bare is not None:
            if bare in OPERATORS or bare[0] in "#(":
                break
            cleaned = bare if bare == "." else bare.rstrip("),.;:")
            if not cleaned.startswith("-"):
                if not REQUIREMENT.match(cleaned):
                    break
                found.append(cleaned)
            if cleaned != bare:
                break
        elif quoted is not None:
            found.append(quoted)
        position = match.end()
        if position < len(command) and not command[position].isspace():
            break
        while position < len(command) and command[position] in " \t":
            position += 1
    return found


def install_lines() -> list[tuple[str, str]]:
    """Each (where, requirement) of a ``pip install`` of aeval in the docs and the sources."""
    lines = []
    for source in SOURCES:
        text = source.read_text(encoding="utf-8")
        for match in re.finditer(r"pip install\s+", text):
            where = f"{source.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}"
            end = text.find("\n", match.end())
            for requirement in requirements(text[match.end() : end if end >= 0 else None]):
                name = REQUIREMENT.match(requirement)
                if name and (name[1] == "." or name[1].lower().startswith("aeval")):
                    lines.append((where, requirement))
    return lines


LINES = install_lines()


def test_the_install_lines_are_found() -> None:
    names = {requirement.split("[")[0] for _, requirement in LINES}
    assert names == {".", DISTRIBUTION}, LINES
    extras = {e.strip() for _, r in LINES if "[" in r for e in r.split("[")[1][:-1].split(",")}
    assert {"local", "ray", "otel", "examples"} <= extras


@pytest.mark.parametrize(("where", "requirement"), LINES, ids=[where for where, _ in LINES])
def test_each_install_line_names_this_distribution_and_its_extras(
    where: str, requirement: str
) -> None:
    match = REQUIREMENT.match(requirement)
    assert match, f"{where}: cannot read {requirement!r}"
    assert match[1] in {".", DISTRIBUTION}, (
        f"{where}: pip install {requirement} installs another project; this one is "
        f"{DISTRIBUTION!r} on the index (or '.' from a checkout)"
    )
    unknown = {e.strip() for e in (match[2] or "").split(",") if e.strip()} - set(
        PROJECT["optional-dependencies"]
    )
    assert not unknown, f"{where}: pyproject.toml defines no extra {sorted(unknown)}"


def test_the_distribution_is_named_so() -> None:
    assert PROJECT["name"] == DISTRIBUTION
    assert PROJECT["scripts"]["aeval"] == "aeval._cli:main"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("-e . && aeval run examples/aeval.yaml", ["."]),
        ("-e '.[dev,local,ray]' && python -m pytest", [".[dev,local,ray]"]),
        ("'aeval-engine[ray]'      # Ray is the only new dependency", ["aeval-engine[ray]"]),
        ("-U aeval), or give another path", ["aeval"]),
        ("'aeval[local]'. Or embed with an OpenAI-compatible", ["aeval[local]"]),
        ("'aeval[ray]' \"", ["aeval[ray]"]),
        ("aeval`", ["aeval"]),
        ("pydantic-evals==2.62.0`, and", ["pydantic-evals==2.62.0"]),
    ],
)
def test_the_reader_of_install_lines(command: str, expected: list[str]) -> None:
    assert requirements(command) == expected
