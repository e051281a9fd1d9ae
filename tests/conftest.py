from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator
from pathlib import Path

import pytest

# The plugin is loaded here rather than by its entry point (``-p no:aeval`` in pyproject.toml):
# an entry point is imported before pytest-cov starts measuring, so every line that runs when
# ``aeval`` is imported would count as never run.
pytest_plugins = ("aeval.pytest_plugin",)

CHECKOUT_STORE = Path(__file__).resolve().parent.parent / ".aeval"


def _store_state() -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in CHECKOUT_STORE.glob("runs.sqlite*")}


@pytest.fixture(scope="session", autouse=True)
def no_runs_recorded_in_the_checkout() -> Iterator[None]:
    """The suite never records runs in the checkout's own store (``.aeval/runs.sqlite``),
    which ``aeval compare latest~1 latest`` run there would then read."""
    before = _store_state()
    yield
    assert _store_state() == before, (
        f"a test recorded runs in {CHECKOUT_STORE}: run aeval in a tmp_path (cwd=...), or "
        "through the cli fixture, which points AEVAL_STORE at a store of the test's own"
    )


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def registry(aeval_formatters: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The formatter registry with the built-ins only (the plugin's ``aeval_formatters``),
    restored after the test, and no entry point declared on this machine: none is, unless
    the test monkeypatches ``importlib.metadata.entry_points``."""
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: [])
