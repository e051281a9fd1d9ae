"""The ``aeval`` command line (``aeval run``, ``aeval report``, ``aeval schema``)."""

from __future__ import annotations

from ._main import main

__all__ = ["main"]
