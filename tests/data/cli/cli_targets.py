"""Functions under test for the CLI tests (copied next to each test's configuration)."""

from __future__ import annotations

import anyio

from aeval import Parameters


async def echo(params: Parameters) -> str:
    """Answer with the first parameter."""
    return str(params[0])


def shout(params: Parameters) -> str:
    """A sync target: the first parameter in capitals."""
    return str(params[0]).upper()


async def stall(params: Parameters) -> str:
    """Answer samples named "fast ..." at once; never answer the others."""
    text = str(params[0])
    if text.startswith("fast"):
        return text
    await anyio.Event().wait()
    raise AssertionError("unreachable")
