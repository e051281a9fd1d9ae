"""``import aeval`` loads nothing its first call does not need (issue 25): checked by what a
fresh interpreter holds in ``sys.modules``, never by timing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from _cli import unmeasured

import aeval

HEAVY = ["rich", "yaml", "httpx", "jsonschema", "tenacity", "sqlite3", "asyncio", "anyio"]


def _modules_after(code: str) -> list[str]:
    script = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=unmeasured()
    )
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_import_aeval_loads_no_heavy_dependency_and_only_its_front_door() -> None:
    modules = _modules_after("import aeval")

    assert [name for name in HEAVY if name in modules] == []
    assert [name for name in modules if name.startswith("aeval")] == [
        "aeval",
        "aeval._exceptions",
        "aeval._util",
        "aeval._util._lazy",
        "aeval._util._publish",
        "aeval._version",
    ]


def test_every_public_name_still_resolves_and_loads_its_module_on_first_use() -> None:
    modules = _modules_after(
        "import aeval\nassert aeval.Scorer.__module__ == 'aeval'\n"
        "assert aeval.trace.ToolCall is not None"
    )

    assert "aeval._engine._scorer" in modules
    assert "aeval.trace" in modules
    assert [name for name in ("rich", "httpx", "jsonschema", "tenacity") if name in modules] == []
    for name in aeval.__all__:
        assert getattr(aeval, name) is not None


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match=r"^module 'aeval' has no attribute 'NoSuchName'$"):
        aeval.NoSuchName  # noqa: B018
