from __future__ import annotations

import importlib.metadata

import pytest

from aeval.formatters import _registry


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> _registry._Registry:
    """A fresh formatter registry (built-ins only) for the test, so registrations do not leak."""
    fresh = _registry._default_registry()
    monkeypatch.setattr(_registry, "_REGISTRY", fresh)
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: [])
    return fresh
