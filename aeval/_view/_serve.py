"""Serving the viewer: a socket bound first (so a taken port is a clear error and port 0 a
free one), then uvicorn on it until Ctrl-C."""

from __future__ import annotations

import secrets
import socket
import sys
from pathlib import Path

from ._app import ViewSettings, create_app
from ._extra import view_extra_missing

try:
    import uvicorn
except ImportError as exc:  # pragma: no cover - the extra is installed in development
    raise view_extra_missing("uvicorn, which is not installed") from exc

__all__ = ["bind", "serve", "server_for"]


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (port 0: a free one).

    Raises:
        OSError: The address cannot be bound (the message says which and why).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise OSError(
            exc.errno, f"cannot listen on {host}:{port} ({exc.strerror}): pass another --port"
        ) from None
    sock.set_inheritable(True)
    return sock


def server_for(
    sock: socket.socket,
    store: Path,
    *,
    pick: str = "all",
    sample: int | None = None,
    seed: int = 0,
    token: str | None = None,
) -> tuple[uvicorn.Server, ViewSettings]:
    """The uvicorn server of the viewer over ``store`` on ``sock``, and its settings (the
    token is a new random one unless given)."""
    host, port = sock.getsockname()[:2]
    settings = ViewSettings(
        store=store,
        host=host,
        port=port,
        token=token or secrets.token_urlsafe(32),
        pick=pick,
        sample=sample,
        seed=seed,
    )
    config = uvicorn.Config(
        create_app(settings), log_level="warning", access_log=False, lifespan="on"
    )
    return uvicorn.Server(config), settings


def serve(
    store: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    pick: str = "all",
    sample: int | None = None,
    seed: int = 0,
) -> None:
    """Serve the viewer over ``store`` on ``host``:``port`` until interrupted, printing its
    address first.

    Raises:
        OSError: The address cannot be bound.
    """
    sock = bind(host, port)
    server, settings = server_for(sock, store, pick=pick, sample=sample, seed=seed)
    sys.stdout.write(f"aeval view: serving {store} at {settings.origin}/ (Ctrl-C to stop)\n")
    sys.stdout.flush()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
