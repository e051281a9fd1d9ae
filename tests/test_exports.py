from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest
from _cli import unmeasured

import aeval

PUBLIC_MODULES = [
    "aeval",
    "aeval.strategies",
    "aeval.formatters",
    "aeval.models",
    "aeval.online",
    "aeval.ray",
    "aeval.testing",
    "aeval.trace",
]


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_sorted_and_matches_the_public_names(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported), f"{name}.__all__ is not sorted"
    public = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_")
        and not inspect.ismodule(value)
        and attr not in {"annotations", "TYPE_CHECKING"}
    }
    public |= set(getattr(module, "_LAZY", {}))  # loaded on first use
    assert set(exported) == public


def test_import_aeval_leaves_the_heavy_modules_for_first_use() -> None:
    code = (
        "import sys, aeval; heavy = ['aeval._compare', 'aeval._store', 'aeval.strategies', "
        "'asyncio', 'httpx', 'rich', 'sqlite3', 'tenacity']; "
        "print([m for m in heavy if m in sys.modules]); aeval.RunStore; aeval.compare; "
        "print([m for m in heavy if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=unmeasured()
    )
    assert done.stdout.splitlines() == [
        "[]",
        "['aeval._compare', 'aeval._store', 'sqlite3']",
    ]


def test_exported_members_claim_the_public_module() -> None:
    for name in aeval.__all__:
        member = getattr(aeval, name)
        module = getattr(member, "__module__", "aeval")
        assert module == "aeval", f"aeval.{name}.__module__ is {module}"


def test_design_names_are_importable() -> None:
    from aeval import (  # noqa: F401
        Evaluation,
        EvaluationReport,
        EvaluationResult,
        EvaluationSample,
        Samples,
        Scorer,
        assert_that,
        evaluate_sync,
    )
    from aeval.strategies import ContainsStrategy, ExactMatchStrategy, RegexStrategy  # noqa: F401
