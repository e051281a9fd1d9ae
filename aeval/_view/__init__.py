"""``aeval view``: a local web application over the run store, to read runs and review rows.

Needs the ``view`` extra (Starlette and uvicorn); nothing here is imported by ``import aeval``.
"""

from __future__ import annotations

from ._app import ViewSettings, create_app
from ._serve import bind, serve, server_for

__all__ = ["ViewSettings", "bind", "create_app", "serve", "server_for"]
