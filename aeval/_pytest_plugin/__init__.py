"""The parts of aeval's pytest plugin; the public names live in :mod:`aeval.pytest_plugin`."""

from __future__ import annotations

__all__: list[str] = []
