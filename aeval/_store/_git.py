"""Whether the git working tree has uncommitted changes (for the run store's dirty flag)."""

from __future__ import annotations

import os

__all__ = ["git_dirty", "git_dirty_async"]

_TIMEOUT = 10.0


def git_dirty(directory: str | os.PathLike[str] | None = None) -> bool | None:
    """Whether tracked files in ``directory``'s repository differ from the commit checked out.

    Runs ``git status --porcelain --untracked-files=no`` (untracked files do not make a tree
    dirty, as for ``git describe --dirty``). It blocks: call it off the event loop.

    Returns:
        ``True`` or ``False``; ``None`` when it cannot be told (no git, not a repository,
        git failed or took over 10 s).
    """
    import subprocess

    try:
        done = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=directory,
            capture_output=True,
            timeout=_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return bool(done.stdout.strip())


async def git_dirty_async(directory: str | os.PathLike[str] | None = None) -> bool | None:
    """:func:`git_dirty` in a worker thread."""
    import anyio.to_thread

    return await anyio.to_thread.run_sync(git_dirty, directory)
