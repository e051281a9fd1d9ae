"""Writing reports to files, off the event loop."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from .._exceptions import FormatError
from .._util._files import write_atomic
from ._base import ReportFormatter
from ._registry import formatter_for_path, get_formatter, supported_formats

if TYPE_CHECKING:
    from .._reporting._report import EvaluationReport

__all__ = ["save_report", "save_report_as"]


async def save_report(
    report: EvaluationReport,
    directory: Path,
    *,
    formats: Iterable[str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> list[Path]:
    """Write ``report<extension>`` into ``directory`` for each format.

    Every format name and option is checked, and every file rendered, before anything is
    written: a bad name or option leaves the directory untouched. Rendering runs in a worker
    thread.

    Args:
        report: The report to write.
        directory: Created, with its parents, when missing.
        formats: Format names (case-insensitive); every registered format when ``None``.
        options: Formatter options; each formatter receives those it declares in its
            ``options`` attribute (a formatter that declares none receives them all).

    Returns:
        The paths written, in the order of ``formats`` (sorted by name when ``None``).

    Raises:
        FormatError: An unknown format, or an option no selected formatter accepts.
    """
    if isinstance(formats, str):
        formats = [formats]
    names = supported_formats() if formats is None else tuple(formats)
    selected: dict[str, ReportFormatter] = {}
    for name in names:
        formatter = get_formatter(name)
        selected.setdefault(formatter.name.lower(), formatter)
    per_formatter = _route_options(list(selected.values()), dict(options or {}))
    rendered: list[tuple[Path, str | bytes]] = []
    for formatter, formatter_options in zip(selected.values(), per_formatter, strict=True):
        content = await anyio.to_thread.run_sync(
            partial(formatter.format, report, **formatter_options)
        )
        rendered.append((directory / f"report{formatter.extension}", content))
    await anyio.to_thread.run_sync(partial(directory.mkdir, parents=True, exist_ok=True))
    for path, content in rendered:
        await _write(path, content)
    return [path for path, _ in rendered]


async def save_report_as(
    report: EvaluationReport,
    path: Path,
    format: str | None = None,
    *,
    options: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``report`` to one file, creating its parent directories.

    Args:
        report: The report to write.
        path: The file to write (overwritten if it exists).
        format: The format name; inferred from the extension when ``None`` (``.md`` and
            ``.markdown`` are Markdown, ``.json`` is JSON, and any registered formatter's
            extension is recognised).
        options: Passed to the formatter.

    Returns:
        ``path``.

    Raises:
        FormatError: An unknown format, an extension no formatter writes, or a bad option.
    """
    formatter = formatter_for_path(path) if format is None else get_formatter(format)
    content = await anyio.to_thread.run_sync(partial(formatter.format, report, **(options or {})))
    await anyio.to_thread.run_sync(partial(path.parent.mkdir, parents=True, exist_ok=True))
    await _write(path, content)
    return path


def _route_options(
    formatters: list[ReportFormatter], options: dict[str, Any]
) -> list[dict[str, Any]]:
    declared = [getattr(f, "options", None) for f in formatters]
    if formatters and all(d is not None for d in declared):
        accepted = set().union(*(set(d) for d in declared if d is not None))
        for key in options:
            if key not in accepted:
                names = ", ".join(f.name for f in formatters)
                raise FormatError(
                    f"Unknown report option {key!r} for the formats {names}; accepted "
                    f"options: {', '.join(sorted(accepted)) or 'none'}"
                )
    return [
        dict(options) if d is None else {k: v for k, v in options.items() if k in d}
        for d in declared
    ]


async def _write(path: Path, content: str | bytes) -> None:
    await anyio.to_thread.run_sync(partial(write_atomic, path, content))
