"""Functions under test for the CLI tests (copied next to each test's configuration)."""

from __future__ import annotations

import asyncio
import threading

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


async def interrupt(params: Parameters) -> str:
    """Answer "hello"; raise KeyboardInterrupt on any other question."""
    if params[0] == "hello":
        return "hello"
    raise KeyboardInterrupt


def stuck(params: Parameters) -> str:
    """A sync target that never returns."""
    threading.Event().wait()
    raise AssertionError("unreachable")


RELEASE = threading.Event()


def stuck_until_released(params: Parameters) -> str:
    """A sync target that returns only once the test sets :data:`RELEASE`, after the run."""
    RELEASE.wait()
    return str(params[0])


_CALLS: dict[str, int] = {}


async def flaky(params: Parameters) -> str:
    """Right on every other call for "hello", always right for "world", never for "left"."""
    text = str(params[0])
    _CALLS[text] = _CALLS.get(text, 0) + 1
    if text == "hello" and _CALLS[text] % 2 == 0:
        return "goodbye"
    return text


class _Unprintable:
    def __str__(self) -> str:
        raise ValueError("no text")


async def hostile(params: Parameters) -> object:
    """Outputs that JSON, Markdown, XML and HTML cannot take as they are."""
    looped: list[object] = ["x"]
    looped.append(looped)
    return {
        "hello": "cut \ud83d",
        "world": {(1, 2): 2**70, "loop": looped},
        "left": _Unprintable(),
    }[str(params[0])]


def huge(params: Parameters) -> object:
    """An integer too long for ``str()`` (more than 4,300 digits), alone and nested."""
    number = 7 * 10**5000 + 1
    return number if params[0] == "hello" else {"n": [number], "k": {number: -number}}


async def cancels(params: Parameters) -> object:
    """Raises ``CancelledError`` for ``world`` by awaiting a task something else cancelled."""
    if params[0] != "world":
        return params[0]
    task = asyncio.get_running_loop().create_task(asyncio.sleep(3600, "never"))
    await asyncio.sleep(0)
    task.cancel()
    return await task


class Moderation:
    """A sync strategy that blocks for ever (a moderation API that never answers), after
    writing ``moderation-entered`` in the working directory."""

    def evaluate(self, sample: object, output: object) -> object:
        with open("moderation-entered", "w", encoding="utf-8") as marker:
            marker.write("entered")
        threading.Event().wait()
        raise AssertionError("unreachable")
