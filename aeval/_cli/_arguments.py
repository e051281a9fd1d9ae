"""The argument types and the shared options of the ``aeval`` subcommands."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

__all__ = [
    "add_output_options",
    "add_store_options",
    "confidence",
    "count",
    "kappa_value",
    "number",
    "parsed",
    "percent",
    "points",
    "port",
    "ranged",
    "seconds",
]

_T = TypeVar("_T")


def number(
    convert: Callable[[str], _T],
    *,
    expected: str,
    valid: Callable[[_T], bool],
    within: str | None = None,
) -> Callable[[str], _T]:
    """An argument type: the text converted by ``convert`` (``int``, ``float``), if ``valid``.

    Args:
        convert: Makes the number of the text; a ``ValueError`` means it is none.
        expected: What the argument is, in ``expected {expected}, got 'TEXT'``, the error when
            ``convert`` fails.
        valid: Whether the number is in range.
        within: The same with its range, in the error when ``valid`` refuses the number
            (default: ``expected``).
    """
    refused = expected if within is None else within

    def parse(text: str) -> _T:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not valid(value):
            raise argparse.ArgumentTypeError(f"expected {refused}, got {text!r}")
        return value

    return parse


def ranged(what: str, low: float, high: float) -> Callable[[str], float]:
    """An argument type: a number from ``low`` to ``high`` (both included), ``what`` in the
    errors (``expected a kappa from -1 to 1, got '2'``)."""
    return number(
        float,
        expected=what,
        within=f"{what} from {low} to {high}",
        valid=lambda value: low <= value <= high,
    )


def parsed(parse: Callable[[str], _T]) -> Callable[[str], _T]:
    """An argument type whose value ``parse`` makes; its ``ValueError`` is the error shown."""

    def convert(text: str) -> _T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


seconds = number(
    float,
    expected="a number of seconds",
    within="a positive number of seconds",
    valid=lambda value: 0 < value < math.inf,
)
"""Seconds: a positive, finite number."""
percent = ranged("a percentage", 0, 100)
"""A percentage, from 0 to 100."""
points = ranged("percentage points", 0, 100)
"""Percentage points, from 0 to 100."""
kappa_value = ranged("a kappa", -1, 1)
"""A kappa, from -1 to 1."""
confidence = number(
    float,
    expected="a confidence such as 0.95",
    within="a confidence strictly between 0 and 1 (such as 0.95)",
    valid=lambda value: 0 < value < 1,
)
"""A confidence, strictly between 0 and 1."""
port = number(int, expected="a port from 0 to 65535", valid=lambda value: 0 <= value <= 65535)
"""A TCP port, from 0 (a free one) to 65535."""
count = number(int, expected="an integer >= 1", valid=lambda value: value >= 1)
"""A whole number from 1, without a most."""


def add_store_options(
    parser: argparse.ArgumentParser,
    *,
    run: str,
    name: str,
    store: str,
    labels: bool = True,
) -> None:
    """The options that record ``run`` (``"the run"``, ``"the merged run"``) in the run store.

    ``--name`` (its help ``name``), ``--label`` (repeatable, unless not ``labels``), and
    either ``--store PATH`` (its help ``store``) or ``--no-store``.
    """
    parser.add_argument("--name", help=name)
    if labels:
        parser.add_argument(
            "--label",
            action="append",
            dest="labels",
            metavar="LABEL",
            help=f"a label kept with {run} in the store (repeatable; added to the config's)",
        )
    recording = parser.add_mutually_exclusive_group()
    recording.add_argument("--store", type=Path, metavar="PATH", help=store)
    recording.add_argument(
        "--no-store", action="store_true", help=f"do not record {run} in the run store"
    )


def add_output_options(parser: argparse.ArgumentParser, *, formats: bool = True) -> None:
    """``--output DIR`` and, with ``formats``, ``--format`` (repeatable): where the reports of
    a run are written, and in which formats."""
    parser.add_argument("--output", type=Path, metavar="DIR", help="the output directory")
    if formats:
        parser.add_argument(
            "--format",
            action="append",
            dest="formats",
            metavar="FORMAT",
            help="a report format (repeatable; replaces the configured formats)",
        )
