"""``aeval view``: the local web application over the run store."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .._exceptions import MissingExtraError
from .._store import PICKS
from ._arguments import count, port
from ._exits import EXIT_INTERRUPTED, EXIT_OK, error
from ._history import UsageError, read_store_path
from ._parser import ELSEWHERE

__all__ = ["add_view_command", "view_command"]


def add_view_command(commands: Any) -> None:
    """Add ``aeval view`` to the command's subparsers."""
    view = commands.add_parser(
        "view",
        help=ELSEWHERE["view"],
        description="Serve a local web application over the run store: the runs, each run's "
        "rows with filters, search and traces, a name's history, the comparison of two runs, "
        "and review mode (label rows pass/fail with a note, by keyboard or mouse). It prints "
        "its address; Ctrl-C stops it.",
    )
    view.add_argument("--store", type=Path, metavar="PATH", help="the run store to serve")
    view.add_argument("--port", type=port, default=8765, help="the port (8765; 0: a free one)")
    view.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to bind (127.0.0.1; another one exposes the store to the network)",
    )
    view.add_argument(
        "--pick", choices=PICKS, default="all", help="the rows the review queue shows (all)"
    )
    view.add_argument(
        "--sample", type=count, metavar="N", help="review a random sample of N picked rows"
    )
    view.add_argument("--seed", type=int, default=0, help="the sample's seed (0)")


def view_command(args: argparse.Namespace) -> int:
    """Run ``aeval view`` until interrupted.

    Raises:
        UsageError: No run store where it is looked for.
    """
    path = read_store_path(args.store)
    if not path.is_file():
        raise UsageError(
            f"{path}: no run store there: `aeval run CONFIG` records each run in it; give "
            "another with --store PATH or AEVAL_STORE"
        )
    try:
        from .._view import serve
    except MissingExtraError as exc:
        return error(str(exc))
    try:
        serve(
            path, host=args.host, port=args.port, pick=args.pick, sample=args.sample, seed=args.seed
        )
    except OSError as exc:
        return error(str(exc.strerror or exc))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return EXIT_OK
