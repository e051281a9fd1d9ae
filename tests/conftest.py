from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator

import pytest

from aeval._plugins import PluginRegistry
from aeval.formatters import ReportFormatter, _registry


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[PluginRegistry[ReportFormatter]]:
    """The formatter registry with the built-ins only, restored after the test.

    Entry points load on first use as usual; none is declared unless the test monkeypatches
    ``importlib.metadata.entry_points``.
    """
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: [])
    with _registry._REGISTRY.isolated(entry_points=True) as fresh:
        yield fresh
