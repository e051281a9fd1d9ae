"""Writing a file whole or not at all: a temporary file beside it, then a rename.

A full disk or a crash mid-write leaves the previous version of the file whole (a report of
yesterday's run is not replaced by an empty file), and a reader never sees half a file.
"""

from __future__ import annotations

import os
from contextlib import suppress
from os import PathLike

from .._exceptions import ReportWriteError

__all__ = ["write_atomic"]


def write_atomic(path: str | PathLike[str], data: bytes | str) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file in its folder.

    The temporary file is created with the permissions a new file gets (the umask applies),
    flushed to disk, then renamed over ``path``; on any error it is removed.

    Raises:
        ReportWriteError: The file cannot be written (its message names ``path``); the
            previous file at ``path``, if any, is unchanged.
    """
    if isinstance(data, str):
        # a lone surrogate (an output cut inside a character) is written as a \udXXX escape
        data = data.encode("utf-8", "backslashreplace")
    target = os.fspath(path)
    folder, name = os.path.split(target)
    temporary = os.path.join(folder, f".{name}.{os.urandom(4).hex()}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, target)
        except BaseException:
            with suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as exc:
        raise ReportWriteError(target, exc) from exc
