"""Functions and strategies the Ray tests send to the workers (importable there by name)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import anyio
import anyio.lowlevel

import aeval
from aeval import EvaluationResult, EvaluationSample, Parameters


async def echo(params: Parameters) -> str:
    """The first parameter."""
    await anyio.lowlevel.checkpoint()
    return str(params[0])


def die_once(params: Parameters) -> str:
    """Kill this worker's process on sample "die", the first time only (a marker file)."""
    name, marker = str(params[0]), Path(str(params[1]))
    if name == "die" and not marker.exists():
        marker.touch()
        os._exit(1)
    return name


async def wait_for_file(params: Parameters) -> str:
    """Answer "fast ..." at once; never answer the others (in flight when the run stops)."""
    text = str(params[0])
    if text.startswith("fast"):
        return text
    await anyio.Event().wait()
    raise AssertionError("unreachable")


def equals(sample: EvaluationSample, output: object) -> EvaluationResult:
    """Whether the output is the expected one."""
    return EvaluationResult.from_boolean(output == sample.expected_output)


class Locked:
    """A strategy holding a lock: it cannot be pickled."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def evaluate(self, sample: EvaluationSample, output: object) -> EvaluationResult:
        return EvaluationResult.from_boolean(True)


@aeval.tool
def get_weather(city: str) -> str:
    """A tool that must never run live in the Ray test (it serves fixtures)."""
    raise AssertionError(f"get_weather({city!r}) was called live")


async def weather_agent(params: Parameters) -> str:
    """Ask for the weather of the first parameter, through the tool."""
    return get_weather(str(params[0]))


async def chat(conversation: aeval.Conversation) -> str:
    """A conversation target: counts its turns in the state; a ``boom`` message raises."""
    if conversation.last == "boom":
        raise RuntimeError("boom")
    conversation.state["turns"] = conversation.state.get("turns", 0) + 1
    return f"{conversation.id} heard {conversation.last} ({conversation.state['turns']})"
