"""Text on the terminal: what users and models wrote reaches rich as plain text, and tables
keep every number whole.

A model answer may hold ``[/INST]`` (rich markup would raise on it) or an escape sequence
(OSC 8 makes a link, OSC 0 sets the window title, CSI 2J clears the screen): every sample
name, output, explanation, run name or path goes through :func:`plain` (or
:func:`printable` where the text is not printed by rich), which never parses markup and
shows C0 and C1 control characters as ``\\xNN`` escapes. Newlines are kept; tabs are kept
too (rich expands them to spaces, and a terminal moves the cursor, nothing more).

Output that is not a terminal (a pipe, a CI log) is laid out at the width its tables need,
unless ``COLUMNS`` says otherwise: rich would give it 80 columns and cut numbers
(``100.0…``). On a terminal, or with ``COLUMNS``, the columns of text fold and the columns
of numbers stay whole, the table growing past the width if it must.

rich is imported when a console is made: :func:`print_plain_line` prints a line without one
(``aeval run --quiet`` prints its verdict so).
"""

from __future__ import annotations

import os
import sys
from typing import IO, TYPE_CHECKING

from .._display import printable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

__all__ = ["WIDE", "plain", "print_line", "print_plain_line", "print_table", "terminal_console"]

WIDE = 10_000
"""The width of a console that is not a terminal: each table takes the width it needs."""


def plain(text: str, *, style: str = "") -> Text:
    """``text`` as a rich :class:`~rich.text.Text` that prints as written (see
    :func:`printable`): never read as markup, emoji codes or escape sequences."""
    from rich.text import Text

    return Text(printable(text), style=style)


def print_line(console: Console, text: str) -> None:
    """Print ``text`` as one plain line (see :func:`plain`), never wrapped by rich."""
    console.print(plain(text), soft_wrap=True)


def print_plain_line(text: str) -> None:
    """:func:`print_line` on standard output, the same characters, without a console.

    A line with a tab goes through rich (which expands tabs to its columns); any other is
    ``printable(text)`` and a newline, as rich prints it, on a terminal or not, and flushed.
    """
    if "\t" in text:
        print_line(terminal_console(), text)
        return
    line = printable(text) + "\n"
    try:
        sys.stdout.write(line)
    except UnicodeEncodeError:  # rich's message says how to choose the encoding
        print_line(terminal_console(), text)
        return
    sys.stdout.flush()


def _columns_set() -> bool:
    return os.environ.get("COLUMNS", "").strip().isdigit()


def terminal_console(file: IO[str] | None = None) -> Console:
    """A console for aeval's own output on ``file`` (default: standard output).

    On a terminal, or with ``COLUMNS`` set, it is as wide as they say; otherwise it is
    :data:`WIDE` so that a pipe or a log gets each table at the width its cells need.
    """
    from rich.console import Console

    console = Console(highlight=False, file=file)
    if not console.is_terminal and not _columns_set():
        console = Console(highlight=False, file=file, width=WIDE)
    return console


def _pin_numbers(console: Console, table: Table) -> None:
    """Give each ``no_wrap`` column (numbers) the width of its widest cell as its minimum."""
    from rich.measure import Measurement

    options = console.options.update(width=WIDE)
    for column in table.columns:
        if not column.no_wrap:
            continue
        cells = [*column.cells, *([column.header] if table.show_header else [])]
        widest = max((Measurement.get(console, options, cell).maximum for cell in cells), default=0)
        column.min_width = max(column.min_width or 0, widest)


def print_table(console: Console, table: Table, *, whole_rows: bool = False) -> None:
    """Print ``table`` with every number whole.

    The columns marked ``no_wrap`` hold numbers: they keep the width of their widest cell.
    Text columns fold to fit the console's width; when even the numbers and the longest
    word of each text column cannot fit, the table is printed at the width its cells need
    (a terminal then wraps each row's line rather than rich cutting the table to pieces).

    Args:
        console: Where to print.
        table: The table.
        whole_rows: Print at the width the cells need, so that each row stays on one line
            whatever the console's width (``aeval runs`` and ``aeval history``).
    """
    _pin_numbers(console, table)
    measured = console.measure(table, options=console.options.update(width=WIDE))
    width = console.width
    needed = measured.maximum if whole_rows or measured.minimum > width else measured.minimum
    if needed <= width:
        console.print(table)
        return
    given = getattr(console, "_width", None)  # None: rich measures the terminal each time
    console.width = needed
    try:
        console.print(table)
    finally:
        console._width = given
